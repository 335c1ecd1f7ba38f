// Package bench holds the benchmarks that span packages (the simulator
// feeding encoders, decoders on traces of whole corpus programs); it has no
// code of its own. Run them with
//
//	go test -run '^$' -bench . ./internal/bench
package bench
