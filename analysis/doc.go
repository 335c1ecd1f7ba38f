// Package analysis turns the decoded instruction flow (flow.Event, from an
// N-Trace or E-Trace decoder, a Tarmac trace or a simulator's ingress
// blocks through BlockFlow) into the views trace users expect:
//
//   - a flat profile per function and per source line (DWARF), in
//     instructions and, where the flow has timestamps, cycles;
//   - the call tree with inclusive and exclusive counts, built from the
//     calls and returns of the flow and robust to tail calls, longjmp,
//     traps and gaps;
//   - folded stacks (flamegraph.pl, speedscope); pprof protocol buffers
//     with one location per instruction address, DWARF inlined frames and
//     the ELF's mapping (go tool pprof -list, -disasm, -http); function
//     spans as Chrome trace-event JSON and as native Perfetto protobuf
//     traces (one track per hart and privilege level); code coverage in
//     lcov format;
//   - trace statistics: bytes and messages by type, bits per instruction,
//     trace cost per function and the bandwidth a trace port needs;
//   - a self-contained HTML report with all of it.
//
// One Profile (a flow.Sink) collects everything in a single pass; the
// writers render a closed Profile. The Profile's memory is bounded by the
// program (distinct instruction ranges and call paths), not by the length
// of the trace, and its per-range work does not allocate, so it streams
// multi-gigabyte traces at well over 100 million instructions per second
// (BenchmarkProfile).
package analysis
