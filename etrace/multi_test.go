package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// writeLog records every Write it is given, as a separate piece.
type writeLog struct {
	all    bytes.Buffer
	pieces [][]byte
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.all.Write(p)
	w.pieces = append(w.pieces, append([]byte(nil), p...))
	return len(p), nil
}

// teeSink records the blocks of a hart and passes them to its encoder.
type teeSink struct {
	rec  recordSink
	next ingress.Sink
}

func (s *teeSink) Block(b *ingress.Block) error {
	s.rec.blocks = append(s.rec.blocks, *b)
	return s.next.Block(b)
}

func (s *teeSink) Close() error { return s.next.Close() }

// multiHart is a run of a program on several harts, each traced by its
// own encoder (source ID = hart) into one Funnel.
type multiHart struct {
	img    *image.Set
	cfg    Config
	truth  [][]uint64 // each hart's retired PCs (the simulator's PC hook)
	blocks [][]ingress.Block
	log    writeLog // the funnel's output, write by write
}

// runMultiHart runs a corpus program on harts harts (quantum instructions
// per turn) with an E-Trace encoder per hart writing into one Funnel.
func runMultiHart(t testing.TB, name string, harts, quantum int, cfg Config) *multiHart {
	t.Helper()
	path := filepath.Join(corpus, "elf", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("corpus not present (%v)", err)
	}
	r := &multiHart{img: image.NewSet(), cfg: cfg, truth: make([][]uint64, harts)}
	if err := r.img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{Harts: harts, Quantum: quantum, MaxInstret: 20e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	fun := NewFunnel(&r.log)
	tees := make([]*teeSink, harts)
	for h := 0; h < harts; h++ {
		c := cfg
		c.SrcID = uint32(h)
		enc, err := NewEncoder(fun, c, r.img)
		if err != nil {
			t.Fatal(err)
		}
		tees[h] = &teeSink{next: enc}
		if err := m.SetIngress(h, tees[h]); err != nil {
			t.Fatal(err)
		}
		if err := m.SetPCHook(h, func(pc uint64) { r.truth[h] = append(r.truth[h], pc) }); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s on %d harts: exit %d, %v", name, harts, res.ExitCode, err)
	}
	for h := 0; h < harts; h++ {
		if len(r.truth[h]) == 0 {
			t.Fatalf("hart %d did not run", h)
		}
		r.blocks = append(r.blocks, tees[h].rec.blocks)
	}
	return r
}

// srcSinks collects each source's decoded flow in an intSink.
type srcSinks struct {
	img  *image.Set
	srcs map[uint32]*intSink
	gaps []flow.Event // all gaps, in order
}

func (s *srcSinks) Event(e *flow.Event) error {
	is := s.srcs[e.Src]
	if is == nil {
		is = &intSink{img: s.img}
		s.srcs[e.Src] = is
	}
	if e.Kind == flow.KindGap {
		s.gaps = append(s.gaps, *e)
	}
	return is.Event(e)
}

func (s *srcSinks) Close() error { return nil }

// demux decodes data with a Demux.
func demux(t testing.TB, cfg Config, img *image.Set, data []byte) (*srcSinks, error) {
	t.Helper()
	s := &srcSinks{img: img, srcs: map[uint32]*intSink{}}
	d, err := NewDemux(img, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, d.Decode(bytes.NewReader(data))
}

func multiConfig(bits int) Config {
	cfg := DefaultConfig()
	cfg.Encap, cfg.SrcBits = EncapUTDD, bits
	return cfg
}

// TestMultiHartFunnel: mt-matmul and mt-vvadd on two harts, each hart
// traced by its own encoder with its own UTDD source ID into one Funnel.
// The funnel gets one frame per write (packet granularity, in the order
// they are made), the harts' frames alternate many times, each source's
// frames are byte for byte those of a single-source encoding of its
// hart's blocks, and the Demux gives for each source exactly the PCs the
// simulator retired on that hart, with no gap.
func TestMultiHartFunnel(t *testing.T) {
	for _, name := range []string{"mt-matmul.riscv", "mt-vvadd.riscv"} {
		cfg := multiConfig(1)
		r := runMultiHart(t, name, 2, 500, cfg)
		// one frame per write
		per := make([]bytes.Buffer, 2)
		switches, last := 0, uint32(0)
		for i, p := range r.log.pieces {
			sc := NewScanner(bytes.NewReader(p), &cfg)
			if !sc.Scan() || sc.Scan() || sc.Err() != nil {
				t.Fatalf("%s: write %d (%x) is not one frame", name, i, p)
			}
			sc = NewScanner(bytes.NewReader(p), &cfg)
			sc.Scan()
			src := sc.Frame().SrcID
			if src > 1 {
				t.Fatalf("%s: write %d has source %d", name, i, src)
			}
			if i > 0 && src != last {
				switches++
			}
			last = src
			per[src].Write(p)
		}
		if switches < 20 {
			t.Errorf("%s: the sources alternate %d times in %d frames", name, switches, len(r.log.pieces))
		}
		for h := 0; h < 2; h++ {
			c := cfg
			c.SrcID = uint32(h)
			single, _ := encode(t, c, r.img, r.blocks[h])
			if !bytes.Equal(single, per[h].Bytes()) {
				t.Errorf("%s: source %d: %d bytes in the funnel, %d encoded alone", name, h, per[h].Len(), len(single))
			}
		}
		s, err := demux(t, cfg, r.img, r.log.all.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s.gaps) > 0 || len(s.srcs) != 2 {
			t.Fatalf("%s: %d sources, gaps %v", name, len(s.srcs), s.gaps)
		}
		for h := 0; h < 2; h++ {
			if is := s.srcs[uint32(h)]; is.err != nil {
				t.Errorf("%s: source %d: %v", name, h, is.err)
			} else {
				comparePCs(t, fmt.Sprintf("%s source %d", name, h), is.pcs, r.truth[h])
			}
		}
		// with room for one source, the other's frames are one gap
		lim := &srcSinks{img: r.img, srcs: map[uint32]*intSink{}}
		dm, _ := NewDemux(r.img, lim, cfg)
		dm.MaxSources = 1
		if err := dm.Decode(bytes.NewReader(r.log.all.Bytes())); err != nil {
			t.Fatalf("%s: MaxSources 1: %v", name, err)
		}
		first1 := int64(-1)
		for i, p := range r.log.pieces {
			if p[1]&1 == 1 {
				first1 = int64(len(bytes.Join(r.log.pieces[:i], nil)))
				break
			}
		}
		if g := lim.gaps; len(g) != 1 || g[0].Src != 1 || g[0].Offset != first1 || !errors.Is(g[0].Err, decode.ErrUnknownSource) {
			t.Errorf("%s: MaxSources 1: gaps %v, want one of source 1 at byte %d", name, g, first1)
		} else {
			comparePCs(t, name+" MaxSources 1", lim.srcs[0].pcs, r.truth[0])
		}
		// the single-source Decoder, which ignores the source ID, does
		// not follow this stream (the harts' packets mixed)
		single := &intSink{img: r.img}
		d, _ := NewDecoder(r.img, single, cfg)
		if err := d.Decode(bytes.NewReader(r.log.all.Bytes())); err == nil && len(single.gaps) == 0 {
			t.Errorf("%s: the mixed stream decodes without a gap as one source", name)
		}
	}
}

// frameOffsets returns the offset of each frame of data.
func frameOffsets(t testing.TB, cfg Config, data []byte) []int64 {
	sc := NewScanner(bytes.NewReader(data), &cfg)
	var offs []int64
	for sc.Scan() {
		offs = append(offs, sc.Frame().Offset)
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return offs
}

// sourceFrames returns the frames of source src in data, framing included.
func sourceFrames(t *testing.T, cfg Config, data []byte, src uint32) []byte {
	sc := NewScanner(bytes.NewReader(data), &cfg)
	var out []byte
	for sc.Scan() {
		if fr := sc.Frame(); fr.SrcID == src {
			out = append(out, data[fr.Offset:sc.Offset()]...)
		}
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	return out
}

// sourceRule checks the integrity rule for one source of a corrupted
// multi-source trace bad: its decoded flow is its hart's truth but for
// what gaps count, or (no gap) its frames in bad are a valid trace of the
// decoded flow: re-encoding the flow with its source ID gives them.
func sourceRule(t *testing.T, cfg Config, img *image.Set, truth []uint64, s *intSink, bad []byte, src uint32) string {
	why := checkRuleEnd(truth, s)
	if why == "" || len(s.gaps) > 0 || s.other > 0 || len(s.pcs) == 0 {
		return why
	}
	c := cfg
	c.SrcID = src
	if reencodes(t, c, img, s, sourceFrames(t, cfg, bad, src)) {
		return "" // the corrupted bytes are a valid trace of the decoded flow
	}
	return why
}

// TestMultiHartSourceFlip corrupts the source ID of frames of a two-hart
// trace (mt-matmul, whose harts run the same code). A frame given to a
// source ID no hart has (the field is 2 bits wide) is a gap of that
// source, naming the frame's byte unless it is a sync packet (the source
// then follows it, and its trace has no end: a gap counting what it
// emitted as suspect), and a gap at that byte of the hart that lost it
// (ErrUnknownSource: a source's trace starts with a sync packet, so the
// frame may be any other's), unless it is a support packet. A frame given to the other hart: for each hart,
// every instruction its decoder emits is one the hart retired, in order,
// or is counted by a gap, or the source's frames are themselves a valid
// trace of the flow decoded (the integrity rule: a packet of one hart can
// be a valid packet of the other where both run the same loop).
func TestMultiHartSourceFlip(t *testing.T) {
	cfg := multiConfig(2)
	r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
	data := r.log.all.Bytes()
	offs := frameOffsets(t, cfg, data)
	codec := NewCodec(&cfg)
	detected := 0
	ks := []int{1, 2, 3, 4, 5, len(offs) - 2}
	for k := 6; k < len(offs)-2; k += len(offs) / 40 {
		ks = append(ks, k)
	}
	for _, k := range ks {
		off := offs[k]
		for _, to := range []byte{3, 1} { // an unknown source, the other hart
			bad := append([]byte(nil), data...)
			was := bad[off+1] & 3
			if to == 1 {
				to = 1 - was
			}
			bad[off+1] = bad[off+1]&^3 | to
			s, err := demux(t, cfg, r.img, bad)
			name := fmt.Sprintf("frame %d (byte %d) from source %d to %d", k, off, was, to)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			for h := 0; h < 2; h++ {
				is := s.srcs[uint32(h)]
				if is == nil || is.err != nil {
					t.Errorf("%s: source %d: %v", name, h, is)
					continue
				}
				if why := sourceRule(t, cfg, r.img, r.truth[h], is, bad, uint32(h)); why != "" {
					t.Errorf("%s: source %d: %s", name, h, why)
				}
			}
			for _, g := range s.gaps {
				var de *decode.Error
				if !errors.As(g.Err, &de) || de.Offset != g.Offset || g.Src > 3 {
					t.Errorf("%s: gap %v", name, &g)
				}
			}
			if len(s.gaps) > 0 {
				detected++
			}
			if to != 3 {
				continue
			}
			s3 := s.srcs[3]
			if s3 == nil || len(s3.gaps) == 0 {
				t.Errorf("%s: no gap for source 3", name)
				continue
			}
			if why, _ := checkRule(nil, s3); why != "" {
				t.Errorf("%s: source 3 emitted instructions outside a gap: %s", name, why)
			}
			var p Packet
			sync := codec.Parse(bad[off+2:off+1+int64(bad[off]&0x1f)], false, &p) == nil && isF3(&p)
			named := false
			for _, g := range s.gaps {
				named = named || g.Src == 3 && g.Offset == off
			}
			if !sync && !named {
				t.Errorf("%s: no gap of source 3 names byte %d: %v", name, off, s.gaps)
			}
			// the source that lost it (following its program by then)
			lost := false
			for _, g := range s.gaps {
				lost = lost || g.Src == uint32(was) && g.Offset == off && errors.Is(g.Err, decode.ErrUnknownSource)
			}
			support := p.Format == FormatSync && p.Subformat == SubSupport
			if !sync && !support && k > 5 && !lost {
				t.Errorf("%s: no gap of source %d names byte %d: %v", name, was, off, s.gaps)
			}
		}
	}
	t.Logf("%d corrupted traces of %d reported a gap (the others are valid traces of the flows decoded)", detected, 2*len(ks))
	if detected <= len(ks) {
		t.Errorf("only %d corrupted traces of %d reported a gap", detected, 2*len(ks))
	}
}

// TestMultiHartCorrupt flips random bits of the source ID bytes and of
// the extend bits of the headers of a two-hart trace (one to three bits
// per case; damaged lengths are TestFramingLengthDamage's and the framing
// campaign's concern):
// the Demux never fails, and each source keeps the integrity rule
// (sources no hart has emit nothing outside a gap).
func TestMultiHartCorrupt(t *testing.T) {
	cfg := multiConfig(2)
	r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
	data := r.log.all.Bytes()
	offs := frameOffsets(t, cfg, data)
	rng := uint64(0x9e3779b97f4a7c15)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	n := 200
	if testing.Short() {
		n = 40
	}
	detected := 0
	for i := 0; i < n; i++ {
		bad := append([]byte(nil), data...)
		var flips []string
		for k := 1 + next(3); k > 0; k-- {
			at := offs[next(len(offs))]
			bit := next(9)
			if bit < 8 {
				at++ // the source ID byte
			} else {
				bit = 7 // the header's extend bit (the flow bits 6:5 are ignored in 2.0)
			}
			bad[at] ^= 1 << bit
			flips = append(flips, fmt.Sprintf("byte %d bit %d", at, bit))
		}
		s, err := demux(t, cfg, r.img, bad)
		if err != nil {
			if !errors.Is(err, decode.ErrNoSync) && !errors.Is(err, decode.ErrEmpty) {
				t.Errorf("case %d (%v): %v", i, flips, err)
			}
			continue
		}
		if len(s.gaps) > 0 {
			detected++
		}
		for src, is := range s.srcs {
			if is.err != nil {
				t.Errorf("case %d (%v): source %d: %v", i, flips, src, is.err)
				continue
			}
			var truth []uint64
			if src < 2 {
				truth = r.truth[src]
			}
			if why := sourceRule(t, cfg, r.img, truth, is, bad, src); why != "" {
				t.Errorf("case %d (%v): source %d: %s", i, flips, src, why)
			}
		}
	}
	t.Logf("%d corrupted traces of %d reported a gap", detected, n)
}
