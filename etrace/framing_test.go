package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
)

// framingCase is a corruption of the two-hart mt-matmul funnel trace of
// TestMultiHartCorrupt (2-bit source IDs) and what it must give.
type framingCase struct {
	name  string
	flips []flip
	// was: the bytes the trace has at the flips (the test fails, naming
	// them, if the encoder's output changed)
	was []byte
	// gaps: for each source, the byte offsets one of which its first gap
	// must name (nil: its flow must be the truth, or a gap anywhere)
	gaps map[uint32][]int64
}

// TestFramingLengthDamage: damaged UTDD length bytes in a funnel of two
// sources (issue 9). Byte 3992 is the header 0x02 of a one-byte format 1
// packet of hart 1 (a map of 31 taken branches in a spin loop); flipping
// bit 1 makes it a null byte, and the scanner read the source ID byte
// 0x01 as the header of a packet with a source ID and no payload, skipped
// it, and found the next header in step again: the hart's flow lost 31
// instructions with no gap, and re-encoding it does not give those bytes
// (it has no null byte and no empty frame). Byte 2082 is the header 0x02
// of such a packet too: bit 4 makes its length 18, so the frame of
// hart 1 swallows the next frames, one of hart 0 among them; the packet
// is malformed, and hart 0 lost a frame with no gap. The first case is
// the brief's: with byte 568 (a source ID byte given bits beyond its
// width) and byte 4168 (a payload byte of hart 0) flipped too.
func TestFramingLengthDamage(t *testing.T) {
	cfg := multiConfig(2)
	r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
	data := r.log.all.Bytes()
	for _, c := range []framingCase{
		{name: "brief", flips: []flip{{568, 2}, {3992, 1}, {4168, 3}}, was: []byte{0x01, 0x02, 0xfa},
			gaps: map[uint32][]int64{0: {567}, 1: {567}}},
		{name: "header to null byte", flips: []flip{{3992, 1}}, was: []byte{0x02},
			gaps: map[uint32][]int64{0: {3993}, 1: {3993}}},
		{name: "length grown over the other source's frame", flips: []flip{{2082, 4}}, was: []byte{0x02},
			gaps: map[uint32][]int64{0: {2082}, 1: {2082}}},
	} {
		bad := append([]byte(nil), data...)
		for i, f := range c.flips {
			if data[f.at] != c.was[i] {
				t.Fatalf("%s: byte %d is %#02x, not %#02x: the trace changed, pick the bytes anew", c.name, f.at, data[f.at], c.was[i])
			}
			bad[f.at] ^= 1 << f.bit
		}
		s, err := demux(t, cfg, r.img, bad)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for src := uint32(0); src < 2; src++ {
			is := s.srcs[src]
			name := fmt.Sprintf("%s, source %d", c.name, src)
			if is == nil {
				t.Errorf("%s: no event", name)
				continue
			}
			if why := sourceRule(t, cfg, r.img, r.truth[src], is, bad, src); why != "" {
				t.Errorf("%s: %s", name, why)
			}
			if len(is.gaps) == 0 {
				t.Errorf("%s: %d instructions of %d, no gap", name, len(is.pcs), len(r.truth[src]))
				continue
			}
			var de *decode.Error
			if !errors.As(is.gaps[0].err, &de) || !errors.Is(de, decode.ErrMalformed) {
				t.Errorf("%s: first gap %v, want a decode.ErrMalformed", name, is.gaps[0].err)
				continue
			}
			ok := false
			for _, off := range c.gaps[src] {
				ok = ok || de.Offset == off
			}
			if !ok {
				t.Errorf("%s: first gap at byte %d (%v), want one of %v", name, de.Offset, de, c.gaps[src])
			}
		}
		// The oracle of the campaign agrees.
		tr := &campaignTrace{name: c.name, cfg: cfg, img: r.img, data: data,
			truth: map[uint32][]uint64{0: r.truth[0], 1: r.truth[1]}, multi: true}
		if out, why := tr.check(t, bad); out != outGap {
			t.Errorf("%s: campaign outcome %d (%s), want a gap", c.name, out, why)
		}
	}
}

// TestContextPacketChecks: a context packet (format 3 subformat 2)
// restates the current privilege (the encoder reports a privilege change
// with a sync packet at the first instruction in the new one), and no
// packet states a reserved privilege (2 or 7). A deleted UTDD header
// turned a 31-branch map packet into a context packet of privilege 2,
// which the decoder took as a context event: the flow lost the branches
// with no gap (FuzzFraming/79cc9fc50bec4de5).
func TestContextPacketChecks(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	truth := pcs[1000:1300]
	pkts := packetsOfBlocks(t, cfg, genBlocks(t, img, truth, genOpts{}))
	if p := pkts[1]; !isF3(&p) || p.Privilege != 3 {
		t.Fatalf("packet 1 is %+v", p)
	}
	for _, c := range []struct {
		priv  uint8
		cause error // nil: no gap
	}{{3, nil}, {1, decode.ErrInconsistent}, {0, decode.ErrInconsistent}, {2, decode.ErrMalformed}} {
		ctx := Packet{Format: FormatSync, Subformat: SubContext, Privilege: c.priv}
		bad := append(append(append([]Packet(nil), pkts[:2]...), ctx), pkts[2:]...)
		data, offs := frame(t, cfg, bad)
		s, des := gapsOf(t, cfg, img, data)
		if c.cause == nil {
			if len(des) != 0 || !slicesEqual(s.pcs, truth) {
				t.Errorf("privilege %d: gaps %v, %d instructions", c.priv, des, len(s.pcs))
			}
			continue
		}
		if len(des) == 0 || !errors.Is(des[0], c.cause) || des[0].Offset != offs[2] || des[0].Index != 2 {
			t.Errorf("privilege %d: gaps %v, want %v at byte %d, packet 2", c.priv, des, c.cause, offs[2])
		}
	}
}

