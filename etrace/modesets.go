package etrace

import (
	"fmt"
	"strings"
)

// ModeSets are named combinations of optional modes, for tables and
// benchmarks; each is applied to DefaultConfig by ModeSet. "all" is every
// mode but full address and implicit exception (which needs the trap
// vector): sequentially inferable jumps, implicit return with an 8-entry
// return stack, a 64-entry branch predictor and a 16-entry jump target
// cache.
var ModeSets = []string{
	"baseline", "full-address", "sijump", "return-stack", "return-counter",
	"predictor", "jump-cache", "all",
}

// ModeSet returns DefaultConfig with the modes of the named set.
func ModeSet(name string) (Config, error) {
	c := DefaultConfig()
	o := &c.Options
	switch strings.TrimSpace(name) {
	case "baseline":
	case "full-address":
		o.FullAddress = true
	case "sijump":
		o.SIJump = true
	case "return-stack":
		o.ImplicitReturn = true
		c.Params.ReturnStackSize = 3
	case "return-counter":
		o.ImplicitReturn = true
		c.Params.CallCounterSize = 4
	case "predictor":
		o.BranchPrediction = true
	case "jump-cache":
		o.JumpTargetCache = true
	case "all":
		*o = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
	default:
		return c, fmt.Errorf("etrace: unknown mode set %q (%s)", name, strings.Join(ModeSets, ", "))
	}
	return c, c.Check()
}
