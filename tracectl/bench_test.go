package tracectl

import (
	"bytes"
	"io"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// loadBlocks returns t1's ingress blocks.
func loadBlocks(b testing.TB) []ingress.Block {
	img, pcData, _ := loadT1(b)
	src := ingress.NewPCSource(bytes.NewReader(pcData), "pcs", img, ingress.PCOptions{})
	var blks []ingress.Block
	for {
		blk, err := src.Next()
		if err == io.EOF {
			return blks
		}
		if err != nil {
			b.Fatal(err)
		}
		blks = append(blks, *blk)
	}
}

// BenchmarkEncoderComponent encodes t1 through the encoder component,
// funnel and SRAM sink; BenchmarkEncoderDirect with the N-Trace encoder
// alone, for the overhead of the component.
func BenchmarkEncoderComponent(b *testing.B) {
	blks := loadBlocks(b)
	img, _, _ := loadT1(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s, _ := NewSystem(1, img, 64<<10, nil)
		bb := bus{b, s}
		program(b, bb, 0xFFFFFFFF, false, -1)
		e := s.Encoders[0]
		for j := range blks {
			if err := e.Block(&blks[j]); err != nil {
				b.Fatal(err)
			}
		}
		bb.w(enc0, bb.r(enc0)&^2)
	}
}

func BenchmarkEncoderDirect(b *testing.B) {
	blks := loadBlocks(b)
	cfg := ntrace.Config{Mode: ntrace.HTM, ImplicitReturn: ntrace.ReturnFull, RepeatedHistory: true, XLEN: 64}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		enc, err := ntrace.NewEncoder(&out, cfg)
		if err != nil {
			b.Fatal(err)
		}
		for j := range blks {
			if err := enc.Block(&blks[j]); err != nil {
				b.Fatal(err)
			}
		}
		enc.Close()
	}
}

// BenchmarkEncoderConfigured encodes t1 through an encoder component
// programmed by Configure (the rvtrace run --trace path) writing to a
// buffer, for its overhead over BenchmarkEncoderDirect's encoder.
func BenchmarkEncoderConfigured(b *testing.B) {
	blks := loadBlocks(b)
	img, _, _ := loadT1(b)
	cfg := ntrace.Config{Mode: ntrace.HTM, ImplicitReturn: ntrace.ReturnFull, RepeatedHistory: true, XLEN: 64}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		e := NewEncoder(img, &out)
		if err := e.Configure(Settings{Format: FormatNTrace, NTrace: cfg}); err != nil {
			b.Fatal(err)
		}
		for j := range blks {
			if err := e.Block(&blks[j]); err != nil {
				b.Fatal(err)
			}
		}
		e.Close()
	}
}
