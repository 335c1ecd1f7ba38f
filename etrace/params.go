package etrace

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/decode"
)

// Version selects the packet layout.
type Version uint8

// Packet layouts.
const (
	// V2 is E-Trace 2.0 (ratified): formats 0-3 with subformats and the
	// notify/updiscon/irreport/irdepth status bits.
	V2 Version = iota
	// V026 is the 0.026 draft: full-delta, diff-delta, addr-only and sync
	// formats, branch maps of 1/9/17/25/31 bits and the te_support message.
	V026
)

// String returns "2.0" or "0.026".
func (v Version) String() string {
	if v == V026 {
		return "0.026"
	}
	return "2.0"
}

// ParseVersion parses "2.0" (or "2") and "0.026".
func ParseVersion(s string) (Version, error) {
	switch strings.TrimSpace(s) {
	case "2.0", "2", "", "2.0.0":
		return V2, nil
	case "0.026", ".026", "026":
		return V026, nil
	}
	return V2, fmt.Errorf("etrace: unknown version %q (2.0 or 0.026)", s)
}

// Params holds the hardware parameters of an encoder (E-Trace 2.0 chapter
// "Parameters and Discovery"). The decoder needs the same values. Field
// comments give the configuration-file key, which is the specification's
// parameter name.
type Params struct {
	IAddressWidth   int  // iaddress_width_p: width of instruction addresses (2..64)
	IAddressLSB     int  // iaddress_lsb_p: address bits below this are not traced (0..3; 1 with compressed instructions)
	ContextWidth    int  // context_width_p (1..64)
	TimeWidth       int  // time_width_p (1..64)
	EcauseWidth     int  // ecause_width_p (1..64)
	PrivilegeWidth  int  // privilege_width_p (1..4)
	NoTime          bool // notime_p: no time field in format 3 packets
	NoContext       bool // nocontext_p: no context field in format 3 packets
	NoTval          bool // notval_p: no tval field (0.026 layout only)
	ReturnStackSize int  // return_stack_size_p: 2^n return stack entries (0: none)
	CallCounterSize int  // call_counter_size_p: bits of the nested call counter (0: none)
	BPredSize       int  // bpred_size_p: 2^n branch predictor entries (0: none)
	CacheSize       int  // cache_size_p: 2^n jump target cache entries (0: none)
	F0SWidth        int  // f0s_width_p: width of the format 0 subformat field; -1 chooses 1 when both extensions exist, else 0
	SIJump          bool // sijump_p: the hart reports sequentially inferable jumps
	ITypeWidth      int  // itype_width_p: 3 or 4
	// TVec is the trap vector (mtvec) the decoder assumes in implicit
	// exception mode (key rvtrace_tvec, an rvtrace extension); bit 0 set
	// selects vectored interrupts (handler TVec&^3 + 4*cause).
	TVec uint64
}

// DefaultParams returns the parameters rvtrace uses unless a configuration
// file says otherwise: 64-bit addresses with compressed instructions, a
// 2-bit privilege, no time and no context in packets, and no optional
// hardware.
func DefaultParams() Params {
	return Params{
		IAddressWidth:  64,
		IAddressLSB:    1,
		ContextWidth:   32,
		TimeWidth:      64,
		EcauseWidth:    6,
		PrivilegeWidth: 2,
		NoTime:         true,
		NoContext:      true,
		F0SWidth:       -1,
		SIJump:         true,
		ITypeWidth:     4,
	}
}

