package ntrace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
)

// A trap message whose I-CNT grows by a few halfwords (a corrupted field
// of the same length), with periodic sync counting halfwords. Every
// outcome keeps the integrity rule, and the test shows which growths a
// decoder can see:
//   - past a conditional branch or an uninferable jump, or onto one, or
//     (ingress itype of 4 bits) onto a direct jump or call: each ends an
//     ingress block, so the period ran out in a block before the trap's,
//     or the trap after it is a block of its own: the encoder would have
//     sent a ProgTraceSync there and the trap with I-CNT=0; a gap
//     (counted as detected);
//   - within the block where the period ran out, short of its last
//     instruction: the trap came a few instructions later in another
//     flow, and the corrupted bytes are exactly that flow's trace
//     (re-encoding the decoded flow gives them): no decoder can see it;
//   - with a 3-bit itype, onto a direct jump or call as well: the port
//     reports the jump with itype 0 and the trap may end its block, so
//     the corrupted bytes are the trace of a flow whose trap follows the
//     jump (re-encoding the decoded flow as such a port reports it gives
//     them).
func TestTrapICNTGrowth(t *testing.T) {
	img, err := integrityImage()
	if err != nil {
		t.Skip(err)
	}
	bit3 := func(c Config) Config { c.ITypeWidth = 3; return c }
	cfgs := []Config{
		integrityConfigs[4], // BTM, RepeatBranch, sync every 64 halfwords
		withSync(Config{Mode: BTM}, SyncHalfwords, 3),
		withSync(Config{Mode: HTM}, SyncHalfwords, 2),
		withSync(Presets["ref-htm-best"], SyncHalfwords, 3),
		bit3(withSync(Config{Mode: BTM}, SyncHalfwords, 3)),
		bit3(withSync(Config{Mode: HTM, IndirectNoHist: true}, SyncHalfwords, 2)),
	}
	for ci, cfg := range cfgs {
		cfg.XLEN = img.XLEN()
		// (growths onto a direct jump of a trap reported by a sync
		// message: detected with a 4-bit itype, hidden with a 3-bit one)
		var detected, hidden, detectedJump, hiddenJump, tried int
		for seed := int64(1); seed <= 12; seed++ {
			truth := synthFlow(img, seed, 3000, true)
			trace, err := encodePCs(img, truth, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ITypeWidth == 3 {
				// A 3-bit port ends no block at a direct jump a trap
				// follows (ingress.PCSource's blocks have 4-bit itypes):
				// the trace of the true flow as such a port reports it.
				rec := &flowRecord{img: img}
				if err := mustDecoder(t, img, rec, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(trace)); err != nil {
					t.Fatal(err)
				}
				if trace, err = encodeFlow(img, rec.evs, cfg); err != nil {
					t.Fatal(err)
				}
				rec = &flowRecord{img: img}
				if err := mustDecoder(t, img, rec, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(trace)); err != nil {
					t.Fatal(err)
				}
				if pcs, gaps := rec.decodedPCs(); gaps || !equalPCs(pcs, truth) {
					t.Fatalf("config %d seed %d: the 3-bit port's trace does not decode to the flow", ci, seed)
				}
			}
			r := NewReader(bytes.NewReader(trace), cfg.Wire())
			var m Message
			for k := 0; r.Next(&m) == nil; k++ {
				if !m.Present(FieldBTYPE) || m.Get(FieldBTYPE) == BTypeIndirect {
					continue
				}
				for d := uint64(1); d <= 6; d++ {
					bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(FieldICNT, m.Get(FieldICNT)+d) })
					if len(bad) != len(trace) {
						continue // (a longer field moves every later byte)
					}
					tried++
					what := fmt.Sprintf("config %d, seed %d, message %d (%v, I-CNT %d) +%d", ci, seed, k, m.TCode,
						m.Get(FieldICNT), d)
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
						for _, it := range rec.items {
							if it.gap != nil && strings.Contains(it.gap.Err.Error(), "(direct-") {
								detectedJump++
							}
						}
					case equalPCs(pcs, truth):
						t.Errorf("%s: decodes to the true flow", what)
					default:
						again, err := encodeFlow(img, rec.evs, cfg)
						if err != nil || !bytes.Equal(again, bad) {
							t.Errorf("%s: a different flow without a gap, and the bytes are not its trace (%v)", what, err)
							continue
						}
						hidden++
						if m.Present(FieldSYNC) && trapAfterDirectJump(rec.evs, m.Offset) {
							hiddenJump++
						}
					}
				}
			}
		}
		t.Logf("config %d: %d growths: %d detected (%d a sync's trap after a direct jump), %d a valid trace of another flow (%d)",
			ci, tried, detected, detectedJump, hidden, hiddenJump)
		if detected == 0 || hidden == 0 {
			t.Errorf("config %d: %d detected, %d hidden: the test lost its cases", ci, detected, hidden)
		}
		if cfg.ITypeWidth == 3 && (hiddenJump == 0 || detectedJump != 0) || cfg.ITypeWidth != 3 && (hiddenJump != 0 || detectedJump == 0) {
			t.Errorf("config %d (itype width %d): a sync's trap after a direct jump %d times detected, %d times hidden",
				ci, cfg.ITypeWidth, detectedJump, hiddenJump)
		}
	}
}

// trapAfterDirectJump reports whether the trap of the flow reported by the
// message at byte off comes right after a direct jump or call.
func trapAfterDirectJump(evs []flow.Event, off int64) bool {
	for i := 1; i < len(evs); i++ {
		if evs[i].Kind != flow.KindTrap || evs[i].Offset != off || evs[i-1].Kind != flow.KindRange {
			continue
		}
		switch evs[i-1].End {
		case ingress.ITypeDirectJump, ingress.ITypeDirectCall, ingress.ITypeOtherDirect:
			return true
		}
	}
	return false
}
