// Package corpus locates the shared test corpus (../shared/corpus beside
// the repository root) for tests, and skips a test with a clear message
// when it is absent, so a user's clone without it still passes.
package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns the repository root (the directory holding go.mod), found
// by walking up from the working directory; "" when not found.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Dir returns the absolute path of the shared corpus directory
// (../shared/corpus from the repository root, or $RVTRACE_CORPUS), or ""
// when it is absent.
func Dir() string {
	if d := os.Getenv("RVTRACE_CORPUS"); d != "" {
		return d
	}
	root := Root()
	if root == "" {
		return ""
	}
	d := filepath.Join(root, "..", "shared", "corpus")
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return ""
	}
	return d
}

// Path returns the absolute path of rel inside the corpus, or skips the
// test when the corpus (or that file) is absent.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	d := Dir()
	if d == "" {
		tb.Skip("shared corpus not found at ../shared/corpus (set RVTRACE_CORPUS): skipping corpus test")
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("corpus file %s not found: skipping", p)
	}
	return p
}
