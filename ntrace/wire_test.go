package ntrace

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// The message example of chapter 3 ("N-Trace Message Example"): an idle
// byte, an IndirectBranchHist message with B-TYPE=0, I-CNT=0x7D,
// U-ADDR=0x7, HIST=0xFFE, and a trailing idle.
var specExample = []byte{0xFF, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF}

func TestSpecMessageExample(t *testing.T) {
	r := NewReader(bytes.NewReader(specExample), WireConfig{})
	var m Message
	if err := r.Next(&m); err != nil {
		t.Fatal(err)
	}
	want := Message{TCode: TCodeIndirectBranchHist}
	want.Set(FieldBTYPE, 0).Set(FieldICNT, 0x7D).Set(FieldUADDR, 0x7).Set(FieldHIST, 0xFFE)
	if m.TCode != want.TCode || m.Has != want.Has || m.V != want.V {
		t.Fatalf("got %v, want %v", &m, &want)
	}
	if m.Offset != 1 || m.Size != 6 {
		t.Errorf("offset/size = %d/%d, want 1/6", m.Offset, m.Size)
	}
	if err := r.Next(&m); err != io.EOF {
		t.Fatalf("after message: %v, want EOF", err)
	}
	if r.Idles() != 2 {
		t.Errorf("idles = %d, want 2", r.Idles())
	}
	// And the encoder produces exactly the example's bytes.
	got, err := AppendMessage(nil, &want, &WireConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, specExample[1:7]) {
		t.Errorf("encoded % x, want % x", got, specExample[1:7])
	}
}

