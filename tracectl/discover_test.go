package tracectl

import (
	"strings"
	"testing"
)

// Discovery finds one encoder per hart, the funnel and the RAM sink at
// their addresses, each of version 1.0 with its component type (trTeImpl
// 0x1, trFunnelImpl 0x8, trRamImpl 0x9 in bits 11:8).
func TestDiscover(t *testing.T) {
	s, _ := newTestSystem(t, 3, 4096)
	got, err := Discover(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		base uint64
		typ  uint32
	}{{0x0300_0000, 1}, {0x0300_1000, 1}, {0x0300_2000, 1}, {0x0301_8000, 8}, {0x0301_9000, 9}}
	if len(got) != len(want) {
		t.Fatalf("found %v", got)
	}
	for i, w := range want {
		c := got[i]
		if c.Base != w.base || c.Type != w.typ || c.Major != 1 || c.Minor != 0 || c.Warning != "" {
			t.Errorf("component %d: %v, want type %d at %#x version 1.0", i, c, w.typ, w.base)
		}
	}
}

// fakeBus has one component at EncoderBase whose tr??Impl is impl.
type fakeBus struct {
	impl   uint32
	active uint32
}

func (f *fakeBus) Read32(addr uint64) (uint32, bool) {
	switch addr {
	case EncoderBase:
		return f.active, true
	case EncoderBase + 4:
		return f.impl, true
	}
	return 0, true
}

func (f *fakeBus) Write32(addr uint64, v uint32) (bool, error) {
	if addr == EncoderBase {
		f.active = v & 1
	}
	return true, nil
}

// Versions are handled as "Versioning of Components" says.
func TestDiscoverVersions(t *testing.T) {
	for _, c := range []struct {
		impl    uint32
		err     string
		warning string
	}{
		{0x101, "", ""},
		{0x100, "pre-ratified", ""},
		{0x131, "", "newer"},
		{0x1F1, "", "experimental"},
		{0x102, "future version", ""},
		{0x10F, "non-compatible", ""},
	} {
		got, err := Discover(&fakeBus{impl: c.impl})
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "0x3000000") {
				t.Errorf("tr??Impl %#x: error %v, want one saying %q at the component's address", c.impl, err, c.err)
			}
		case err != nil:
			t.Errorf("tr??Impl %#x: %v", c.impl, err)
		case len(got) != 1 || !strings.Contains(got[0].Warning, c.warning) || c.warning == "" && got[0].Warning != "":
			t.Errorf("tr??Impl %#x: %v, warning %q, want %q", c.impl, got, got[0].Warning, c.warning)
		}
	}
}
