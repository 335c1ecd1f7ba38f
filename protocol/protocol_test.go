package protocol

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// A test program of package analysis and the PCs QEMU executed for it.
const (
	testELF   = "../examples/analysis/calls.elf"
	testPCs   = "../examples/analysis/calls.pcs.gz"
	testInsts = 8587
	testEntry = 0x10554
)

func loadImage(t *testing.T) *image.Set {
	t.Helper()
	img := image.NewSet()
	if err := img.AddELF(testELF); err != nil {
		t.Fatal(err)
	}
	return img
}

// encode encodes the test program's PCs with protocol name and cfg.
func encode(t *testing.T, name string, img *image.Set, cfg *Config) []byte {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(testPCs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc, err := p.NewEncoder(&out, img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := ingress.NewPCSource(zr, testPCs, img, ingress.PCOptions{})
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Block(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func input(t *testing.T, data []byte) *Input {
	t.Helper()
	in, err := NewInput(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Each sniffer scores its own protocol's traces close to 1 and the other
// protocol's, and compressed bytes, far lower.
func TestSniffScores(t *testing.T) {
	img := loadImage(t)
	cfg := DefaultConfig()
	nex := encode(t, "ntrace", img, cfg)
	et := encode(t, "etrace", img, cfg)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(nex)
	zw.Close()
	nt, _ := Lookup("ntrace")
	ep, _ := Lookup("etrace")
	for _, c := range []struct {
		what     string
		data     []byte
		nlo, nhi float64 // N-Trace score bounds
		elo, ehi float64 // E-Trace score bounds
	}{
		{"N-Trace", nex, 0.99, 1, 0, 0.5},
		{"E-Trace", et, 0, 0.5, 0.99, 1},
		{"gzip", z.Bytes(), 0, 0.5, 0, 0.5},
	} {
		n, e := nt.Sniff(c.data, cfg), ep.Sniff(c.data, cfg)
		if n < c.nlo || n > c.nhi || e < c.elo || e > c.ehi {
			t.Errorf("%s: N-Trace score %.3f, E-Trace score %.3f", c.what, n, e)
		}
	}
	if r := ntrace.Sniff(nex, ntrace.WireConfig{}); r.Syncs == 0 || r.FirstSync != testEntry {
		t.Errorf("first sync %#x (%d syncs), want %#x", r.FirstSync, r.Syncs, testEntry)
	}
}

// Detect picks the protocol of each trace; Check refuses a trace given as
// the other protocol, or without its SRC field width, or of another
// program, and accepts a damaged trace of the right protocol (its gaps
// are for the decoder to report).
func TestDetectAndCheck(t *testing.T) {
	img := loadImage(t)
	cfg := DefaultConfig()
	nex := encode(t, "ntrace", img, cfg)
	et := encode(t, "etrace", img, cfg)
	srcCfg := DefaultConfig()
	srcCfg.NTrace.SrcBits, srcCfg.NTrace.SrcID = 3, 5
	withSrc := encode(t, "ntrace", img, srcCfg)
	for _, c := range []struct {
		data []byte
		want string
	}{{nex, "ntrace"}, {et, "etrace"}} {
		p, err := Detect(input(t, c.data), img, cfg)
		if err != nil || p.Name() != c.want {
			t.Errorf("Detect: %v, %v; want %s", p, err, c.want)
		}
	}
	nt, _ := Lookup("ntrace")
	ep, _ := Lookup("etrace")
	var me *MismatchError
	if err := Check(nt, input(t, et), img, cfg); !errors.As(err, &me) || me.LooksLike != "etrace" {
		t.Errorf("E-Trace checked as N-Trace: %v", err)
	}
	if err := Check(ep, input(t, nex), img, cfg); !errors.As(err, &me) || me.LooksLike != "ntrace" {
		t.Errorf("N-Trace checked as E-Trace: %v", err)
	}
	if err := Check(nt, input(t, withSrc), img, cfg); !errors.As(err, &me) || me.SrcBits != 3 {
		t.Errorf("SRC trace checked without SRC: %v", err)
	}
	if err := Check(nt, input(t, withSrc), img, srcCfg); err != nil {
		t.Errorf("SRC trace checked with its SRC width: %v", err)
	}
	if err := Check(nt, input(t, nex), img, srcCfg); !errors.As(err, &me) || me.SrcBits != 0 {
		t.Errorf("trace without SRC checked with SRC: %v", err)
	}
	other := image.NewSet()
	if err := other.AddELF("../examples/demo/demo.elf"); err != nil {
		t.Fatal(err)
	}
	if err := Check(nt, input(t, nex), other, cfg); !errors.As(err, &me) || !me.NotInImage || me.FirstSync != testEntry {
		t.Errorf("trace of another program: %v", err)
	}
	bad := bytes.Clone(nex)
	for i := len(bad) / 2; i < len(bad)/2+6; i++ {
		bad[i] ^= 0x5c
	}
	if err := Check(nt, input(t, bad), img, cfg); err != nil {
		t.Errorf("damaged trace refused: %v", err)
	}
}

// NewInput refuses an empty trace with decode.ErrEmpty and decompresses a
// gzip-compressed one.
func TestNewInput(t *testing.T) {
	_, err := NewInput(bytes.NewReader(nil))
	if !errors.Is(err, decode.ErrEmpty) {
		t.Errorf("empty trace: %v", err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("trace bytes"))
	zw.Close()
	in := input(t, z.Bytes())
	all, _ := io.ReadAll(in.R)
	if !in.Gzip || !in.Whole || string(in.Prefix) != "trace bytes" || string(all) != "trace bytes" {
		t.Errorf("gzip input: %+v, read %q", in, all)
	}
}

// Every protocol round-trips the test program through its own encoder and
// decoder, picked by name.
func TestRoundTripByName(t *testing.T) {
	img := loadImage(t)
	for _, name := range Names() {
		cfg := DefaultConfig()
		data := encode(t, name, img, cfg)
		p, _ := Lookup(name)
		var c flow.Counter
		d, err := p.NewDecoder(img, &c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if c.Instructions != testInsts || c.Gaps != 0 {
			t.Errorf("%s: %d instructions, %d gaps", name, c.Instructions, c.Gaps)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Errorf("unknown protocol found")
	}
}

// ChooseFraming keeps the candidate that decodes the start of a trace
// without a gap (N-Trace: the SRC field the encoder wrote, among every
// width), counts candidates that decode it to the same flow as one (the
// first stands for them), and returns both of two that decode the same
// packets to flows of different sources (E-Trace: the UTDD type field
// over no source ID, and a 2-bit source ID read as source 2).
func TestChooseFraming(t *testing.T) {
	img := loadImage(t)
	nt := DefaultConfig()
	nt.NTrace.SrcBits, nt.NTrace.SrcID = 3, 5
	in := input(t, encode(t, "ntrace", img, nt))
	p, _ := Lookup("ntrace")
	var cands []*Config
	for w := 0; w <= 12; w++ {
		c := DefaultConfig()
		c.NTrace.SrcBits = w
		cands = append(cands, c)
	}
	same := *cands[3]
	cands = append(cands, &same)
	best := ChooseFraming(p, in, img, cands)
	if len(best) != 1 || best[0].Config != cands[3] || best[0].Trial.Instructions != testInsts || best[0].Trial.Gaps != 0 {
		t.Errorf("N-Trace, SRC field of 3 bits: %d framings chosen, the first %+v", len(best), best)
	}

	et := DefaultConfig()
	et.ETrace.Encap, et.ETrace.TypeField = etrace.EncapUTDD, true
	in = input(t, encode(t, "etrace", img, et))
	p, _ = Lookup("etrace")
	wide := DefaultConfig()
	wide.ETrace.Encap, wide.ETrace.SrcBits = etrace.EncapUTDD, 2
	raw := DefaultConfig()
	best = ChooseFraming(p, in, img, []*Config{raw, wide, et})
	if len(best) != 2 || best[0].Config != wide || best[1].Config != et || best[0].Trial.Instructions != testInsts ||
		best[0].Trial.Digest == best[1].Trial.Digest {
		t.Errorf("E-Trace, type field: %d framings chosen: %+v", len(best), best)
	}
}