// The four encodings of chapter "Virtual Addresses Optimization".
func TestExtendAddrMSBExamples(t *testing.T) {
	cases := []struct {
		name  string
		mdo   []byte // MDO values of the F-ADDR field bytes, LSB first
		field uint64 // F-ADDR after extension
		addr  uint64
	}{
		{"non-extended", []byte{0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x1F}, 0x7_FFFF_FFFF, 0xF_FFFF_FFFE},
		{"extended", []byte{0x3F, 0x3F, 0x3F, 0x3F, 0x1F, 0x3C}, 0x7FFF_FFFF_1FFF_FFFF, 0xFFFF_FFFE_3FFF_FFFE},
		{"zero MDO prevents extension", []byte{0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x00}, 0xF_FFFF_FFFF, 0x1F_FFFF_FFFE},
		{"full 64-bit", []byte{0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x3F, 0x05}, 0x5FFF_FFFF_FFFF_FFFF, 0xBFFF_FFFF_FFFF_FFFE},
	}
	cfg := WireConfig{ExtendAddrMSB: true, XLEN: 64}
	for _, c := range cases {
		// ProgTraceSync: TCODE=9, SYNC=3, I-CNT=0 (one byte, end of field),
		// then the F-ADDR bytes, the last ending the message.
		msg := []byte{9 << 2, 3<<2 | mseoEndField}
		for i, v := range c.mdo {
			b := v << 2
			if i == len(c.mdo)-1 {
				b |= mseoEndMsg
			}
			msg = append(msg, b)
		}
		var m Message
		if err := NewReader(bytes.NewReader(msg), cfg).Next(&m); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.Get(FieldFADDR) != c.field || m.Get(FieldFADDR)<<1 != c.addr {
			t.Errorf("%s: F-ADDR=%#x (address %#x), want %#x (%#x)", c.name, m.Get(FieldFADDR), m.Get(FieldFADDR)<<1, c.field, c.addr)
		}
		// The encoder must choose an encoding that decodes to the same
		// address and is no longer than the example's.
		enc, err := AppendMessage(nil, &m, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > len(msg) {
			t.Errorf("%s: encoder used %d bytes, example %d", c.name, len(enc), len(msg))
		}
		var back Message
		if err := NewReader(bytes.NewReader(enc), cfg).Next(&back); err != nil || back.Get(FieldFADDR) != c.field {
			t.Errorf("%s: re-encoded % x decodes to %#x (%v)", c.name, enc, back.Get(FieldFADDR), err)
		}
	}
}

// The XOR address examples of chapter "Address Compression".
func TestAddressXORExamples(t *testing.T) {
	addrs := []uint64{0x3FC04, 0x3F368, 0x3E100}
	want := []struct {
		f Field
		v uint64
	}{{FieldFADDR, 0x1FE02}, {FieldUADDR, 0x7B6}, {FieldUADDR, 0x934}}
	var ref uint64
	for i, a := range addrs {
		got := a >> 1
		if want[i].f == FieldUADDR {
			got = (a ^ ref) >> 1
		}
		if got != want[i].v {
			t.Errorf("address %#x: %s=%#x, want %#x", a, want[i].f, got, want[i].v)
		}
		if unxor(ref, got, want[i].f) != a {
			t.Errorf("address %#x does not come back from %s", a, want[i].f)
		}
		ref = a
	}
}

func unxor(ref, field uint64, f Field) uint64 {
	if f == FieldFADDR {
		return field << 1
	}
	return ref ^ field<<1
}

var dumpField = regexp.MustCompile(`([A-Z]+)\[(\d+)\]=(0x[0-9A-F]+|\d+)`)

// refFieldNames maps the reference dump's field names to ours.
var refFieldNames = map[string]Field{
	"SYNC": FieldSYNC, "BTYPE": FieldBTYPE, "ICNT": FieldICNT, "FADDR": FieldFADDR, "UADDR": FieldUADDR,
	"HIST": FieldHIST, "RCODE": FieldRCODE, "RDATA": FieldRDATA, "HREPEAT": FieldHREPEAT,
	"EVCODE": FieldEVCODE, "CDF": FieldCDF, "BCNT": FieldBCNT, "PROCESS": FieldPROCESS,
	"ETYPE": FieldETYPE, "ECODE": FieldECODE, "TSTAMP": FieldTSTAMP,
}

// TestReferenceNEX reads the reference encoder's t1 output and compares
// every message and field with the reference dump.
func TestReferenceNEX(t *testing.T) {
	nex := corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin")
	dump := corpus.Path(t, "ntrace-refcode/t1/test-DUMP.txt")
	// Expected messages from the dump text.
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []Message
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, g := range dumpField.FindAllStringSubmatch(sc.Text(), -1) {
			v, err := strconv.ParseUint(g[3], 0, 64)
			if err != nil {
				t.Fatal(err)
			}
			if g[1] == "TCODE" {
				want = append(want, Message{TCode: TCode(v)})
				continue
			}
			fld, ok := refFieldNames[g[1]]
			if !ok {
				t.Fatalf("unknown field %s in reference dump", g[1])
			}
			want[len(want)-1].Set(fld, v)
		}
	}
	data, err := os.ReadFile(nex)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(bytes.NewReader(data), WireConfig{})
	var m Message
	i := 0
	for ; ; i++ {
		err := r.Next(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if i >= len(want) {
			t.Fatalf("more messages than the reference dump's %d", len(want))
		}
		if m.TCode != want[i].TCode || m.Has != want[i].Has || m.V != want[i].V {
			t.Fatalf("message %d at byte %d: got %v, reference %v", i, m.Offset, &m, &want[i])
		}
		// Re-encoding gives the same bytes.
		enc, err := AppendMessage(nil, &m, &WireConfig{})
		if err != nil || !bytes.Equal(enc, data[m.Offset:m.Offset+int64(m.Size)]) {
			t.Fatalf("message %d re-encodes to % x, reference % x (%v)", i, enc, data[m.Offset:m.Offset+int64(m.Size)], err)
		}
	}
	if i != 367 || len(want) != 367 {
		t.Errorf("read %d messages, dump has %d, reference says 367", i, len(want))
	}
}

func TestReaderSurvivesCorruption(t *testing.T) {
	var gm Message
	gm.Reset(TCodeDirectBranch)
	good, _ := AppendMessage(nil, gm.Set(FieldICNT, 5).Set(FieldTSTAMP, 9), &WireConfig{})
	cases := map[string][]byte{
		"all zeros":         bytes.Repeat([]byte{0}, 1000),
		"reserved MSEO":     {0x02, 0x06},
		"end without start": {0x07},
		"truncated":         {0x0C, 0x04},
		"field too long":    append([]byte{0x0C}, append(bytes.Repeat([]byte{0xFC}, 12), 0x07)...),
	}
	for name, junk := range cases {
		stream := append(append(append([]byte{}, junk...), 0xFF), good...)
		if name == "truncated" { // cut at the end of the stream
			stream = append(append([]byte{}, good...), junk...)
		}
		r := NewReader(bytes.NewReader(stream), WireConfig{})
		var m Message
		var sawErr, sawGood bool
		for n := 0; n < 10000; n++ {
			err := r.Next(&m)
			if err == io.EOF {
				break
			}
			var fe *FormatError
			if errors.As(err, &fe) {
				sawErr = true
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if m.TCode == TCodeDirectBranch && m.Get(FieldICNT) == 5 && m.Get(FieldTSTAMP) == 9 {
				sawGood = true
			}
		}
		if !sawErr {
			t.Errorf("%s: no error reported", name)
		}
		if !sawGood {
			t.Errorf("%s: did not resume at the next message", name)
		}
	}
}

func TestRoundTripAllMessages(t *testing.T) {
	for _, cfg := range []WireConfig{{}, {SrcBits: 5}, {SrcBits: 12, ExtendAddrMSB: true}, {ExtendAddrMSB: true, XLEN: 32}} {
		for tc := TCode(0); tc < 64; tc++ {
			lay := layoutOf(tc)
			for _, ts := range []bool{false, true} {
				var m Message
				m.Reset(tc)
				if cfg.SrcBits > 0 {
					m.Set(FieldSRC, uint64(tc)%(1<<cfg.SrcBits))
				}
				if lay == nil {
					m.Raw = []byte{1, 2, 3}
					m.Has = 0
				} else {
					for i, fs := range lay.Fields {
						v := uint64(0x1234567)*uint64(i+1) + uint64(tc)
						if fs.Bits > 0 {
							v &= 1<<fs.Bits - 1
						}
						if fs.F == FieldRCODE {
							v = RCodeHistRepeat
						}
						if fs.F == FieldCDF {
							v = 1
						}
						if fs.F.IsAddress() && cfg.XLEN == 32 {
							v &= 1<<31 - 1
						}
						m.Set(fs.F, v)
					}
				}
				if ts && lay != nil {
					m.Set(FieldTSTAMP, 1<<63|77)
				}
				enc, err := AppendMessage(nil, &m, &cfg)
				if err != nil {
					t.Fatal(err)
				}
				var back Message
				if err := NewReader(bytes.NewReader(enc), cfg).Next(&back); err != nil {
					t.Fatalf("%v: %v", &m, err)
				}
				if lay == nil {
					if back.TCode != m.TCode || !bytes.Equal(back.Raw, m.Raw) {
						t.Fatalf("%v came back as %v raw % x", &m, &back, back.Raw)
					}
					continue
				}
				if back.TCode != m.TCode || back.Has != m.Has || back.V != m.V {
					t.Fatalf("cfg %+v: %v came back as %v", cfg, &m, &back)
				}
			}
		}
	}
}

// The byte dump of the reference trace is the reference dump, line for line.
func TestByteDumpMatchesReference(t *testing.T) {
	nex, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-DUMP.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st, err := Dump(bytes.NewReader(nex), &out, DumpOptions{Bytes: true})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimRight(strings.ReplaceAll(string(ref), "\r\n", "\n"), "\n")
	got := strings.TrimRight(out.String(), "\n")
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range wl {
			if i >= len(gl) || gl[i] != wl[i] {
				g := "<end>"
				if i < len(gl) {
					g = gl[i]
				}
				t.Fatalf("line %d: got %q, reference %q", i+1, g, wl[i])
			}
		}
		t.Fatalf("%d lines, reference %d", len(gl), len(wl))
	}
	if st.Messages != 367 || st.Bytes != 2604 || st.Idles != 0 {
		t.Errorf("stats: %d messages %d bytes %d idles", st.Messages, st.Bytes, st.Idles)
	}
}
