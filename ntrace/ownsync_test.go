package ntrace

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// A periodic sync counting messages waits for a flow message, and in HTM a
// long loop fills HIST again and again meanwhile: the ResourceFull
// messages sent while the sync waits are not bounded, so rvtrace's own
// trace of t1 (whose loops send dozens of them in a row) decodes with
// DecoderConfigFrom to exactly the reference PC list, with no gap.
func TestPeriodicSyncAfterHistoryRun(t *testing.T) {
	img, data := loadT1(t)
	want := normalizePCs(t, data)
	var pcs []uint64
	for _, line := range bytes.Fields(want) {
		pc, err := ingress.ParsePC(string(line))
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
	}
	for _, cfg := range []Config{
		withSync(Presets["best"], SyncMessages, 0),
		withSync(Presets["ref-htm"], SyncMessages, 0),
		withSync(Config{Mode: HTM}, SyncMessages, 1),
	} {
		cfg.XLEN = img.XLEN()
		trace, err := encodePCs(img, pcs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := decodeToPCs(t, img, trace, DecoderConfigFrom(cfg))
		if !bytes.Equal(got, want) {
			t.Errorf("%+v: decoded PC list differs from test-PCONLY.txt at line %d", cfg, firstDiff(got, want))
		}
	}
}
