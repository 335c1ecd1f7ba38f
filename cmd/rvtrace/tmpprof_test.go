package main

import (
	"os"
	"strings"
	"testing"
)

func TestTmpProf(t *testing.T) {
	args := strings.Fields(os.Getenv("PROF_ARGS"))
	if len(args) == 0 {
		t.Skip()
	}
	for i := 0; i < 12; i++ {
		code, _, e := rv(t, args...)
		if code != 0 {
			t.Fatal(e)
		}
	}
}
