package ingress

// Gated is implemented by encoders that react when a filter or trigger
// stage in front of them stops and restarts tracing (the trTeInstFilters
// and trigger controls of the RISC-V Trace Control Interface).
//
// TraceOff is called after the last block that is traced before a stop:
// the encoder reports what it holds and why tracing stopped (N-Trace:
// ProgTraceCorrelation with EVCODE=4; E-Trace: the address of the last
// instruction and a support packet with qual_status). The next Block call
// after a TraceOff starts tracing again, and the encoder resynchronises
// (N-Trace: SYNC=5 trace enable; E-Trace: a sync packet).
//
// Notify asks the encoder to report the address of the last instruction
// of the block it is given next (a trace-notify trigger action); encoders
// whose protocol has no such report ignore it.
type Gated interface {
	TraceOff() error
	Notify() error
}
