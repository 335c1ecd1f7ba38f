package tracectl

import "fmt"

// Component is a trace component found by Discover.
type Component struct {
	Base         uint64
	Type         uint32 // tr??CompType: CompEncoder, CompFunnel, CompRAMSink, ...
	Major, Minor uint32 // tr??VerMajor, tr??VerMinor
	Impl         uint32 // the whole tr??Impl register
	// Warning is set for a version this package accepts with a warning
	// (a newer minor version, an experimental n.15 version).
	Warning string
}

// String names the component type.
func (c Component) String() string {
	name := map[uint32]string{CompEncoder: "trace encoder", CompFunnel: "trace funnel", CompRAMSink: "trace RAM sink"}[c.Type]
	if name == "" {
		name = fmt.Sprintf("component type %#x", c.Type)
	}
	return fmt.Sprintf("%s at %#x, version %d.%d (tr??Impl %#08x)", name, c.Base, c.Major, c.Minor, c.Impl)
}

// pollLimit bounds the reads that wait for tr??Active to follow a write.
const pollLimit = 1000

// Discover finds the trace components in the 4 KiB slots from
// EncoderBase to MapEnd the way "Reset and Discovery" tells a tool to:
// it resets each component (tr??Control = 0, waiting for tr??Active = 0),
// releases it (tr??Control = 1, waiting for tr??Active = 1), and reads
// tr??Impl. A slot whose tr??Active cannot be set holds no component.
// Versions are handled as "Versioning of Components" says: 1.0 is
// accepted, a newer 1.x or an experimental 1.15 with a warning, version
// 0 (pre-ratified) and versions from 2 on are errors naming the
// component.
func Discover(bus Bus) ([]Component, error) { return DiscoverAt(bus, EncoderBase) }

// DiscoverAt is Discover for trace components moved to start at start
// (System.SetBase).
func DiscoverAt(bus Bus, start uint64) ([]Component, error) {
	var found []Component
	for base := start; base < start+MapSize; base += ComponentSize {
		if ok, err := bus.Write32(base, 0); !ok || err != nil {
			return found, fmt.Errorf("trace component at %#x: reset failed (ok %v): %v", base, ok, err)
		}
		if !poll(bus, base, 0) {
			return found, fmt.Errorf("trace component at %#x: tr??Active does not read 0 after reset", base)
		}
		bus.Write32(base, 1)
		if !poll(bus, base, 1) {
			continue // no component in this slot
		}
		impl, _ := bus.Read32(base + 4)
		c := Component{Base: base, Type: impl >> 8 & 0xF, Major: impl & 0xF, Minor: impl >> 4 & 0xF, Impl: impl}
		switch {
		case c.Major == 0:
			return found, fmt.Errorf("%v: pre-ratified version 0 is not supported (version 1.0 is)", c)
		case c.Major == 15:
			return found, fmt.Errorf("%v: version 15.x is a non-compatible encoding (version 1.0 is supported)", c)
		case c.Major > 1:
			return found, fmt.Errorf("%v: a future version this tool does not support (version 1.0 is)", c)
		case c.Minor == 15:
			c.Warning = fmt.Sprintf("%v: experimental version, used as 1.0", c)
		case c.Minor > 0:
			c.Warning = fmt.Sprintf("%v: newer than the supported 1.0, used as 1.0", c)
		}
		found = append(found, c)
	}
	return found, nil
}

// poll reads tr??Control at base until tr??Active is active.
func poll(bus Bus, base uint64, active uint32) bool {
	for i := 0; i < pollLimit; i++ {
		if v, ok := bus.Read32(base); ok && v&1 == active {
			return true
		}
	}
	return false
}
