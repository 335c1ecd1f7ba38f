package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/tracectl"
)

// encoderComponent returns the trace encoder component of a hart (package
// tracectl) writing to w, or comp when not nil, programmed through its Trace Control Interface
// registers with the settings the options ask for, as a debugger would:
// --trace and encode reach the encoders by the one path the trace system
// and guest software use. im holds what no register holds (the
// implementation parameters). flagOf names the option behind a register
// field, for the error when the field does not keep what the options ask
// (a WARL field keeps only its legal values).
func encoderComponent(w io.Writer, img *image.Set, comp *tracectl.Encoder, s tracectl.Settings, im tracectl.Impl, flagOf func(field string) string) (*tracectl.Encoder, error) {
	e := comp
	if e == nil {
		e = tracectl.NewEncoder(img, w)
	}
	if err := e.SetImpl(im); err != nil {
		return nil, err
	}
	if err := e.Configure(s); err != nil {
		var fe *tracectl.FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s: the trace encoder's register %w", flagOf(fe.Field), err)
		}
		return nil, err
	}
	return e, nil
}

// filterFlagOf names the options behind the filter, comparator and
// trigger fields.
func filterFlagOf(field string) (string, bool) {
	switch {
	case field == "trTeInstTrigEnable":
		return "--trigger", true
	case strings.HasPrefix(field, "trTeFilter"), strings.HasPrefix(field, "trTeComp"), field == "trTeInstFilters":
		return "--filter", true
	}
	return "", false
}

// ntraceFlagOf names the N-Trace option behind a register field.
func ntraceFlagOf(field string) string {
	if f, ok := filterFlagOf(field); ok {
		return f
	}
	switch field {
	case "trTeInstMode":
		return "--mode"
	case "trTeContext":
		return "--context"
	case "trTeInstSyncMode":
		return "--sync-mode"
	case "trTeInstSyncMax":
		return "--sync-max"
	case "trTeInstEnSequentialJump":
		return "--seq-jump"
	case "trTeInstEnImplicitReturn", "trTeInstImplicitReturnMode":
		return "--implicit-return"
	case "trTeInstEnRepeatedHistory":
		return "--repeat"
	case "trTeInstEnAllJumps":
		return "--all-jumps"
	case "trTeInstExtendAddrMSB":
		return "--extend-addr-msb"
	case "trTeSrcBits":
		return "--src-bits"
	case "trTeSrcID":
		return "--src-id"
	}
	if strings.HasPrefix(field, "trTs") {
		return "--timestamps"
	}
	return "--preset"
}

// etraceFlagOf names the E-Trace option behind a register field.
func etraceFlagOf(field string) string {
	if f, ok := filterFlagOf(field); ok {
		return f
	}
	switch field {
	case "trTeInstNoAddrDiff":
		return "--full-address"
	case "trTeInstNoTrapAddr":
		return "--implicit-exception"
	case "trTeInstEnSequentialJump":
		return "--sijump"
	case "trTeInstEnImplicitReturn", "trTeInstImplicitReturnMode":
		return "--implicit-return"
	case "trTeInstEnBranchPrediction":
		return "--branch-prediction"
	case "trTeInstEnJumpTargetCache":
		return "--jump-target-cache"
	case "trTeInstSyncMode", "trTeInstSyncMax":
		return "--resync"
	case "trTeContext":
		return "--context"
	case "trTeSrcBits":
		return "--src-bits"
	case "trTeSrcID":
		return "--src-id"
	}
	if strings.HasPrefix(field, "trTs") {
		return "notime_p (--config)"
	}
	return "--trace etrace"
}