// paramKeys maps configuration keys to the fields they set.
var paramKeys = map[string]func(p *Params, v uint64){
	"iaddress_width_p":    func(p *Params, v uint64) { p.IAddressWidth = int(v) },
	"iaddress_lsb_p":      func(p *Params, v uint64) { p.IAddressLSB = int(v) },
	"context_width_p":     func(p *Params, v uint64) { p.ContextWidth = int(v) },
	"time_width_p":        func(p *Params, v uint64) { p.TimeWidth = int(v) },
	"ecause_width_p":      func(p *Params, v uint64) { p.EcauseWidth = int(v) },
	"privilege_width_p":   func(p *Params, v uint64) { p.PrivilegeWidth = int(v) },
	"notime_p":            func(p *Params, v uint64) { p.NoTime = v != 0 },
	"nocontext_p":         func(p *Params, v uint64) { p.NoContext = v != 0 },
	"notval_p":            func(p *Params, v uint64) { p.NoTval = v != 0 },
	"return_stack_size_p": func(p *Params, v uint64) { p.ReturnStackSize = int(v) },
	"call_counter_size_p": func(p *Params, v uint64) { p.CallCounterSize = int(v) },
	"bpred_size_p":        func(p *Params, v uint64) { p.BPredSize = int(v) },
	"cache_size_p":        func(p *Params, v uint64) { p.CacheSize = int(v) },
	"f0s_width_p":         func(p *Params, v uint64) { p.F0SWidth = int(v) },
	"sijump_p":            func(p *Params, v uint64) { p.SIJump = v != 0 },
	"itype_width_p":       func(p *Params, v uint64) { p.ITypeWidth = int(v) },
	"rvtrace_tvec":        func(p *Params, v uint64) { p.TVec = v },
}

// ignoredKeys are parameters of the specification that do not change the
// packets rvtrace writes; a configuration file may set them.
var ignoredKeys = map[string]bool{
	"arch_p": true, "comparators_p": true, "filters_p": true, "ecause_choice_p": true,
	"filter_context_p": true, "filter_time_p": true, "filter_excint_p": true,
	"filter_privilege_p": true, "filter_tval_p": true, "ctype_width_p": true,
	"ilastsize_width_p": true, "iretire_width_p": true, "retires_p": true,
	"taken_branches_p": true, "impdef_width_p": true, "blocks_p": true,
	"ntkn_width_p": true, "user_width_p": true, "context_type_width_p": true,
	"filter_ecause_p": true, "filter_interrupt_p": true,
}

// ParseConfig reads a configuration file in the reference flow's static
// configuration format: "name = value" lines whose names are the
// specification's parameter names, '#' or ';' comments, and "[section]"
// headings, which are ignored. Values are decimal or 0x-prefixed hex. Keys
// not listed in Params and not known to be irrelevant are errors.
func ParseConfig(r io.Reader, p *Params) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexAny(s, "#;"); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" || strings.HasPrefix(s, "[") {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("etrace config line %d: want name = value, got %q", line, s)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			if b, berr := strconv.ParseBool(v); berr == nil {
				n, err = 0, nil
				if b {
					n = 1
				}
			} else {
				return fmt.Errorf("etrace config line %d: %s: bad value %q", line, k, v)
			}
		}
		if set := paramKeys[k]; set != nil {
			set(p, n)
			continue
		}
		if ignoredKeys[k] {
			continue
		}
		return fmt.Errorf("etrace config line %d: unknown parameter %q (known: %s)", line, k, knownKeys())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return p.Validate()
}

// LoadConfig reads the configuration file at path into p (see ParseConfig).
func LoadConfig(path string, p *Params) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ParseConfig(f, p); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func knownKeys() string {
	var k []string
	for n := range paramKeys {
		k = append(k, n)
	}
	sort.Strings(k)
	return strings.Join(k, ", ")
}

