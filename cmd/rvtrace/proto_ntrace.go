package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
	tproto "github.com/rvtrace/rvtrace/protocol"
	"github.com/rvtrace/rvtrace/tracectl"
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

// ntraceConfigFlags registers the N-Trace configuration flags: a preset
// and one flag per trace control, each overriding the preset when given
// (in command-line order). The configuration returned is validated.
func ntraceConfigFlags(fs *flag.FlagSet) func() (ntrace.Config, error) {
	raw := ntraceRawConfigFlags(fs)
	return func() (ntrace.Config, error) {
		c, err := raw()
		if err != nil {
			return c, err
		}
		return c, c.Validate()
	}
}

// ntraceRawConfigFlags registers the flags of ntraceConfigFlags; the
// configuration it returns is not validated.
func ntraceRawConfigFlags(fs *flag.FlagSet) func() (ntrace.Config, error) {
	preset := fs.String("preset", "", "configuration preset: "+ntrace.PresetNames())
	var overrides []func(*ntrace.Config)
	boolFlag := func(name, usage string, set func(c *ntrace.Config, v bool)) {
		fs.BoolFunc(name, usage, func(s string) error {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return err
			}
			overrides = append(overrides, func(c *ntrace.Config) { set(c, v) })
			return nil
		})
	}
	intFlag := func(name, usage string, set func(c *ntrace.Config, v int)) {
		fs.Func(name, usage+" (`N`)", func(s string) error {
			v, err := strconv.ParseInt(s, 0, 32)
			if err != nil || v < 0 {
				return fmt.Errorf("want a non-negative number")
			}
			overrides = append(overrides, func(c *ntrace.Config) { set(c, int(v)) })
			return nil
		})
	}
	fs.Func("mode", "trTeInstMode: btm (3) or htm (6) (`mode`)", func(s string) error {
		var m ntrace.Mode
		switch s {
		case "btm", "3":
			m = ntrace.BTM
		case "htm", "6":
			m = ntrace.HTM
		default:
			return fmt.Errorf("want btm or htm")
		}
		overrides = append(overrides, func(c *ntrace.Config) { c.Mode = m })
		return nil
	})
	intFlag("src-bits", "trTeSrcBits: width of the SRC field (0..12, 0 = no SRC)", func(c *ntrace.Config, v int) { c.SrcBits = v })
	intFlag("src-id", "trTeSrcID: this encoder's SRC value", func(c *ntrace.Config, v int) { c.SrcID = uint32(v) })
	intFlag("icnt-bits", "width of the I-CNT counter in bits, its top bit the overflow flag (2..22, default 22); a full counter sends ResourceFull RCODE=0",
		func(c *ntrace.Config, v int) { c.ICNTBits = v })
	boolFlag("icnt-sync", "BTM: report a full I-CNT with ProgTraceSync SYNC=4 instead of ResourceFull", func(c *ntrace.Config, v bool) { c.ICNTFullSync = v })
	intFlag("hist-bits", "width of the HIST register with its stop bit (2..32, default 32)", func(c *ntrace.Config, v int) { c.HistBits = v })
	boolFlag("repeat", "trTeInstEnRepeatedHistory: ResourceFull RCODE=2 with HREPEAT", func(c *ntrace.Config, v bool) { c.RepeatedHistory = v })
	boolFlag("repeat-branch", "RepeatBranch messages (B-CNT) for identical branch messages", func(c *ntrace.Config, v bool) { c.RepeatBranch = v })
	boolFlag("hist-patterns", "choose HIST record lengths so periodic branch patterns repeat (implies --repeat)",
		func(c *ntrace.Config, v bool) { c.HistPatterns, c.RepeatedHistory = v, c.RepeatedHistory || v })
	intFlag("hrepeat-bits", "width of the HREPEAT counter (1..18, default 18)", func(c *ntrace.Config, v int) { c.HRepeatBits = v })
	intFlag("implicit-return", "trTeInstImplicitReturnMode: 0 off, 1 counter, 2 partial-address stack, 3 full-address stack",
		func(c *ntrace.Config, v int) { c.ImplicitReturn = v })
	intFlag("stack-depth", "return stack depth (1..32, default 32), or counter width for --implicit-return 1", func(c *ntrace.Config, v int) { c.StackDepth = v })
	intFlag("partial-bits", "low return-address bits compared with --implicit-return 2 (default 16)", func(c *ntrace.Config, v int) { c.PartialBits = v })
	boolFlag("seq-jump", "trTeInstEnSequentialJump: sequentially inferable jumps send no message", func(c *ntrace.Config, v bool) { c.SequentialJump = v })
	boolFlag("extend-addr-msb", "trTeInstExtendAddrMSB: sign-extension compression of address fields", func(c *ntrace.Config, v bool) { c.ExtendAddrMSB = v })
	boolFlag("all-jumps", "trTeInstEnAllJumps: report direct jumps and calls like taken branches", func(c *ntrace.Config, v bool) { c.AllJumps = v })
	boolFlag("indirect-nohist", "HTM: IndirectBranch instead of IndirectBranchHist when the history is empty", func(c *ntrace.Config, v bool) { c.IndirectNoHist = v })
	boolFlag("timestamps", "trTsEnable: TSTAMP in every message (absolute on sync, relative otherwise)", func(c *ntrace.Config, v bool) { c.Timestamps = v })
	boolFlag("context", "trTeContext: Ownership messages on sync and privilege/context changes", func(c *ntrace.Config, v bool) { c.Context = v })
	intFlag("sync-mode", "trTeInstSyncMode: periodic sync counting 0 off, 1 messages, 2 cycles, 3 halfwords", func(c *ntrace.Config, v int) { c.SyncMode = v })
	intFlag("sync-max", "trTeInstSyncMax: sync every 2^(N+4) units (0..15)", func(c *ntrace.Config, v int) { c.SyncMax = v })
	boolFlag("btype1", "report traps with B-TYPE=1 instead of 2 (exception) / 3 (interrupt)", func(c *ntrace.Config, v bool) { c.TrapBType1 = v })
	intFlag("itype-width", "ingress itype width: 3 or 4 (default 4)", func(c *ntrace.Config, v int) { c.ITypeWidth = v })
	intFlag("start-sync", "SYNC code of the first message (default 1, exit from reset)", func(c *ntrace.Config, v int) { c.StartSync = uint8(v) })
	intFlag("fifo-bytes", "model an output FIFO of N bytes (0: unlimited); overflow sends an Error message and SYNC=7", func(c *ntrace.Config, v int) { c.FIFOBytes = v })
	intFlag("drain-bytes", "the FIFO drains this many bytes every --drain-cycles cycles", func(c *ntrace.Config, v int) { c.DrainBytes = v })
	intFlag("drain-cycles", "see --drain-bytes", func(c *ntrace.Config, v int) { c.DrainCycles = v })
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
		for _, o := range overrides {
			o(&c)
		}
		return c, nil
	}
}

