package ntrace

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

var campaign = flag.Bool("campaign", false, "run the reliability campaign (TestReliabilityCampaign)")

// campaignResult sums one kind of corruption.
type campaignResult struct {
	name       string
	cases      int
	violations int
	detected   int   // cases with a gap
	silent     int   // no gap: the decoded flow is the truth, or the bytes re-encode it
	latency    []int // instructions emitted after the corruption point, before its gap
	examples   []string
}

func (r *campaignResult) String() string {
	med := "- | - | -"
	if n := len(r.latency); n > 0 {
		sort.Ints(r.latency)
		med = fmt.Sprintf("%d | %d | %d", r.latency[n/2], r.latency[n*9/10], r.latency[n-1])
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %s |", r.name, r.cases, r.violations, r.detected, r.silent, med)
}

// TestReliabilityCampaign corrupts the trace of a real program (t1 of the
// reference code corpus: 164,959 instructions executed) in the ways
// issue 9 lists, decodes each and checks the integrity rule. It runs with
// -campaign (or RVTRACE_CAMPAIGN=1); the figures are in PERFORMANCE.md.
func TestReliabilityCampaign(t *testing.T) {
	if !*campaign && os.Getenv("RVTRACE_CAMPAIGN") == "" {
		t.Skip("the reliability campaign runs with -campaign")
	}
	img, pcsText := loadT1(t)
	var truth []uint64
	for _, l := range strings.Fields(string(pcsText)) {
		pc, _ := ingress.ParsePC(l)
		truth = append(truth, pc)
	}
	periodic := withSync(Presets["ref-htm-best"], SyncMessages, 4) // a sync every 256 messages
	single := Presets["ref-htm-best"]
	rng := rand.New(rand.NewSource(9))
	var results []*campaignResult
	run := func(name string, cfg Config, n int, op func(trace []byte) ([]byte, int64)) {
		cfg.XLEN = img.XLEN()
		trace, _ := encodeFromPCs(t, img, pcsText, cfg, ingress.PCOptions{})
		// instructions decoded from the messages before each byte
		clean := &flowRecord{img: img}
		var before []rangeAt
		d := mustDecoder(t, img, flow.Multi(clean, sinkFunc(func(e *flow.Event) {
			if e.Kind == flow.KindRange {
				before = append(before, rangeAt{e.Offset, e.N})
			}
		})), DecoderConfigFrom(cfg))
		if err := d.Decode(bytes.NewReader(trace)); err != nil {
			t.Fatal(err)
		}
		if why := checkIntegrity(truth, clean.items); why != "" {
			t.Fatalf("%s: the intact trace: %s", name, why)
		}
		r := &campaignResult{name: name}
		for i := 0; i < n; i++ {
			bad, at := op(trace)
			r.cases++
			why, gapped, emitted := campaignCase(t, img, truth, cfg, bad)
			switch {
			case why != "":
				r.violations++
				if len(r.examples) < 5 {
					r.examples = append(r.examples, fmt.Sprintf("corruption at byte %d: %s", at, why))
				}
			case gapped:
				r.detected++
				if lat := int(emitted) - int(instructionsBefore(before, at)); lat >= 0 {
					r.latency = append(r.latency, lat)
				} else {
					r.latency = append(r.latency, 0)
				}
			default:
				r.silent++
			}
		}
		results = append(results, r)
	}
	flip := func(trace []byte) ([]byte, int64) {
		bad := append([]byte(nil), trace...)
		at := rng.Intn(len(bad))
		bad[at] ^= 1 << rng.Intn(8)
		return bad, int64(at)
	}
	run("bit flip, periodic sync (ref-htm-best, sync every 256 messages)", periodic, 500, flip)
	run("bit flip, single sync (ref-htm-best)", single, 500, flip)
	run("cut at a random byte, periodic sync", periodic, 100, func(trace []byte) ([]byte, int64) {
		at := 1 + rng.Intn(len(trace)-1)
		return append([]byte(nil), trace[:at]...), int64(at)
	})
	run("inserted byte, periodic sync", periodic, 100, func(trace []byte) ([]byte, int64) {
		at := rng.Intn(len(trace))
		bad := append(append(append([]byte(nil), trace[:at]...), byte(rng.Intn(256))), trace[at:]...)
		return bad, int64(at)
	})
	run("deleted byte, periodic sync", periodic, 100, func(trace []byte) ([]byte, int64) {
		at := rng.Intn(len(trace))
		return append(append([]byte(nil), trace[:at]...), trace[at+1:]...), int64(at)
	})
	t.Log("| corruption | cases | rule broken | detected (gap or error) | no gap (flow right, or the bytes re-encode it) | instructions emitted after the corruption before its gap: median | 90th percentile | max |")
	t.Log("|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		t.Log(r)
		for _, ex := range r.examples {
			t.Errorf("%s: %s", r.name, ex)
		}
	}
}

type rangeAt struct {
	off int64
	n   uint64
}

// instructionsBefore counts the instructions the intact trace's messages
// before byte at decode to.
func instructionsBefore(rs []rangeAt, at int64) uint64 {
	var n uint64
	for _, r := range rs {
		if r.off >= at {
			break
		}
		n += r.n
	}
	return n
}

// campaignCase decodes one corrupted trace and applies the integrity
// rule. It returns why the rule broke ("" if it held), whether a gap was
// reported and how many instructions were emitted before the first gap.
func campaignCase(t *testing.T, img *image.Set, truth []uint64, cfg Config, bad []byte) (string, bool, uint64) {
	rec := &flowRecord{img: img}
	var emitted uint64
	gapped := false
	dc := DecoderConfigFrom(cfg)
	dc.MaxInstructions = uint64(4 * len(truth))
	d := mustDecoder(t, img, flow.Multi(rec, sinkFunc(func(e *flow.Event) {
		switch {
		case e.Kind == flow.KindGap:
			gapped = true
		case e.Kind == flow.KindRange && !gapped:
			emitted += e.N
		}
	})), dc)
	err := d.Decode(bytes.NewReader(bad))
	switch {
	case err == nil:
	case errors.Is(err, decode.ErrEmpty), errors.Is(err, decode.ErrNoSync), errors.Is(err, ErrTooManyInstructions):
		return "", true, emitted // an error: flagged
	case errors.Is(err, decode.ErrOutsideImage) && rec.pcs == 0:
		// the only sync's F-ADDR is corrupt: no sync in the image, the
		// decode fails having emitted nothing (as in integrityCase)
		return "", true, emitted
	default:
		t.Fatal(err)
	}
	why := checkIntegrity(truth, rec.items)
	if why != "" {
		if pcs, gaps := rec.decodedPCs(); !gaps && len(pcs) > 0 {
			if again, err := encodeFlow(img, rec.evs, cfg); err == nil && bytes.Equal(again, bad) {
				return "", gapped, emitted
			}
		}
	}
	return why, gapped, emitted
}