// Validate checks that the parameters are in range.
func (p *Params) Validate() error {
	chk := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("etrace: %s = %d out of range %d..%d", name, v, lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		n         string
		v, lo, hi int
	}{
		{"iaddress_width_p", p.IAddressWidth, 2, 64},
		{"iaddress_lsb_p", p.IAddressLSB, 0, 3},
		{"context_width_p", p.ContextWidth, 1, 64},
		{"time_width_p", p.TimeWidth, 1, 64},
		{"ecause_width_p", p.EcauseWidth, 1, 64},
		{"privilege_width_p", p.PrivilegeWidth, 1, 4},
		{"return_stack_size_p", p.ReturnStackSize, 0, 12},
		{"call_counter_size_p", p.CallCounterSize, 0, 16},
		{"bpred_size_p", p.BPredSize, 0, 20},
		{"cache_size_p", p.CacheSize, 0, 16},
		{"f0s_width_p", p.F0SWidth, -1, 4},
		{"itype_width_p", p.ITypeWidth, 3, 4},
	} {
		if err := chk(c.n, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if p.IAddressLSB >= p.IAddressWidth {
		return fmt.Errorf("etrace: iaddress_lsb_p %d >= iaddress_width_p %d", p.IAddressLSB, p.IAddressWidth)
	}
	if p.ReturnStackSize > 0 && p.CallCounterSize > 0 {
		return fmt.Errorf("etrace: return_stack_size_p and call_counter_size_p are both set")
	}
	return nil
}

// addrBits is the width of the address field.
func (p *Params) addrBits() int { return p.IAddressWidth - p.IAddressLSB }

// addrMask masks an instruction address to iaddress_width_p bits.
func (p *Params) addrMask() uint64 { return mask(p.IAddressWidth) }

// irdepthBits is the width of the irdepth field.
func (p *Params) irdepthBits() int {
	n := p.ReturnStackSize + p.CallCounterSize
	if p.ReturnStackSize > 0 {
		n++
	}
	return n
}

// f0sBits is the width of the format 0 subformat field.
func (p *Params) f0sBits() int {
	if p.F0SWidth >= 0 {
		return p.F0SWidth
	}
	if p.BPredSize > 0 && p.CacheSize > 0 {
		return 1
	}
	return 0
}

// stackMax is the number of return addresses the implicit return logic
// tracks: 2^return_stack_size_p entries, or the largest count of a
// call_counter_size_p-bit counter.
func (p *Params) stackMax() int {
	switch {
	case p.ReturnStackSize > 0:
		return 1 << p.ReturnStackSize
	case p.CallCounterSize > 0:
		return 1<<p.CallCounterSize - 1
	}
	return 0
}

// Options are the run-time modes of the encoder (the trTeInst... controls
// of the Trace Control Interface); they are reported in the ioptions field
// of support packets.
type Options struct {
	FullAddress       bool // full address mode (not trTeInstNoAddrDiff)
	ImplicitException bool // trTeInstNoTrapAddr
	SIJump            bool // trTeInstEnSequentialJump
	ImplicitReturn    bool // trTeInstEnImplicitReturn
	BranchPrediction  bool // trTeInstEnBranchPrediction
	JumpTargetCache   bool // trTeInstJumpTargetCache
}

// ioptions bits, in the reference flow's order with sijump appended.
const (
	optImplicitReturn = 1 << iota
	optImplicitException
	optFullAddress
	optJumpTargetCache
	optBranchPrediction
	optSIJump
	ioptionBits = 6
)

// Bits returns the ioptions field value for o.
func (o Options) Bits() uint64 {
	var v uint64
	set := func(b bool, bit uint64) {
		if b {
			v |= bit
		}
	}
	set(o.ImplicitReturn, optImplicitReturn)
	set(o.ImplicitException, optImplicitException)
	set(o.FullAddress, optFullAddress)
	set(o.JumpTargetCache, optJumpTargetCache)
	set(o.BranchPrediction, optBranchPrediction)
	set(o.SIJump, optSIJump)
	return v
}

// OptionsFromBits decodes an ioptions field.
func OptionsFromBits(v uint64) Options {
	return Options{
		ImplicitReturn:    v&optImplicitReturn != 0,
		ImplicitException: v&optImplicitException != 0,
		FullAddress:       v&optFullAddress != 0,
		JumpTargetCache:   v&optJumpTargetCache != 0,
		BranchPrediction:  v&optBranchPrediction != 0,
		SIJump:            v&optSIJump != 0,
	}
}

// String lists the enabled modes ("delta" when none).
func (o Options) String() string {
	var s []string
	if o.FullAddress {
		s = append(s, "full-address")
	}
	if o.ImplicitException {
		s = append(s, "implicit-exception")
	}
	if o.SIJump {
		s = append(s, "sijump")
	}
	if o.ImplicitReturn {
		s = append(s, "implicit-return")
	}
	if o.BranchPrediction {
		s = append(s, "branch-prediction")
	}
	if o.JumpTargetCache {
		s = append(s, "jump-target-cache")
	}
	if len(s) == 0 {
		return "delta"
	}
	return strings.Join(s, ",")
}

// Encap selects how packets are framed in a byte stream.
type Encap uint8

// Framings.
const (
	// EncapRaw is the E-Trace reference flow's .te_inst_raw layout: a
	// header byte (bits 4:0 payload length, bits 6:5 message type, bit 7
	// zero) before each payload.
	EncapRaw Encap = iota
	// EncapUTDD is the Unformatted Trace & Diagnostic Data Packet
	// Encapsulation: header byte (bits 4:0 length, 6:5 flow, 7 extend),
	// optional source ID and timestamp, payload.
	EncapUTDD
)

// String returns "raw" or "utdd".
func (e Encap) String() string {
	if e == EncapUTDD {
		return "utdd"
	}
	return "raw"
}

// ParseEncap parses "raw" or "utdd".
func ParseEncap(s string) (Encap, error) {
	switch s {
	case "raw", "":
		return EncapRaw, nil
	case "utdd", "encap":
		return EncapUTDD, nil
	}
	return EncapRaw, fmt.Errorf("etrace: unknown encapsulation %q (raw or utdd)", s)
}

// Config is everything an encoder, decoder or dumper needs to agree on.
type Config struct {
	Version Version
	Params  Params
	Options Options
	Encap   Encap
	// SrcBits and SrcID are the UTDD source ID field (trTeSrcBits,
	// trTeSrcID); TypeField adds the 2-bit trace type after the source ID
	// (2 = instruction trace), as in the specification's examples.
	SrcBits   int
	SrcID     uint32
	TypeField bool
	// TimestampBytes is the size of the UTDD timestamp (0: none). The
	// encoder timestamps every frame (header extend bit set), which the
	// UTDD specification leaves optional per frame; the decoder relies
	// on it: a frame without its timestamp is a framing error.
	TimestampBytes int
	// ResyncPeriod is the number of te_inst packets after which the
	// encoder resynchronises (trTeInstSyncMax; 0: never).
	ResyncPeriod int
	// Decode holds the decoder options every protocol shares (the encoder
	// ignores them).
	Decode decode.Options
	// Data, if not nil, turns data trace on (see data.go).
	Data *DataConfig
}

// DefaultConfig returns E-Trace 2.0 with DefaultParams, delta address mode
// and the raw framing.
func DefaultConfig() Config { return Config{Params: DefaultParams()} }

// Check validates the configuration and fills in hardware sizes that the
// enabled modes need but the parameters left at zero (an 8-entry return
// stack, a 64-entry predictor, a 16-entry jump target cache).
func (c *Config) Check() error {
	p := &c.Params
	if c.Options.ImplicitReturn && p.ReturnStackSize == 0 && p.CallCounterSize == 0 {
		p.ReturnStackSize = 3
	}
	if c.Options.BranchPrediction && p.BPredSize == 0 {
		p.BPredSize = 6
	}
	if c.Options.JumpTargetCache && p.CacheSize == 0 {
		p.CacheSize = 4
	}
	if c.Options.ImplicitReturn && p.ITypeWidth == 3 {
		return fmt.Errorf("etrace: implicit return needs itype_width_p = 4")
	}
	if c.SrcBits < 0 || c.SrcBits > 16 {
		return fmt.Errorf("etrace: source ID width %d out of range 0..16", c.SrcBits)
	}
	if c.TimestampBytes < 0 || c.TimestampBytes > 8 {
		return fmt.Errorf("etrace: timestamp size %d out of range 0..8", c.TimestampBytes)
	}
	if c.ResyncPeriod < 0 {
		return fmt.Errorf("etrace: negative resync period")
	}
	if err := c.checkData(); err != nil {
		return err
	}
	return p.Validate()
}

// mask returns a mask of the n low bits (n in 0..64).
func mask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}
