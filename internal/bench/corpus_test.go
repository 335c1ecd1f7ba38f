package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/sim"
)

// pcHash is an order-sensitive hash of a PC sequence with its length.
type pcHash struct {
	h, n uint64
}

func (p *pcHash) add(pc uint64) {
	p.h = (p.h ^ pc) * 0x100000001b3
	p.h ^= p.h >> 29
	p.n++
}

// flowHash hashes the PCs of the decoded flow of one source.
type flowHash struct {
	img  *image.Set
	src  uint32
	ph   pcHash
	gaps []string
}

func (f *flowHash) Event(e *flow.Event) error {
	switch {
	case e.Src != f.src:
	case e.Kind == flow.KindGap:
		f.gaps = append(f.gaps, e.Err.Error())
	case e.Kind == flow.KindRange:
		pc := e.Start
		for i := uint64(0); i < e.N; i++ {
			f.ph.add(pc)
			pc += uint64(f.img.InstPtr(pc).Len)
		}
	}
	return nil
}
func (f *flowHash) Close() error { return nil }

// Every corpus program (traps, interrupts and PMP included) traced live
// on the simulator decodes back to exactly the PCs it executed, on every
// hart, for the reference configurations and best.
func TestCorpusLiveRoundTrip(t *testing.T) {
	dir := filepath.Dir(corpus.Path(t, "ntrace-refcode/elf/coremark.riscv"))
	elfs, _ := filepath.Glob(filepath.Join(dir, "*.riscv"))
	for _, elf := range elfs {
		name := strings.TrimSuffix(filepath.Base(elf), ".riscv")
		if name == "xrle" || name == "pk" {
			continue // no exit (xrle loops in myExit by design; pk waits for a payload)
		}
		if testing.Short() && name == "coremark" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			img := image.NewSet()
			if err := img.AddELF(elf); err != nil {
				t.Fatal(err)
			}
			presets := []string{"ref-btm", "ref-htm-best", "best"}
			harts := 1
			cfgSim := sim.Config{}
			if strings.HasPrefix(name, "mt-") {
				harts = 2
			}
			if name == "test_discon_branch_exception" {
				cfgSim.PMPEntries = -1 // it expects pmpcfg0 to trap (see sim)
			}
			cfgSim.Harts = harts
			m, err := sim.New(cfgSim)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadELF(elf); err != nil {
				t.Fatal(err)
			}
			want := make([]pcHash, harts)
			traces := make([][]bytes.Buffer, harts)
			for h := 0; h < harts; h++ {
				h := h
				m.SetPCHook(h, func(pc uint64) { want[h].add(pc) })
				traces[h] = make([]bytes.Buffer, len(presets))
				var sinks multiSink
				for i, p := range presets {
					cfg := ntrace.Presets[p]
					enc, err := ntrace.NewEncoder(&traces[h][i], cfg)
					if err != nil {
						t.Fatal(err)
					}
					sinks = append(sinks, enc)
				}
				m.SetIngress(h, sinks)
			}
			if _, err := m.Run(); err != nil {
				t.Fatal(err)
			}
			for h := 0; h < harts; h++ {
				for i, p := range presets {
					f := &flowHash{img: img}
					d, err := ntrace.NewDecoder(img, f, ntrace.DecoderConfigFrom(ntrace.Presets[p]))
					if err != nil {
						t.Fatal(err)
					}
					if err := d.Decode(bytes.NewReader(traces[h][i].Bytes())); err != nil {
						t.Fatal(err)
					}
					if len(f.gaps) > 0 || f.ph != want[h] {
						t.Errorf("hart %d %s: decoded %d PCs (gaps %q), executed %d; sequences differ: %v",
							h, p, f.ph.n, f.gaps, want[h].n, f.ph != want[h])
					}
				}
			}
		})
	}
}

type multiSink []ingress.Sink

func (m multiSink) Block(b *ingress.Block) error {
	for _, s := range m {
		if err := s.Block(b); err != nil {
			return err
		}
	}
	return nil
}

func (m multiSink) Close() error {
	for _, s := range m {
		if err := s.Close(); err != nil {
			return err
		}
	}
	return nil
}
