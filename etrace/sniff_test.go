package etrace

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// TestSniffFramings: t1's trace encoded in each framing rvtrace writes
// (raw; UTDD without source ID, with 1, 3 and 10-bit source IDs, with the
// type field, with 1 to 8-byte timestamps, and with both) is read by
// SniffFramings in that framing first (the source ID field the narrowest
// that holds the source's ID), a framing that reads it without an error;
// a type field over a source ID also reads as a wider source ID without
// type field, which SniffFramings gives first (a tie that a trial decode
// cannot break: the source IDs differ, not the packets). Its first 400
// bytes, its bytes from inside a frame (where the framing reads the
// rest), and the trace with a byte
// flipped every 1024 give the same guesses first. Random bytes give none.
func TestSniffFramings(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{trapEvery: 997})
	for i := range blocks {
		blocks[i].Time = uint64(i) * 37 // (timestamps of zero bytes would read as null packets out of step)
	}
	type framing struct {
		encap         Encap
		bits          int
		id            uint32
		typ           bool
		ts            int
		alsoWiderBits int // a source ID field that reads it too (type field)
	}
	cases := []framing{
		{encap: EncapRaw},
		{encap: EncapUTDD},
		{encap: EncapUTDD, bits: 1, id: 1},
		{encap: EncapUTDD, bits: 3, id: 5},
		{encap: EncapUTDD, bits: 10, id: 600},
		{encap: EncapUTDD, bits: 0, typ: true, alsoWiderBits: 2},
		{encap: EncapUTDD, bits: 3, id: 6, typ: true, alsoWiderBits: 5},
	}
	for ts := 1; ts <= 8; ts++ {
		cases = append(cases, framing{encap: EncapUTDD, ts: ts}, framing{encap: EncapUTDD, bits: 2, id: 2, ts: ts})
	}
	for _, f := range cases {
		name := fmt.Sprintf("%v/bits=%d/id=%d/type=%v/ts=%d", f.encap, f.bits, f.id, f.typ, f.ts)
		cfg := DefaultConfig()
		cfg.Encap, cfg.SrcBits, cfg.SrcID, cfg.TypeField, cfg.TimestampBytes = f.encap, f.bits, f.id, f.typ, f.ts
		cfg.ResyncPeriod = 32 // (a sync after the middle of a frame)
		data, _ := encode(t, cfg, img, blocks)
		same := func(c *Config) bool {
			if f.alsoWiderBits > 0 {
				// the wider source ID first, then the type field
				return c.Encap == cfg.Encap && c.SrcBits == f.alsoWiderBits && !c.TypeField && c.TimestampBytes == cfg.TimestampBytes && c.Data == nil
			}
			return c.Encap == cfg.Encap && c.SrcBits == cfg.SrcBits && c.TypeField == cfg.TypeField && c.TimestampBytes == cfg.TimestampBytes && c.Data == nil
		}
		bad := append([]byte(nil), data...)
		for i := 700; i < len(bad); i += 1024 {
			bad[i] ^= 0x10
		}
		// a cut inside a frame after byte 100, from which the framing
		// reads the rest (the scanner may stay out of step for long
		// when it starts inside a frame, as the decoder would)
		cut := 0
		sc := NewScanner(bytes.NewReader(data), &cfg)
		for sc.Scan() && cut == 0 {
			if o := sc.Frame().Offset; o > 100 && len(sc.Frame().Payload) > 1 {
				if r := Sniff(data[o+2:], &cfg); r.Score() > 0.95 {
					cut = int(o) + 2
				}
			}
		}
		if cut == 0 {
			t.Fatalf("%s: no cut inside a frame reads on", name)
		}
		for _, in := range []struct {
			what  string
			bytes []byte
		}{{"whole", data}, {"first 400 bytes", data[:400]}, {"from inside a frame", data[cut:]}, {"damaged", bad}} {
			g := SniffFramings(in.bytes, &cfg)
			if len(g) == 0 || !same(&g[0].Config) {
				t.Errorf("%s, %s: %d guesses, the first %+v", name, in.what, len(g), g)
				continue
			}
			if in.what == "whole" && (g[0].Result.Errors != 0 || g[0].Result.Good != g[0].Result.Bytes) {
				t.Errorf("%s: read with errors: %+v", name, g[0].Result)
			}
			if in.what == "whole" && f.bits > 0 && !f.typ && (len(g[0].Sources) != 1 || g[0].Sources[0] != f.id) {
				t.Errorf("%s: sources %v", name, g[0].Sources)
			}
			typed := false
			for _, o := range g[1:] {
				typed = typed || o.Config.SrcBits == f.bits && o.Config.TypeField && o.Result == g[0].Result && slices.Equal(o.Sources, []uint32{f.id})
			}
			if in.what == "whole" && f.alsoWiderBits > 0 && !typed {
				t.Errorf("%s: no guess of the type field and source ID %d: %+v", name, f.id, g)
			}
		}
	}
	noise := make([]byte, 4096)
	x := uint32(1)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	cfg := DefaultConfig()
	if g := SniffFramings(noise, &cfg); len(g) != 0 {
		t.Errorf("random bytes: %d guesses, the first %+v", len(g), g[0])
	}
}

// BenchmarkSniffFramings: the framing search of a capture's start (t1 in
// UTDD with a 1-bit source ID, SniffBytes of it), which a decode without
// framing options pays once when the start does not read as raw.
func BenchmarkSniffFramings(b *testing.B) {
	img, pcs := loadT1(b)
	blocks := genBlocks(b, img, pcs, genOpts{trapEvery: 997})
	cfg := DefaultConfig()
	cfg.Encap, cfg.SrcBits, cfg.ResyncPeriod = EncapUTDD, 1, 32
	data, _ := encode(b, cfg, img, blocks)
	data = data[:min(len(data), SniffBytes)]
	base := DefaultConfig()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if g := SniffFramings(data, &base); len(g) == 0 {
			b.Fatal("no framing")
		}
	}
}
