package ntrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/sim"
)

// blockRecorder keeps the ingress blocks a simulator run gives.
type blockRecorder struct{ blocks []ingress.Block }

func (r *blockRecorder) Block(b *ingress.Block) error {
	r.blocks = append(r.blocks, *b)
	return nil
}
func (r *blockRecorder) Close() error { return nil }

// simWorkload runs a corpus program on the simulator for at most limit
// instructions and returns its image, its ingress blocks and the PCs it
// retired (the simulator's own PC hook: the truth).
func simWorkload(t *testing.T, name string, limit uint64) (*image.Set, []ingress.Block, []uint64) {
	t.Helper()
	elf := corpus.Path(t, "ntrace-refcode/elf/"+name)
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(sim.Config{MaxInstret: limit})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(elf); err != nil {
		t.Fatal(err)
	}
	rec := &blockRecorder{}
	var pcs []uint64
	if err := m.SetIngress(0, rec); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPCHook(0, func(pc uint64) { pcs = append(pcs, pc) }); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
		t.Fatal(err)
	}
	return img, rec.blocks, pcs
}

// pcBlocks turns a PC list into the ingress blocks of ingress.PCSource.
func pcBlocks(t *testing.T, img *image.Set, pcs []byte) ([]ingress.Block, []uint64) {
	t.Helper()
	src := ingress.NewPCSource(bytes.NewReader(pcs), "pcs", img, ingress.PCOptions{})
	var blocks []ingress.Block
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, *b)
	}
	var want []uint64
	for _, line := range bytes.Split(pcs, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pc, err := ingress.ParsePC(string(line))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, pc)
	}
	return blocks, want
}

// narrowICNTConfigs are the configurations with a narrow I-CNT counter
// whose traces must decode exactly: every implicit-return mode and stack
// depth, small HIST registers, both modes, both ways of reporting a full
// counter in BTM.
func narrowICNTConfigs() map[string]Config {
	m := map[string]Config{}
	for icnt := 6; icnt <= 10; icnt++ {
		for ir := ReturnOff; ir <= ReturnFull; ir++ {
			for depth := 1; depth <= 4; depth++ {
				if ir == ReturnOff && depth > 1 {
					break
				}
				for _, hist := range []int{2, 5, 8} {
					m[fmt.Sprintf("htm-icnt%d-hist%d-ir%d-depth%d", icnt, hist, ir, depth)] = Config{Mode: HTM,
						ICNTBits: icnt, HistBits: hist, ImplicitReturn: ir, StackDepth: depth, PartialBits: 12}
				}
				for _, sync := range []bool{false, true} {
					m[fmt.Sprintf("btm-icnt%d-sync%v-ir%d-depth%d", icnt, sync, ir, depth)] = Config{Mode: BTM,
						ICNTBits: icnt, ICNTFullSync: sync, ImplicitReturn: ir, StackDepth: depth, PartialBits: 12}
				}
			}
		}
	}
	// sequentially inferable jumps end blocks without a message too
	m["htm-icnt6-seqjump"] = Config{Mode: HTM, ICNTBits: 6, HistBits: 4, ImplicitReturn: ReturnFull, StackDepth: 2,
		SequentialJump: true}
	m["btm-icnt6-seqjump-sync"] = Config{Mode: BTM, ICNTBits: 6, ICNTFullSync: true, ImplicitReturn: ReturnFull,
		StackDepth: 2, SequentialJump: true}
	return m
}

