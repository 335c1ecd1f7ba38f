package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pbFields splits a protobuf message into (field number, varint value,
// bytes) triples, failing the test on malformed input; only varint and
// length-delimited fields are expected.
func pbFields(t *testing.T, b []byte, f func(num int, v uint64, data []byte)) {
	t.Helper()
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatal("malformed tag")
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				t.Fatal("malformed varint")
			}
			b = b[n:]
			f(int(tag>>3), v, nil)
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				t.Fatal("malformed length")
			}
			f(int(tag>>3), 0, b[n:n+int(l)])
			b = b[n+int(l):]
		default:
			t.Fatalf("wire type %d", tag&7)
		}
	}
}

// --perfetto and --chrome from one run: the Perfetto trace (packets of
// track events) has as many slices as the JSON has spans, and the
// tracks are per hart and privilege level.
func TestCLIRunPerfetto(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "pmu", "pmutest.elf")
	if _, err := os.Stat(elf); err != nil {
		t.Skipf("%s absent (scripts/build-pmu-tests.sh): %v", elf, err)
	}
	dir := t.TempDir()
	pf, js := filepath.Join(dir, "run.pftrace"), filepath.Join(dir, "run.json")
	if code, _, e := rv(t, "run", "--machine", "sbi", "--perfetto", pf, "--chrome", js, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	data, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	begins, ends := 0, 0
	var tracks []string
	pbFields(t, data, func(num int, _ uint64, pkt []byte) {
		if num != 1 {
			t.Fatalf("Trace field %d", num)
		}
		pbFields(t, pkt, func(num int, _ uint64, msg []byte) {
			switch num {
			case 11: // track_event
				pbFields(t, msg, func(num int, v uint64, _ []byte) {
					if num == 9 && v == 1 {
						begins++
					} else if num == 9 && v == 2 {
						ends++
					}
				})
			case 60: // track_descriptor
				pbFields(t, msg, func(num int, _ uint64, name []byte) {
					if num == 2 {
						tracks = append(tracks, string(name))
					}
				})
			}
		})
	})
	j, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	spans := bytes.Count(j, []byte(`"ph":"X"`))
	if begins != ends || begins != spans || spans == 0 {
		t.Errorf("Perfetto: %d slice begins, %d ends; Chrome JSON: %d spans", begins, ends, spans)
	}
	if len(tracks) == 0 || !strings.HasPrefix(tracks[0], "hart 0 (") {
		t.Errorf("tracks %q, want hart 0 with a privilege level", tracks)
	}
	t.Logf("tracks %q, %d slices", tracks, begins)
}