// ntraceEncoderFlags returns the N-Trace encoder component of a hart,
// programmed through its registers with the configuration of the flags:
// the fields of ntraceRegFields by register writes, the others as
// implementation parameters. Source src > 0 has SRC ID src (when there
// is a SRC field).
func ntraceEncoderFlags(fs *flag.FlagSet) encoderFn {
	cfgOf := ntraceRawConfigFlags(fs)
	return func(w io.Writer, img *image.Set, src int, fc *filter.Config, comp *tracectl.Encoder) (ingress.Sink, error) {
		c, err := ntraceFlagsConfig(cfgOf, src)
		if err != nil {
			return nil, err
		}
		s := tracectl.Settings{Format: tracectl.FormatNTrace, NTrace: c}
		im := tracectl.Impl{NTrace: c}
		if fc != nil {
			s.Filter, im.Triggers = *fc, *fc
		}
		return encoderComponent(w, img, comp, s, im, ntraceFlagOf)
	}
}

// ntraceFlagsConfig is the N-Trace configuration the flags ask of the
// encoder of source src.
func ntraceFlagsConfig(cfgOf func() (ntrace.Config, error), src int) (ntrace.Config, error) {
	c, err := cfgOf()
	if err != nil {
		return c, err
	}
	if src > 0 {
		// the hart's own ID (an ID no SRC field carries is none)
		c.SrcID = 0
		if c.SrcBits > 0 {
			c.SrcID = uint32(src)
		}
	}
	return c, nil
}

func ntraceDecoderFlags(fs *flag.FlagSet) decoderConfigFn {
	cfgOf := ntraceConfigFlags(fs)
	stats := fs.Bool("stats", false, "print message statistics on stderr")
	jvt := fs.String("jvt", "", "base `address` of the Zcmt jump table (the jvt CSR), for cm.jt/cm.jalt; default: the image's __jvt_base$ symbol")
	encoder := fs.String("encoder", "any", "the N-Trace `encoder` that wrote the trace: any, or rvtrace: rvtrace's own encoder configured with exactly the --preset and N-Trace flags given here, "+
		"which adds the checks of what that encoder never sends (idle bytes inside the trace, a periodic sync off its period, a sync reporting a jump...); "+
		"only for rvtrace's own traces: another encoder's trace (the N-Trace reference code's) or one configured otherwise may then have false gaps")
	return func(name string) (*decodeSetup, error) {
		c, err := cfgOf()
		if err != nil {
			return nil, err
		}
		cfg := tproto.DefaultConfig() // the other protocols' defaults, for sniffing
		cfg.NTrace = c
		switch *encoder {
		case "any":
		case "rvtrace":
			cfg.NTraceOwnEncoder = true
		default:
			return nil, fmt.Errorf("--encoder %q: want any or rvtrace", *encoder)
		}
		if *jvt != "" {
			if cfg.JVT, err = strconv.ParseUint(*jvt, 0, 64); err != nil {
				return nil, fmt.Errorf("--jvt %q: want an address", *jvt)
			}
		}
		after := func(d tproto.Decoder, _ *tproto.Config) {
			if s, ok := d.(interface{ Stats() *ntrace.Stats }); ok && *stats {
				tproto.WriteNTraceStats(stderr, s.Stats())
			}
		}
		s := &decodeSetup{cfg: cfg, after: after}
		if !framingGiven(fs, "ntrace") {
			s.detect = detectNTraceFraming
		}
		return s, nil
	}
}

func ntraceDumperFlags(fs *flag.FlagSet) func() (*tproto.Config, error) {
	srcBits := fs.Int("src-bits", 0, "trTeSrcBits of the trace (0 = no SRC field)")
	ext := fs.Bool("extend-addr-msb", false, "address fields use trTeInstExtendAddrMSB")
	xlen := fs.Int("xlen", 64, "XLEN of the traced hart (for address extension)")
	byBytes := fs.Bool("bytes", false, "one line per byte with MDO/MSEO bits, like the reference dump")
	stats := fs.Bool("stats", false, "print statistics after the listing")
	return func() (*tproto.Config, error) {
		cfg := &tproto.Config{NTrace: ntrace.Config{SrcBits: *srcBits, ExtendAddrMSB: *ext, XLEN: *xlen}}
		cfg.Dump.Bytes = *byBytes
		if *stats {
			cfg.Dump.Stats = stderr
		}
		return cfg, nil
	}
}
