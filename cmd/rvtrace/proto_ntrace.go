package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

func init() {
	registerProtocol(&protocol{
		name:    "ntrace",
		summary: "RISC-V N-Trace 1.0 (Nexus IEEE-5001 based)",
		encoder: ntraceEncoderFlags,
		decoder: ntraceDecoderFlags,
		dumper:  ntraceDumperFlags,
	})
}

// optInt registers an integer flag whose absence is told apart from 0: the
// returned value is -1 until the flag is given.
func optInt(fs *flag.FlagSet, name, usage string) *int {
	v := -1
	fs.Func(name, usage+" (`N`)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("want a non-negative number")
		}
		v = n
		return nil
	})
	return &v
}

// ntraceConfigFlags registers the N-Trace configuration flags: a preset
// and one flag per trace control, each overriding the preset when given.
func ntraceConfigFlags(fs *flag.FlagSet) func() (ntrace.Config, error) {
	preset := fs.String("preset", "", "configuration preset: "+ntrace.PresetNames())
	mode := fs.String("mode", "", "trTeInstMode: btm (3) or htm (6)")
	srcBits := fs.Int("src-bits", 0, "trTeSrcBits: width of the SRC field (0..12, 0 = no SRC)")
	srcID := fs.Uint("src-id", 0, "trTeSrcID: this encoder's SRC value")
	icntBits := fs.Int("icnt-bits", 0, "width of the I-CNT counter in bits, its top bit the overflow flag (2..22, default 22); a full counter sends ResourceFull RCODE=0")
	icntSync := fs.Bool("icnt-sync", false, "BTM: report a full I-CNT with ProgTraceSync SYNC=4 instead of ResourceFull")
	histBits := fs.Int("hist-bits", 0, "width of the HIST register with its stop bit (2..32, default 32)")
	repeat := fs.Bool("repeat", false, "trTeInstEnRepeatedHistory: ResourceFull RCODE=2 with HREPEAT")
	repeatBranch := fs.Bool("repeat-branch", false, "RepeatBranch messages (B-CNT) for identical branch messages")
	patterns := fs.Bool("hist-patterns", false, "choose HIST record lengths so periodic branch patterns repeat (implies --repeat)")
	hrepBits := fs.Int("hrepeat-bits", 0, "width of the HREPEAT counter (1..18, default 18)")
	ir := optInt(fs, "implicit-return", "trTeInstImplicitReturnMode: 0 off, 1 counter, 2 partial-address stack, 3 full-address stack")
	depth := fs.Int("stack-depth", 0, "return stack depth (1..32, default 32), or counter width for --implicit-return 1")
	seq := fs.Bool("seq-jump", false, "trTeInstEnSequentialJump: sequentially inferable jumps send no message")
	ext := fs.Bool("extend-addr-msb", false, "trTeInstExtendAddrMSB: sign-extension compression of address fields")
	allJumps := fs.Bool("all-jumps", false, "trTeInstEnAllJumps: report direct jumps and calls like taken branches")
	noHist := fs.Bool("indirect-nohist", false, "HTM: IndirectBranch instead of IndirectBranchHist when the history is empty")
	ts := fs.Bool("timestamps", false, "trTsEnable: TSTAMP in every message (absolute on sync, relative otherwise)")
	ctx := fs.Bool("context", false, "trTeContext: Ownership messages on sync and privilege/context changes")
	syncMode := optInt(fs, "sync-mode", "trTeInstSyncMode: periodic sync counting 0 off, 1 messages, 2 cycles, 3 halfwords")
	syncMax := optInt(fs, "sync-max", "trTeInstSyncMax: sync every 2^(N+4) units")
	btype1 := fs.Bool("btype1", false, "report traps with B-TYPE=1 instead of 2 (exception) / 3 (interrupt)")
	itw := fs.Int("itype-width", 0, "ingress itype width: 3 or 4 (default 4)")
	startSync := optInt(fs, "start-sync", "SYNC code of the first message (default 1, exit from reset)")
	return func() (ntrace.Config, error) {
		var c ntrace.Config
		if *preset != "" {
			p, ok := ntrace.Presets[*preset]
			if !ok {
				return c, fmt.Errorf("unknown preset %q (known: %s)", *preset, ntrace.PresetNames())
			}
			c = p
		} else {
			c.Mode = ntrace.HTM
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		switch *mode {
		case "":
		case "btm", "3":
			c.Mode = ntrace.BTM
		case "htm", "6":
			c.Mode = ntrace.HTM
		default:
			return c, fmt.Errorf("--mode must be btm or htm")
		}
		if set["src-bits"] {
			c.SrcBits = *srcBits
		}
		if set["src-id"] {
			c.SrcID = uint32(*srcID)
		}
		if set["icnt-bits"] {
			c.ICNTBits = *icntBits
		}
		if set["icnt-sync"] {
			c.ICNTFullSync = *icntSync
		}
		if set["hist-bits"] {
			c.HistBits = *histBits
		}
		if set["repeat"] {
			c.RepeatedHistory = *repeat
		}
		if set["repeat-branch"] {
			c.RepeatBranch = *repeatBranch
		}
		if set["hist-patterns"] {
			c.HistPatterns = *patterns
			if *patterns {
				c.RepeatedHistory = true
			}
		}
		if set["hrepeat-bits"] {
			c.HRepeatBits = *hrepBits
		}
		if *ir >= 0 {
			c.ImplicitReturn = *ir
		}
		if set["stack-depth"] {
			c.StackDepth = *depth
		}
		if set["seq-jump"] {
			c.SequentialJump = *seq
		}
		if set["extend-addr-msb"] {
			c.ExtendAddrMSB = *ext
		}
		if set["all-jumps"] {
			c.AllJumps = *allJumps
		}
		if set["indirect-nohist"] {
			c.IndirectNoHist = *noHist
		}
		if set["timestamps"] {
			c.Timestamps = *ts
		}
		if set["context"] {
			c.Context = *ctx
		}
		if *syncMode >= 0 {
			c.SyncMode = *syncMode
		}
		if *syncMax >= 0 {
			c.SyncMax = *syncMax
		}
		if set["btype1"] {
			c.TrapBType1 = *btype1
		}
		if set["itype-width"] {
			c.ITypeWidth = *itw
		}
		if *startSync >= 0 {
			c.StartSync = uint8(*startSync)
		}
		return c, c.Validate()
	}
}

func ntraceEncoderFlags(fs *flag.FlagSet) func(w io.Writer, img *image.Set, src int) (ingress.Sink, error) {
	cfgOf := ntraceConfigFlags(fs)
	return func(w io.Writer, img *image.Set, src int) (ingress.Sink, error) {
		c, err := cfgOf()
		if err != nil {
			return nil, err
		}
		if img != nil && c.XLEN == 0 {
			c.XLEN = img.XLEN()
		}
		if src > 0 {
			c.SrcID = uint32(src)
		}
		return ntrace.NewEncoder(w, c)
	}
}

func ntraceDecoderFlags(fs *flag.FlagSet) func(r io.Reader, name string, img *image.Set, sink flow.Sink) error {
	cfgOf := ntraceConfigFlags(fs)
	stats := fs.Bool("stats", false, "print message statistics on stderr")
	return func(r io.Reader, name string, img *image.Set, sink flow.Sink) error {
		c, err := cfgOf()
		if err != nil {
			return err
		}
		dc := ntrace.DecoderConfigFrom(c)
		dc.Wire.XLEN = img.XLEN()
		d := ntrace.NewDecoder(img, sink, dc)
		err = d.Decode(r)
		if *stats {
			printNtraceStats(d.Stats())
		}
		return err
	}
}

func ntraceDumperFlags(fs *flag.FlagSet) func(r io.Reader, name string, w io.Writer) error {
	srcBits := fs.Int("src-bits", 0, "trTeSrcBits of the trace (0 = no SRC field)")
	ext := fs.Bool("extend-addr-msb", false, "address fields use trTeInstExtendAddrMSB")
	xlen := fs.Int("xlen", 64, "XLEN of the traced hart (for address extension)")
	byBytes := fs.Bool("bytes", false, "one line per byte with MDO/MSEO bits, like the reference dump")
	stats := fs.Bool("stats", false, "print statistics after the listing")
	return func(r io.Reader, name string, w io.Writer) error {
		st, err := ntrace.Dump(r, w, ntrace.DumpOptions{Bytes: *byBytes,
			Wire: ntrace.WireConfig{SrcBits: *srcBits, ExtendAddrMSB: *ext, XLEN: *xlen}})
		if *stats && st != nil {
			printNtraceStats(st)
		}
		return err
	}
}

func printNtraceStats(st *ntrace.Stats) {
	fmt.Fprintf(stderr, "%d bytes, %d messages, %d idle bytes, %d malformed\n", st.Bytes, st.Messages, st.Idles, st.Errors)
	for tc := 0; tc < 64; tc++ {
		if st.ByTCode[tc] > 0 {
			fmt.Fprintf(stderr, "  %-24s %8d messages %9d bytes\n", ntrace.TCode(tc), st.ByTCode[tc], st.BytesByTCode[tc])
		}
	}
	if st.Instructions > 0 {
		fmt.Fprintf(stderr, "  %d instructions, %.3f bits/instruction\n", st.Instructions, st.BitsPerInstruction())
	}
}