// TestUTDDHeaderChecks: the UTDD header and source ID fields the scanner
// checks. A frame with a source ID and no payload, a type field other
// than instruction trace, and a length shorter than the source ID field
// are framing errors at the frame's byte; the scanner goes on after the
// frame (or, for a length it cannot trust, after the header byte) and
// reads the next frame.
func TestUTDDHeaderChecks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Encap, cfg.SrcBits, cfg.SrcID, cfg.TypeField = EncapUTDD, 14, 5, true
	good := []byte{0x03, 0x05, 0x80, 0x01} // source 5, type 2, payload 01
	for _, c := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"no payload", []byte{0x02, 0x05, 0x80}, "no payload"},
		{"type 3", []byte{0x03, 0x05, 0xc0, 0x01}, "type field 3"},
		{"type 0", []byte{0x03, 0x05, 0x00, 0x01}, "type field 0"},
		{"length 1", []byte{0x01}, "shorter than its 2-byte source ID"},
	} {
		data := append(append(append([]byte(nil), good...), c.frame...), good...)
		sc := NewScanner(bytes.NewReader(data), &cfg)
		if !sc.Scan() || sc.Frame().Offset != 0 {
			t.Fatalf("%s: first frame: %v", c.name, sc.Err())
		}
		var fe *FramingError
		if sc.Scan() || !errors.As(sc.Err(), &fe) || fe.Offset != 4 || !strings.Contains(fe.Msg, c.want) {
			t.Errorf("%s: %v, want a framing error at byte 4 saying %q", c.name, sc.Err(), c.want)
			continue
		}
		next := int64(4 + len(c.frame))
		if !sc.Scan() || sc.Frame().Offset != next || sc.Frame().SrcID != 5 || !bytes.Equal(sc.Frame().Payload, []byte{1}) || sc.Scan() || sc.Err() != nil {
			t.Errorf("%s: after the error: frame at %d (%v), want the good frame at %d and the end", c.name, sc.Frame().Offset, sc.Err(), next)
		}
	}
}

// TestUTDDExtendCleared: the encoder timestamps every UTDD frame of a
// trace with timestamps, so a header whose extend bit is clear is a
// framing error at its byte, and the scanner goes on with the next frame.
// Read without its timestamp, the frame took its first timestamp byte for
// its payload and left its payload to be read as headers: a one-byte
// branch count of 16 (0x40, read as a null packet of flow 2) became one
// of 0 (the timestamp byte 0x00), and the flow lost 98 instructions with
// no gap (FuzzFraming/extendbit: that header is byte 15 there).
func TestUTDDExtendCleared(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := framingConfig(2) // UTDD, 6-bit source ID 5, type field, 2-byte timestamp
	truth := pcs[1000:1600]
	data, _ := encode(t, cfg, nil, genBlocks(t, img, truth, genOpts{}))
	offs := frameOffsets(t, cfg, data)
	tr := &campaignTrace{cfg: cfg, img: img, data: data, truth: map[uint32][]uint64{0: truth}}
	for i, off := range offs {
		bad := bytes.Clone(data)
		if bad[off]&0x80 == 0 {
			t.Fatalf("frame %d at byte %d: header %#02x without extend", i, off, bad[off])
		}
		bad[off] &^= 0x80
		sc := NewScanner(bytes.NewReader(bad), &cfg)
		for k := 0; k < i; k++ {
			sc.Scan()
		}
		var fe *FramingError
		if sc.Scan() || !errors.As(sc.Err(), &fe) || fe.Offset != off || !strings.Contains(fe.Msg, "extend clear") {
			t.Errorf("frame %d: %v, want a framing error at byte %d", i, sc.Err(), off)
			continue
		}
		if i+1 < len(offs) && (!sc.Scan() || sc.Frame().Offset != offs[i+1]) {
			t.Errorf("frame %d: after the error, frame at byte %d (%v), want byte %d", i, sc.Frame().Offset, sc.Err(), offs[i+1])
		}
		s, err := decodeInto(t, cfg, img, bad, false)
		if i == 1 {
			// the only sync packet: nothing to decode
			if !errors.Is(err, decode.ErrNoSync) {
				t.Errorf("frame %d: %v, want %v", i, err, decode.ErrNoSync)
			}
			continue
		}
		var de *decode.Error
		if err != nil || len(s.gaps) == 0 || !errors.As(s.gaps[0].err, &de) || !errors.Is(de, decode.ErrMalformed) || de.Offset != off {
			t.Errorf("frame %d: %v, gaps %v, want a decode.ErrMalformed gap at byte %d", i, err, s.gaps, off)
		}
		if out, why := tr.check(t, bad); out != outGap {
			t.Errorf("frame %d: campaign outcome %d (%s), want a gap", i, out, why)
		}
	}
}
