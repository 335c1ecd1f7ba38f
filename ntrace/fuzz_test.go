package ntrace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

func fuzzSeeds(f *testing.F) {
	f.Add(specExample)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x02, 0x06, 0x07, 0xFF, 0x0C, 0x04})
	if d := corpus.Dir(); d != "" {
		if nex, err := os.ReadFile(d + "/ntrace-refcode/t1/test-NEX.bin"); err == nil {
			f.Add(nex[:200])
			f.Add(nex)
		}
	}
}

// FuzzReader: any bytes parse without panic; every message read
// re-encodes and reads back to the same fields.
func FuzzReader(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range []WireConfig{{}, {SrcBits: 3, ExtendAddrMSB: true}} {
			r := NewReader(bytes.NewReader(data), cfg)
			var m Message
			for n := 0; n <= len(data); n++ {
				err := r.Next(&m)
				if err == io.EOF {
					break
				}
				var fe *FormatError
				if errors.As(err, &fe) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !m.TCode.Known() {
					continue
				}
				enc, err := AppendMessage(nil, &m, &cfg)
				if err != nil {
					t.Fatalf("%v does not re-encode: %v", &m, err)
				}
				var back Message
				if err := NewReader(bytes.NewReader(enc), cfg).Next(&back); err != nil || back.V != m.V || back.Has != m.Has {
					t.Fatalf("%v re-encoded as % x reads back as %v (%v)", &m, enc, &back, err)
				}
			}
		}
	})
}

// FuzzDecoder: any bytes decode against a real program without panic or
// hang; problems become gaps.
func FuzzDecoder(f *testing.F) {
	fuzzSeeds(f)
	img := image.NewSet()
	if d := corpus.Dir(); d != "" {
		if err := img.AddELF(d + "/ntrace-refcode/t1/test.elf"); err != nil {
			f.Fatal(err)
		}
	} else {
		// a small program of its own: a loop with a call and a return
		img.AddBytes("loop", 0x1000, []byte{
			0x13, 0x05, 0x15, 0x00, // addi a0,a0,1
			0xef, 0x00, 0x80, 0x00, // jal ra,0x100c
			0xe3, 0x1c, 0xb5, 0xfe, // bne a0,a1,0x1000
			0x67, 0x80, 0x00, 0x00, // ret
		})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range []DecoderConfig{{MaxInstructions: 1 << 20}, {AllJumps: true, MaxInstructions: 1 << 20,
			Wire: WireConfig{ExtendAddrMSB: true, SrcBits: 2}}} {
			d := mustDecoder(t, img, &flow.Counter{}, cfg)
			err := d.Decode(bytes.NewReader(data))
			var de *decode.Error
			if err != nil && !errors.Is(err, ErrTooManyInstructions) && !errors.As(err, &de) {
				t.Fatal(err)
			}
		}
	})
}
