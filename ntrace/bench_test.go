package ntrace

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/sim"
)

// t1Blocks returns the ingress blocks of the t1 workload (merged
// straight-line blocks) and its instruction count.
func t1Blocks(b *testing.B) ([]ingress.Block, uint64) {
	img, pcs := loadT1(b)
	src := ingress.NewPCSource(bytes.NewReader(pcs), "t1", img, ingress.PCOptions{})
	var out []ingress.Block
	for {
		blk, err := src.Next()
		if err == io.EOF {
			return out, src.Instructions()
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, *blk)
	}
}

func benchEncode(b *testing.B, preset string) {
	blocks, n := t1Blocks(b)
	cfg := Presets[preset]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		enc, _ := NewEncoder(io.Discard, cfg)
		for j := range blocks {
			enc.Block(&blocks[j])
		}
		enc.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// BenchmarkEncode measures encoding from in-memory ingress blocks.
func BenchmarkEncodeBTM(b *testing.B)     { benchEncode(b, "ref-btm") }
func BenchmarkEncodeRefBest(b *testing.B) { benchEncode(b, "ref-htm-best") }
func BenchmarkEncodeBest(b *testing.B)    { benchEncode(b, "best") }

func benchDecode(b *testing.B, preset string, pcList bool) {
	img, pcs := loadT1(b)
	cfg := Presets[preset]
	trace, _ := encodeFromPCs(b, img, pcs, cfg, ingress.PCOptions{})
	n := uint64(164959)
	b.SetBytes(int64(len(trace)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var sink flow.Sink = &flow.Counter{}
		if pcList {
			sink = flow.NewPCWriter(io.Discard, img)
		}
		d := mustDecoder(b, img, sink, DecoderConfigFrom(cfg))
		if err := d.Decode(bytes.NewReader(trace)); err != nil {
			b.Fatal(err)
		}
		sink.Close()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
}

// BenchmarkDecode measures decoding to a counting sink and to a PC list.
func BenchmarkDecodeCountBTM(b *testing.B)     { benchDecode(b, "ref-btm", false) }
func BenchmarkDecodeCountRefBest(b *testing.B) { benchDecode(b, "ref-htm-best", false) }
func BenchmarkDecodeCountBest(b *testing.B)    { benchDecode(b, "best", false) }
func BenchmarkDecodePCListBest(b *testing.B)   { benchDecode(b, "best", true) }

// jobsTrace is a long random path through t1 (calls and returns
// balanced) encoded with the best preset and a periodic sync every 2^12
// halfwords.
var jobsTrace struct {
	once  sync.Once
	img   *image.Set
	trace []byte
	n     int
	err   error
}

func loadJobsTrace(b *testing.B) (*image.Set, []byte, int) {
	jobsTrace.once.Do(func() {
		img, err := integrityImage()
		if err != nil {
			jobsTrace.err = err
			return
		}
		cfg := withSync(Presets["best"], SyncHalfwords, 8)
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, 1, 4_000_000, true)
		jobsTrace.img, jobsTrace.n = img, len(truth)
		jobsTrace.trace, jobsTrace.err = encodePCs(img, truth, cfg)
	})
	if jobsTrace.err != nil {
		b.Skip(jobsTrace.err)
	}
	return jobsTrace.img, jobsTrace.trace, jobsTrace.n
}

// BenchmarkDecodeJobs measures DecodeJobs with 1 job (Decode) and 2 on a
// trace of 4 million instructions with periodic sync, to a counting sink
// and to a PC list, with t1's image and with it reloaded (unchanged) at
// 40 instruction counts, as a sideband loads code rewritten while the
// system ran (timed: the pieces start from guessed instruction counts);
// run it with GOMAXPROCS=2.
func BenchmarkDecodeJobs(b *testing.B) {
	for _, timed := range []bool{false, true} {
		for _, pcList := range []bool{false, true} {
			for _, jobs := range []int{1, 2} {
				name := "count"
				if pcList {
					name = "pcs"
				}
				if timed {
					name = "timed-" + name
				}
				b.Run(fmt.Sprintf("%s/jobs=%d", name, jobs), func(b *testing.B) {
					img, trace, n := loadJobsTrace(b)
					if timed {
						img = timedJobsImage(b, n)
					}
					cfg := DecoderConfigFrom(withSync(Presets["best"], SyncHalfwords, 8))
					b.SetBytes(int64(len(trace)))
					b.ReportAllocs()
					b.ResetTimer()
					redone := 0
					for i := 0; i < b.N; i++ {
						var sink flow.Sink = &flow.Counter{}
						if pcList {
							sink = flow.NewPCWriter(io.Discard, img)
						}
						d := mustDecoder(b, img, sink, cfg)
						if err := d.DecodeJobs(bytes.NewReader(trace), jobs); err != nil {
							b.Fatal(err)
						}
						sink.Close()
						if st := d.Stats(); st.Instructions != uint64(n) || st.Gaps != 0 {
							b.Fatalf("%d instructions, %d gaps; the trace holds %d", st.Instructions, st.Gaps, n)
						}
						_, r := d.ParallelStats()
						redone += r
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
					b.ReportMetric(float64(redone)/float64(b.N), "redone/op")
				})
			}
		}
	}
}

// timedJobsImage returns t1's image with its code loaded again at 40
// instruction counts spread over n.
func timedJobsImage(b *testing.B, n int) *image.Set {
	at := make([]uint64, 40)
	for k := range at {
		at[k] = uint64((k + 1) * n / 41)
	}
	img, err := paralleltest.Timed(corpus.Dir()+"/ntrace-refcode/t1/test.elf", at, nil)
	if err != nil {
		b.Fatal(err)
	}
	return img
}

// cmBlock is an ingress block of the coremark benchmark, stored compactly
// (16 bytes instead of 48: coremark's 6.1 M blocks) and expanded before
// each is encoded. Cause and TVal, which the N-Trace encoder does not
// read, are left out.
type cmBlock struct {
	addr  uint64
	dt    uint32 // time since the previous block
	iret  uint16 // halfwords retired
	itype ingress.IType
	flags uint8 // ILastSize (bits 0-1), SIJump (bit 2), Priv (bits 3-5)
}

var cmBlocks struct {
	once   sync.Once
	blocks []cmBlock
	n      uint64
	err    error
}

// cmRecorder records the simulator's blocks compactly.
type cmRecorder struct {
	out  []cmBlock
	last uint64
	err  error
}

func (r *cmRecorder) Block(b *ingress.Block) error {
	if b.IRetire >= 1<<16 || b.Context != 0 || b.Time < r.last ||
		b.Time-r.last >= 1<<32 || b.ILastSize > 3 || b.Priv > 7 || b.CType != 0 {
		if r.err == nil {
			r.err = fmt.Errorf("block %d does not fit the compact form: %+v", len(r.out), *b)
		}
		return nil
	}
	f := b.ILastSize | uint8(b.Priv)<<3
	if b.SIJump {
		f |= 4
	}
	r.out = append(r.out, cmBlock{b.IAddr, uint32(b.Time - r.last), uint16(b.IRetire), b.IType, f})
	r.last = b.Time
	return nil
}

func (r *cmRecorder) Close() error { return nil }

// coremarkBlocks runs coremark (33.4 M instructions) on the simulator once
// and returns its ingress blocks and instruction count.
func coremarkBlocks(b *testing.B) ([]cmBlock, uint64) {
	elf := corpus.Path(b, "ntrace-refcode/elf/coremark.riscv")
	cmBlocks.once.Do(func() {
		m, err := sim.New(sim.Config{})
		if err != nil {
			cmBlocks.err = err
			return
		}
		if err := m.LoadELF(elf); err != nil {
			cmBlocks.err = err
			return
		}
		rec := &cmRecorder{}
		m.SetIngress(0, rec)
		res, err := m.Run()
		if err == nil {
			err = rec.err
		}
		cmBlocks.blocks, cmBlocks.n, cmBlocks.err = rec.out, res.Instret, err
	})
	if cmBlocks.err != nil {
		b.Fatal(cmBlocks.err)
	}
	return cmBlocks.blocks, cmBlocks.n
}

func benchEncodeCoremark(b *testing.B, preset string) {
	blocks, n := coremarkBlocks(b)
	cfg := Presets[preset]
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	var windows, hits uint64 // HistPatterns windows planned, found in the memo
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		cw := &countWriter{}
		enc, _ := NewEncoder(cw, cfg)
		var blk ingress.Block
		for j := range blocks {
			c := &blocks[j]
			blk.IAddr, blk.Time = c.addr, blk.Time+uint64(c.dt)
			blk.IRetire, blk.IType = uint32(c.iret), c.itype
			blk.ILastSize, blk.SIJump, blk.Priv = c.flags&3, c.flags&4 != 0, ingress.Priv(c.flags>>3)
			if err := enc.Block(&blk); err != nil {
				b.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
		size = cw.n
		if m := enc.pat.memo; m != nil {
			windows, hits = m.windows, m.hits
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Minstr/s")
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds()/1e6, "cpu-Minstr/s")
	b.ReportMetric(float64(size), "trace-bytes")
	if windows > 0 {
		b.ReportMetric(float64(hits)/float64(windows), "memo-hits/window")
	}
}

// cpuTime returns the CPU time of the process (user and system): on a
// shared machine a rate per CPU second varies less than one per wall
// second.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countWriter counts what is written to it.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// BenchmarkEncodeCoremark measures encoding coremark's ingress blocks (as
// the simulator emits them live) from memory, in instructions per second.
func BenchmarkEncodeCoremarkBest(b *testing.B)    { benchEncodeCoremark(b, "best") }
func BenchmarkEncodeCoremarkRefBest(b *testing.B) { benchEncodeCoremark(b, "ref-htm-best") }

// BenchmarkPlanCoremark measures the HistPatterns record planner alone
// (patternState.plan) on coremark's branch outcomes, window by window as
// the encoder plans them, in CPU nanoseconds per buffered outcome.
func BenchmarkPlanCoremark(b *testing.B) {
	blocks, _ := coremarkBlocks(b)
	var wins []bitBuf
	var cur bitBuf
	for i := range blocks {
		if !blocks[i].itype.IsBranch() {
			continue
		}
		cur.push(uint64(blocks[i].itype-ingress.ITypeNotTaken) & 1)
		if cur.n == patWindow {
			wins = append(wins, cur)
			// the next window starts with the lookahead of this one
			next := bitBuf{}
			for j := patWindow - patLookahead; j < patWindow; j++ {
				next.push(cur.get(j))
			}
			cur = next
		}
	}
	e, err := NewEncoder(io.Discard, Presets["best"])
	if err != nil {
		b.Fatal(err)
	}
	var s patternState
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for k := 0; k < b.N; k++ {
		for w := range wins {
			s.buf = wins[w]
			s.plan(e, false)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*len(wins)*patWindow), "cpu-ns/outcome")
}
