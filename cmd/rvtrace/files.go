package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// The files a command reads and writes. Every input is noted when it is
// opened (or, for files another package opens by name such as ELF images,
// with noteInput), every output is created through createOutput, so that
//
//   - an output that is also an input (the same file, by os.SameFile or
//     by cleaned path) is refused before it is truncated;
//   - a write or close error on any output, standard output included, is
//     reported naming the output and makes the exit code non-zero, even
//     when the code that wrote it dropped the error (mainWith calls
//     finishFiles after the command).

// fileSet is the state of one command invocation.
type fileSet struct {
	mu      sync.Mutex
	inputs  []fileRef
	outputs []*outFile
	stdout  *outFile // standard output, wrapped by mainWith
}

type fileRef struct {
	name  string // as given
	clean string // absolute, cleaned
	info  os.FileInfo
}

var files fileSet

func newFileRef(name string, info os.FileInfo) fileRef {
	clean, err := filepath.Abs(name)
	if err != nil {
		clean = filepath.Clean(name)
	}
	return fileRef{name: name, clean: clean, info: info}
}

// same reports whether a and b are one file. Devices and pipes
// (/dev/null, /dev/full, /dev/stdout) are never the same: writing one
// does not destroy what another reads.
func (a fileRef) same(b fileRef) bool {
	for _, i := range []os.FileInfo{a.info, b.info} {
		if i != nil && !i.Mode().IsRegular() {
			return false
		}
	}
	if a.clean == b.clean {
		return true
	}
	return a.info != nil && b.info != nil && os.SameFile(a.info, b.info)
}

// noteInput records that the command reads the file name. It fails when
// the file is already one of the command's outputs.
func noteInput(name string) error {
	if name == "" || name == "-" {
		return nil
	}
	info, _ := os.Stat(name)
	ref := newFileRef(name, info)
	files.mu.Lock()
	defer files.mu.Unlock()
	for _, o := range files.outputs {
		if o.ref.same(ref) {
			return fmt.Errorf("%s: is both an input and an output (%s)", name, o.name)
		}
	}
	files.inputs = append(files.inputs, ref)
	return nil
}

// openInput opens name for reading ("-" is standard input).
func openInput(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	if err := noteInput(name); err != nil {
		return nil, err
	}
	return os.Open(name)
}

// outFile is an output file (or standard output). It remembers the first
// write or close error, named after the output.
type outFile struct {
	name   string
	ref    fileRef
	w      io.Writer
	f      *os.File // nil for standard output
	err    error
	closed bool
}

// OutputError is a failed write or close of an output.
type OutputError struct {
	Name string // the output as named on the command line, or "standard output"
	Err  error
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("writing %s: %v", e.Name, e.Err)
}

func (e *OutputError) Unwrap() error { return e.Err }

func (o *outFile) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err != nil {
		o.err = &OutputError{o.name, err}
		return n, o.err
	}
	return n, nil
}

// Close closes the file (standard output stays open) and returns the
// first error the output had.
func (o *outFile) Close() error {
	if o.closed {
		return o.err
	}
	o.closed = true
	if o.f != nil {
		if err := o.f.Close(); err != nil && o.err == nil {
			o.err = &OutputError{o.name, err}
		}
	}
	return o.err
}

// createOutput opens name for writing ("-" is standard output, which is
// not closed). It refuses a file that is also an input of the command or
// already one of its outputs.
func createOutput(name string) (io.WriteCloser, error) {
	if name == "-" {
		return nopWriteCloser{stdout}, nil
	}
	info, _ := os.Stat(name)
	ref := newFileRef(name, info)
	files.mu.Lock()
	defer files.mu.Unlock()
	for _, in := range files.inputs {
		if in.same(ref) {
			return nil, fmt.Errorf("%s: refusing to overwrite an input of this command (%s)", name, in.name)
		}
	}
	for _, o := range files.outputs {
		if o.ref.same(ref) {
			return nil, fmt.Errorf("%s: given twice as an output", name)
		}
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err == nil {
		ref.info = info
	}
	o := &outFile{name: name, ref: ref, w: f, f: f}
	files.outputs = append(files.outputs, o)
	return o, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// startFiles resets the file state for a command writing its standard
// output to out, and returns the writer the command should use for it.
func startFiles(out io.Writer) io.Writer {
	files.mu.Lock()
	defer files.mu.Unlock()
	files.inputs, files.outputs = nil, nil
	files.stdout = &outFile{name: "standard output", w: out, closed: true}
	return files.stdout
}

// finishFiles closes the outputs the command left open and returns the
// errors of every output (write or close), standard output included, that
// are not already err.
func finishFiles(err error) []error {
	files.mu.Lock()
	defer files.mu.Unlock()
	var errs []error
	all := files.outputs
	if files.stdout != nil {
		all = append(all, files.stdout)
	}
	for _, o := range all {
		cerr := o.Close()
		if cerr == nil {
			continue
		}
		var oe *OutputError
		if err != nil && errors.As(err, &oe) && oe == cerr {
			continue
		}
		errs = append(errs, cerr)
	}
	return errs
}
