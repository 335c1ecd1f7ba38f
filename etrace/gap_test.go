package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// Unit tests of the decoder's gaps: each case of the integrity rule, on
// packet sequences derived from t1's execution.

// packetsOf encodes pcs with cfg and returns the packets written.
func packetsOf(t *testing.T, cfg Config, img *image.Set, pcs []uint64) []Packet {
	t.Helper()
	return packetsOfBlocks(t, cfg, genBlocks(t, img, pcs, genOpts{}))
}

// packetsOfBlocks encodes blocks with cfg and returns the packets written.
func packetsOfBlocks(t *testing.T, cfg Config, blocks []ingress.Block) []Packet {
	t.Helper()
	var pkts []Packet
	e, err := NewEncoder(&bytes.Buffer{}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.OnPacket = func(p *Packet) { pkts = append(pkts, *p) }
	for _, b := range blocks {
		if err := e.Block(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return pkts
}

// frame writes packets with cfg's framing and returns the bytes and the
// byte offset of each packet.
func frame(t *testing.T, cfg Config, pkts []Packet) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, &cfg)
	var offs []int64
	c := NewCodec(&cfg)
	var off int64
	for i := range pkts {
		offs = append(offs, off)
		if err := w.Write(&pkts[i], 0); err != nil {
			t.Fatal(err)
		}
		if pkts[i].Format == FormatSync && pkts[i].Subformat == SubSupport {
			c.Options = OptionsFromBits(pkts[i].IOptions)
		}
		off += int64(1 + c.Size(&pkts[i]))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if off != int64(buf.Len()) {
		t.Fatalf("frame offsets: %d bytes counted, %d written", off, buf.Len())
	}
	return buf.Bytes(), offs
}

// gapsOf decodes data and returns the sink and the decode errors of its
// gaps.
func gapsOf(t *testing.T, cfg Config, img *image.Set, data []byte) (*intSink, []*decode.Error) {
	t.Helper()
	s, err := decodeInto(t, cfg, img, data, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	var des []*decode.Error
	for _, g := range s.gaps {
		var de *decode.Error
		errors.As(g.err, &de)
		des = append(des, de)
	}
	return s, des
}

func isSync(p *Packet) bool { return p.Format == FormatSync && p.Subformat == SubStart }

// TestCheckpointMismatch moves the address of a resynchronisation packet
// to another instruction: the decoder reports a checkpoint gap at that
// packet, naming both addresses, whose Suspect count is the instructions
// decoded since the previous sync packet.
func TestCheckpointMismatch(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 16
	truth := pcs[:40000]
	pkts := packetsOf(t, cfg, img, truth)
	// a sync packet preceded, back to the previous sync, by full branch
	// maps only (so that the previous sync is the last checkpoint)
	k, prev := -1, -1
	for i := range pkts {
		if !isSync(&pkts[i]) {
			continue
		}
		if prev > 1 { // prev: not the first sync, which no checkpoint verified
			only := true
			for j := prev + 1; j < i; j++ {
				if pkts[j].Format != FormatBranch || pkts[j].Branches != 0 {
					only = false
				}
			}
			if only {
				k = i
				break
			}
		}
		prev = i
	}
	if k < 0 {
		t.Fatal("no sync packet after full branch maps only")
	}
	// The clean decode up to and including the previous sync.
	head, _ := frame(t, cfg, pkts[:prev+1])
	c := cfg
	c.Decode.AllowTruncated = true
	hs, err := decodeInto(t, c, img, head, false)
	if err != nil || len(hs.gaps) != 0 {
		t.Fatalf("prefix: %v %v", err, hs.gaps)
	}
	if !slicesEqual(hs.pcs, truth[:len(hs.pcs)]) {
		t.Fatal("prefix decodes wrong")
	}
	good := len(hs.pcs)

	bad := append([]Packet(nil), pkts...)
	stated := uint64(0x20010000) // an instruction the path does not reach with these outcomes
	bad[k].Address = stated >> 1
	data, offs := frame(t, cfg, bad)
	s, des := gapsOf(t, cfg, img, data)
	if len(des) == 0 {
		t.Fatal("no gap")
	}
	de := des[0]
	if !errors.Is(de, decode.ErrCheckpoint) || de.Offset != offs[k] || de.Index != int64(k) || de.What != "sync-start" {
		t.Fatalf("gap %v (offset %d index %d what %q), want a checkpoint at byte %d, packet %d", de, de.Offset, de.Index, de.What, offs[k], k)
	}
	if !strings.Contains(de.Error(), fmt.Sprintf("%#x", stated)) {
		t.Errorf("%v does not name the stated address %#x", de, stated)
	}
	if want := uint64(s.gaps[0].at - good); s.gaps[0].suspect != want {
		t.Errorf("suspect %d, want %d (decoded %d instructions before the gap, %d good)", s.gaps[0].suspect, want, s.gaps[0].at, good)
	}
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTruncated cuts the support packet that ends the trace, and the
// packets before the first sync.
func TestTruncated(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 16
	truth := pcs[:20000]
	pkts := packetsOf(t, cfg, img, truth)
	n := len(pkts)
	if p := pkts[n-1]; p.Format != FormatSync || p.Subformat != SubSupport || p.QualStatus == QualNoChange {
		t.Fatalf("the trace ends with %+v", p)
	}
	data, _ := frame(t, cfg, pkts[:n-1])
	s, des := gapsOf(t, cfg, img, data)
	if len(des) != 1 || !errors.Is(des[0], decode.ErrTruncated) || des[0].Offset != int64(len(data)) || des[0].Index != int64(n-1) {
		t.Fatalf("gaps %v, want one truncation at byte %d, packet %d", des, len(data), n-1)
	}
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
	c := cfg
	c.Decode.AllowTruncated = true
	if _, des := gapsOf(t, c, img, data); len(des) != 0 {
		t.Errorf("AllowTruncated: gaps %v", des)
	}

	// No sync packet at the start: a gap at the first packet after the
	// support packet, then decoding from the next sync.
	tail := append([]Packet{pkts[0]}, pkts[2:]...) // the support packet, then no sync
	data, offs := frame(t, cfg, tail)
	s, des = gapsOf(t, cfg, img, data)
	if len(des) != 1 || !errors.Is(des[0], decode.ErrTruncated) || des[0].Offset != offs[1] || des[0].Index != 1 {
		t.Fatalf("gaps %v, want one at byte %d, packet 1", des, offs[1])
	}
	if s.gaps[0].at != 0 || len(s.pcs) == 0 {
		t.Errorf("the gap comes after %d instructions, %d decoded", s.gaps[0].at, len(s.pcs))
	}
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
	if _, des := gapsOf(t, c, img, data); len(des) != 0 {
		t.Errorf("AllowTruncated: gaps %v", des)
	}
}

// TestEmptyAndNoSync: an empty trace and a trace without a sync packet are
// errors of Decode.
func TestEmptyAndNoSync(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	_, err := decodeInto(t, cfg, img, nil, false)
	var de *decode.Error
	if !errors.As(err, &de) || !errors.Is(err, decode.ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	pkts := packetsOf(t, cfg, img, pcs[:2000])
	var nosync []Packet
	for _, p := range pkts {
		if !isSync(&p) {
			nosync = append(nosync, p)
		}
	}
	data, _ := frame(t, cfg, nosync)
	s, err := decodeInto(t, cfg, img, data, false)
	if !errors.As(err, &de) || !errors.Is(err, decode.ErrNoSync) {
		t.Errorf("no sync: %v", err)
	}
	if len(s.pcs) != 0 || len(s.gaps) != 0 {
		t.Errorf("no sync: %d instructions, %d gaps", len(s.pcs), len(s.gaps))
	}
}

// TestReservedFormat inserts a packet of the reserved 0.026 sync
// subformat 3 in a 0.026 trace.
func TestReservedFormat(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	cfg.Version = V026
	cfg.ResyncPeriod = 16
	truth := pcs[:3000]
	data, _ := encode(t, cfg, nil, genBlocks(t, img, truth, genOpts{}))
	// after the third frame
	sc := NewScanner(bytes.NewReader(data), &cfg)
	for i := 0; i < 3 && sc.Scan(); i++ {
	}
	at := sc.Offset()
	bad := append(append(append([]byte(nil), data[:at]...), 0x41, 0x0f), data[at:]...)
	s, des := gapsOf(t, cfg, img, bad)
	if len(des) == 0 || !errors.Is(des[0], decode.ErrSkipped) || des[0].Offset != at || des[0].Index != 3 {
		t.Fatalf("gaps %v, want a skipped packet at byte %d, packet 3", des, at)
	}
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
}

// TestBranchesLeftOverOrMissing adds a branch outcome to, or removes one
// from, the address packet that reports the last instruction.
func TestBranchesLeftOverOrMissing(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	truth := pcs[:3000]
	pkts := packetsOf(t, cfg, img, truth)
	k := len(pkts) - 2
	if p := &pkts[k]; p.Format != FormatBranch || p.Branches < 2 || p.Branches > 29 {
		t.Fatalf("packet %d is %+v", k, *p)
	}
	for _, c := range []struct {
		name  string
		delta int
	}{{"left over", 1}, {"missing", -1}} {
		bad := append([]Packet(nil), pkts...)
		bad[k].Branches = uint8(int(bad[k].Branches) + c.delta)
		bad[k].BranchMap &= uint32(1)<<bad[k].Branches - 1
		data, offs := frame(t, cfg, bad)
		s, des := gapsOf(t, cfg, img, data)
		if len(des) == 0 || !errors.Is(des[0], decode.ErrInconsistent) || des[0].Offset != offs[k] || des[0].Index != int64(k) {
			t.Errorf("%s: gaps %v, want an inconsistency at byte %d, packet %d", c.name, des, offs[k], k)
			continue
		}
		t.Logf("%s: %v", c.name, des[0])
		if v, _ := checkRule(truth, s); v != "" {
			t.Errorf("%s: %s", c.name, v)
		}
	}
}

// TestOutsideImage moves the first sync packet outside the program.
func TestOutsideImage(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	cfg.ResyncPeriod = 16
	truth := pcs[:3000]
	pkts := packetsOf(t, cfg, img, truth)
	if !isSync(&pkts[1]) {
		t.Fatalf("packet 1 is %+v", pkts[1])
	}
	pkts[1].Address = 0x40 >> 1
	data, offs := frame(t, cfg, pkts)
	s, des := gapsOf(t, cfg, img, data)
	if len(des) == 0 || !errors.Is(des[0], decode.ErrOutsideImage) || des[0].Offset != offs[1] || des[0].Index != 1 {
		t.Fatalf("gaps %v, want outside the image at byte %d, packet 1", des, offs[1])
	}
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
}

// TestTrapPacketChecks corrupts the trap packet with thaddr=0 that ends a
// trace (a trap followed by the end of tracing, as when a program exits
// through an ECALL): an EPC that the instruction before cannot lead to,
// a privilege level that is not that instruction's, and an address
// packet after it (the encoder reports the handler with a format 3
// packet) are gaps at the packet.
func TestTrapPacketChecks(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	truth := pcs[1000:1300]
	tb := ingress.Block{IAddr: pcs[1300], IType: ingress.ITypeInterrupt, Cause: 7}
	pkts := packetsOfBlocks(t, cfg, genBlocks(t, img, truth, genOpts{traps: []flowTrap{{at: len(truth), blk: tb}}}))
	k := len(pkts) - 2
	if p := pkts[k]; p.Format != FormatSync || p.Subformat != SubTrap || p.Thaddr != 0 {
		t.Fatalf("packet %d is %+v", k, p)
	}
	data, _ := frame(t, cfg, pkts)
	if s, des := gapsOf(t, cfg, img, data); len(des) != 0 || len(s.traps) != 1 || !slicesEqual(s.pcs, truth) {
		t.Fatalf("clean: gaps %v, %d traps, %d instructions", des, len(s.traps), len(s.pcs))
	}
	addr := pkts[k-1]
	if !(&Decoder{}).hasAddress(&addr) {
		t.Fatalf("packet %d is %+v", k-1, addr)
	}
	for _, c := range []struct {
		name  string
		cause error
		edit  func([]Packet) []Packet
	}{
		{"EPC", decode.ErrCheckpoint, func(p []Packet) []Packet { p[k].Address += 0x40; return p }},
		{"privilege", decode.ErrInconsistent, func(p []Packet) []Packet { p[k].Privilege = 1; return p }},
		{"address packet after", decode.ErrInconsistent, func(p []Packet) []Packet {
			return append(p[:k+1:k+1], append([]Packet{addr}, p[k+1:]...)...)
		}},
	} {
		bad := c.edit(append([]Packet(nil), pkts...))
		at := k
		if len(bad) > len(pkts) {
			at = k + 1
		}
		data, offs := frame(t, cfg, bad)
		s, des := gapsOf(t, cfg, img, data)
		if len(des) != 1 || !errors.Is(des[0], c.cause) || des[0].Offset != offs[at] || des[0].Index != int64(at) {
			t.Errorf("%s: gaps %v, want one (%v) at byte %d, packet %d", c.name, des, c.cause, offs[at], at)
			continue
		}
		t.Logf("%s: %v", c.name, des[0])
		if v, _ := checkRule(truth, s); v != "" {
			t.Errorf("%s: %s", c.name, v)
		}
	}
}
