package etrace

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"runtime"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// choppyReader returns 1 to 7 bytes per Read call.
type choppyReader struct {
	data []byte
	rnd  *rand.Rand
}

func (r *choppyReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + r.rnd.Intn(7)
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestStreamChoppyReader decodes, dumps and converts traces (clean and
// corrupted, raw and UTDD framing) through a reader that returns a few
// bytes at a time, and checks that the results are those of the
// in-memory stream.
func TestStreamChoppyReader(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs[:30000], genOpts{trapEvery: 301, ctxEvery: 37})
	rnd := rand.New(rand.NewSource(1))
	for _, sel := range []byte{0, 1, 2, 3, 6, 8, 0x18, 0x39, 0x4a} {
		cfg := fuzzConfig(sel)
		data, _ := encode(t, cfg, nil, blocks)
		bad := bytes.Clone(data)
		for i := 0; i < 20; i++ {
			bad[rnd.Intn(len(bad))] ^= byte(1 << rnd.Intn(8))
		}
		for _, in := range [][]byte{data, bad, data[:len(data)-3]} {
			want := &pcSink{img: img, keep: true}
			d, _ := NewDecoder(img, want, cfg)
			if err := d.Decode(bytes.NewReader(in)); err != nil {
				t.Fatal(err)
			}
			got := &pcSink{img: img, keep: true}
			d, _ = NewDecoder(img, got, cfg)
			if err := d.Decode(&choppyReader{in, rnd}); err != nil {
				t.Fatal(err)
			}
			if len(got.events) != len(want.events) || len(want.events) == 0 {
				t.Fatalf("sel %#x: %d events through the reader, %d in memory", sel, len(got.events), len(want.events))
			}
			for i := range want.events {
				g, w := &got.events[i], &want.events[i]
				if g.String() != w.String() || g.Offset != w.Offset {
					t.Fatalf("sel %#x: event %d is %v (byte %d), want %v (byte %d)", sel, i, g, g.Offset, w, w.Offset)
				}
			}
			comparePCs(t, "choppy", got.pcs, want.pcs)

			var d1, d2 bytes.Buffer
			st1, err1 := Dump(bytes.NewReader(in), &d1, &cfg)
			st2, err2 := Dump(&choppyReader{in, rnd}, &d2, &cfg)
			if err1 != nil || err2 != nil || st1 != st2 || !bytes.Equal(d1.Bytes(), d2.Bytes()) {
				t.Fatalf("sel %#x: dumps differ (%v, %v, %+v, %+v)", sel, err1, err2, st1, st2)
			}
			d1.Reset()
			d2.Reset()
			err1 = ToCSV(bytes.NewReader(in), &cfg, &d1)
			err2 = ToCSV(&choppyReader{in, rnd}, &cfg, &d2)
			if (err1 == nil) != (err2 == nil) || !bytes.Equal(d1.Bytes(), d2.Bytes()) {
				t.Fatalf("sel %#x: CSV differ (%v, %v)", sel, err1, err2)
			}
		}
	}
}

// errReader fails after its data.
type errReader struct{ data []byte }

var errBroken = errors.New("broken")

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errBroken
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestStreamReadError checks that a read error ends decoding with that
// error, after the flow decoded so far.
func TestStreamReadError(t *testing.T) {
	img, pcs := loadT1(t)
	cfg := DefaultConfig()
	data, _ := encode(t, cfg, nil, genBlocks(t, img, pcs[:5000], genOpts{}))
	s := &pcSink{img: img}
	d, _ := NewDecoder(img, s, cfg)
	if err := d.Decode(&errReader{data[:len(data)/2]}); !errors.Is(err, errBroken) {
		t.Fatalf("error %v, want %v", err, errBroken)
	}
	if len(s.pcs) == 0 || len(s.pcs) >= 5000 {
		t.Errorf("%d instructions decoded before the error", len(s.pcs))
	}
	if _, err := Dump(&errReader{data}, io.Discard, &cfg); !errors.Is(err, errBroken) {
		t.Errorf("dump: error %v, want %v", err, errBroken)
	}
}

// genReader produces an encoded trace on the fly: a program of two c.jr
// instructions jumping to each other (every instruction is reported), n
// instructions long, through an encoder writing to an io.Pipe.
func genReader(img *image.Set, cfg Config, n int) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		e, err := NewEncoder(pw, cfg, img)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		b := ingress.Block{IRetire: 1, IType: ingress.ITypeIndirectJump, Priv: ingress.PrivM}
		for i := 0; i < n && err == nil; i++ {
			b.IAddr = 0x1000 + uint64(i&1)*2
			err = e.Block(&b)
		}
		if err == nil {
			err = e.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// memSink counts instructions and samples the heap in use after a
// collection (so that garbage, which other tests' data can let pile up
// far beyond the bound, does not count) every 256K events.
type memSink struct {
	flow.Counter
	events  int
	samples int
	maxHeap uint64
}

func (s *memSink) Event(e *flow.Event) error {
	if s.events++; s.events%(1<<18) == 0 {
		s.samples++
		s.maxHeap = max(s.maxHeap, heapInUse())
	}
	return s.Counter.Event(e)
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestStreamBoundedMemory decodes a trace of about 40 MB produced on the
// fly and checks that the heap stays far below the trace's size.
func TestStreamBoundedMemory(t *testing.T) {
	n := 20_000_000
	if testing.Short() {
		n = 4_000_000
	}
	img := image.NewSet()
	img.AddBytes("jr", 0x1000, []byte{0x02, 0x85, 0x02, 0x85}) // c.jr a0; c.jr a0
	img.SetXLEN(64)
	cfg := DefaultConfig()
	base := heapInUse()
	r := genReader(img, cfg, n)
	defer r.Close()
	cr := &countReader{r: r}
	s := &memSink{}
	d, _ := NewDecoder(img, s, cfg)
	if err := d.Decode(cr); err != nil {
		t.Fatal(err)
	}
	if s.Instructions != uint64(n) || s.Gaps != 0 {
		t.Fatalf("decoded %d instructions (%d gaps), want %d", s.Instructions, s.Gaps, n)
	}
	const bound = 8 << 20
	t.Logf("%d bytes of trace, heap in use at most %d bytes over %d in %d samples", cr.n, s.maxHeap-min(base, s.maxHeap), base, s.samples)
	if cr.n < 4*bound && !testing.Short() {
		t.Fatalf("trace of %d bytes is too small for the test", cr.n)
	}
	if s.samples == 0 || s.maxHeap > base+bound {
		t.Errorf("heap in use reached %d bytes (%d at the start) decoding a %d-byte trace", s.maxHeap, base, cr.n)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestDecodeAllocs checks that decoding allocates nothing per packet: a
// trace a hundred times longer costs no more allocations.
func TestDecodeAllocs(t *testing.T) {
	img := image.NewSet()
	img.AddBytes("jr", 0x1000, []byte{0x02, 0x85, 0x02, 0x85})
	img.SetXLEN(64)
	cfg := DefaultConfig()
	allocs := func(n int) float64 {
		r := genReader(img, cfg, n)
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(3, func() {
			var c flow.Counter
			d, _ := NewDecoder(img, &c, cfg)
			if err := d.Decode(bytes.NewReader(data)); err != nil || c.Instructions != uint64(n) {
				t.Fatalf("%v, %d instructions", err, c.Instructions)
			}
		})
	}
	short, long := allocs(1000), allocs(100_000)
	if long > short {
		t.Errorf("%v allocations for 1000 packets, %v for 100000", short, long)
	}
}
