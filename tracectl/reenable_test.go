package tracectl

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/ntrace"
)

// TestReenableOwnDecode disables the encoder (trTeEnable 1 -> 0, which
// ends its trace) and enables it again with the same registers in the
// middle of t1's blocks, and decodes the one trace with the decoder
// configuration of rvtrace's own encoder (what rvtrace run's decode hint
// gives with --encoder rvtrace, from the settings the encoder runs): the
// second trace begins with the encoder's first SYNC (exit from reset),
// which must not be a gap; in presets and with narrow counters, periodic
// syncs counting messages and RepeatBranch (the implementation's widths
// set by SetImpl).
func TestReenableOwnDecode(t *testing.T) {
	img, _, pcs := loadT1(t)
	blks := loadBlocks(t)
	cfgs := map[string]ntrace.Config{
		// narrow counters, a sync every 16 messages
		"narrow": {Mode: ntrace.HTM, HistBits: 5, ICNTBits: 7, RepeatedHistory: true, SyncMode: ntrace.SyncMessages},
		"narrow-btm": {Mode: ntrace.BTM, ICNTBits: 6, RepeatBranch: true, SyncMode: ntrace.SyncMessages,
			SyncMax: 1},
	}
	for _, name := range []string{"best", "ref-htm-best", "btm"} {
		cfgs[name] = ntrace.Presets[name]
	}
	for name, cfg := range cfgs {
		cfg.XLEN = 32
		var out bytes.Buffer
		e := NewEncoder(img, &out)
		if err := e.SetImpl(Impl{NTrace: cfg}); err != nil { // (the counter and HIST widths)
			t.Fatal(err)
		}
		if err := e.Configure(Settings{Format: FormatNTrace, NTrace: cfg}); err != nil {
			t.Fatal(err)
		}
		half := len(blks) / 2
		for i := range blks {
			if i == half {
				for _, v := range []uint64{0, 1} {
					if err := e.setFields(TeControl, fv{"trTeEnable", v}); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.setFields(TeControl, fv{"trTeInstTracing", 1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Block(&blks[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		set, _ := e.LastSettings()
		if set.NTrace.ICNTBits != cfg.ICNTBits || set.NTrace.HistBits != cfg.HistBits || set.NTrace.SyncMode != cfg.SyncMode {
			t.Fatalf("%s: the encoder runs %+v", name, set.NTrace)
		}
		c := decodeNTrace(t, img, out.Bytes(), set.NTrace)
		if len(c.gaps) != 0 {
			t.Errorf("%s: gaps %v", name, c.gaps)
		}
		if len(c.pcs) != len(pcs) {
			t.Errorf("%s: %d instructions decoded, want %d", name, len(c.pcs), len(pcs))
		}
	}
}