// A narrow I-CNT counter never overflows by more than the block that
// filled it, even when that block ends in a return the return stack
// predicts (no message follows it, so the encoder reports the full
// counter there): every configuration round-trips to the exact PCs
// without a gap, on t1's reference PC list, on a random flow through t1
// with traps (in merged and per-instruction blocks) and on qsort run by
// the simulator. Before, the encoder let the counter grow for one more
// block after an implicit return (or a sequentially inferable jump), and
// the decoder reported "I-CNT 41 overshoots the 6-bit counter (full at
// 32) by more than the last block" on valid traces.
func TestNarrowICNTRoundTrip(t *testing.T) {
	type workload struct {
		name   string
		img    *image.Set
		blocks []ingress.Block
		want   []uint64
		strict bool // returns go to their callers (ReturnCount can follow)
	}
	var loads []workload
	t1, t1pcs := loadT1(t)
	b, w := pcBlocks(t, t1, t1pcs)
	loads = append(loads, workload{"t1", t1, b, w, true})
	for _, per := range []bool{false, true} {
		for _, strict := range []bool{false, true} {
			pcs := synthFlow(t1, 9, 20000, strict)
			loads = append(loads, workload{fmt.Sprintf("t1-synth-per=%v-strict=%v", per, strict), t1,
				synthBlocks(t, t1, pcs, per, 9), pcs, strict})
		}
	}
	img, blocks, pcs := simWorkload(t, "qsort.riscv", 100000)
	loads = append(loads, workload{"qsort", img, blocks, pcs, true})

	cfgs := narrowICNTConfigs()
	names := make([]string, 0, len(cfgs))
	for n := range cfgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, l := range loads {
		for _, name := range names {
			cfg := cfgs[name]
			if cfg.ImplicitReturn == ReturnCount && !l.strict {
				continue
			}
			t.Run(l.name+"/"+name, func(t *testing.T) {
				roundTrip(t, l.img, l.blocks, l.want, cfg)
			})
		}
	}
	// A decoder that knows nothing of the encoder's configuration, as
	// the specification's decoding algorithm (ResourceFull I-CNT values
	// add up to the next I-CNT walked, wherever they come), decodes the
	// same traces exactly: a full counter reported after an implicit
	// return needs nothing more of a decoder.
	l := loads[2]
	if l.name != "t1-synth-per=false-strict=true" {
		t.Fatalf("workload %s", l.name)
	}
	for _, name := range names {
		cfg := cfgs[name]
		cfg.XLEN = l.img.XLEN()
		var trace bytes.Buffer
		enc, err := NewEncoder(&trace, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.blocks {
			if err := enc.Block(&l.blocks[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		col := &pcCollector{img: l.img}
		if err := mustDecoder(t, l.img, col, DecoderConfig{Wire: cfg.Wire()}).Decode(&trace); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if col.err != nil || !equalPCs(col.pcs, l.want) {
			t.Errorf("%s, decoder without the configuration: %v; %d of %d PCs, equal %v", name, col.err,
				len(col.pcs), len(l.want), equalPCs(col.pcs, l.want))
		}
	}
}

// A ResourceFull RCODE=0 whose I-CNT is corrupted by a few halfwords
// (same field length), on the narrow-counter configurations of the fuzzer.
// rvtrace's encoder reports a full counter at the end of the ingress
// block that filled it, and the decoder checks what that implies
// (DecoderConfig.ICNTBits): the point ends an instruction; the block
// ending there, which cannot begin before the range of the walk it lies
// in, began with the counter not yet full; the HIST records sent before
// cover branches up to that point at most; with LazyHistFull, the branch
// after the last of them, where it was sent, comes at that point at the
// latest. Every outcome keeps the integrity rule: a gap, or a valid trace
// of the decoded flow, re-encoded with the blocks also ending where the
// corrupted messages say the counter was full (a port may retire a
// block in two cycles). Found by FuzzIntegrityNarrow (seed 55952996f68ea8b7:
// RDATA 72 turned into 76 in HTM with a 7-bit counter, the trace ending 3
// instructions late without a gap).
func TestResourceFullICNTCorruption(t *testing.T) {
	img, err := integrityImage()
	if err != nil {
		t.Skip(err)
	}
	var tried, detected, hidden int
	for ci, cfg := range narrowConfigs {
		cfg.XLEN = img.XLEN()
		for seed := int64(1); seed <= 3; seed++ {
			truth := synthFlow(img, seed, 3000, true)
			trace, err := encodePCs(img, truth, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(trace), cfg.Wire())
			var m Message
			for k := 0; r.Next(&m) == nil; k++ {
				if m.TCode != TCodeResourceFull || m.Get(FieldRCODE) != RCodeICNT {
					continue
				}
				for _, d := range []int64{-6, -4, -3, -2, -1, 1, 2, 3, 4, 6} {
					bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) {
						m.Set(FieldRDATA, uint64(int64(m.Get(FieldRDATA))+d))
					})
					if len(bad) != len(trace) {
						continue
					}
					tried++
					what := fmt.Sprintf("config %d, seed %d, message %d (RDATA %d) %+d", ci, seed, k, m.Get(FieldRDATA), d)
					rec := &flowRecord{img: img}
					if err := mustDecoder(t, img, rec, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(bad)); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					pcs, gaps := rec.decodedPCs()
					switch {
					case gaps:
						if why := checkIntegrity(truth, rec.items); why != "" {
							t.Errorf("%s: %s", what, why)
						}
						detected++
					case equalPCs(pcs, truth):
						hidden++ // (the same flow with other block boundaries)
					default:
						again, err := encodeFlowSplit(img, rec.evs, cfg, fullPointsOf(bad, cfg.Wire()))
						if err != nil || !bytes.Equal(again, bad) {
							t.Errorf("%s: a different flow (%d of %d instructions) without a gap, and the bytes are not its trace (%v)",
								what, len(pcs), len(truth), err)
							continue
						}
						hidden++
					}
				}
			}
		}
	}
	t.Logf("%d corruptions: %d detected, %d a valid trace of the decoded flow", tried, detected, hidden)
	if detected == 0 || tried < 1000 {
		t.Errorf("%d corruptions, %d detected: the test lost its cases", tried, detected)
	}
}
