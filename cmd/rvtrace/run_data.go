package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"strconv"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
	"github.com/rvtrace/rvtrace/sim"
	"github.com/rvtrace/rvtrace/tarmac"
	"github.com/rvtrace/rvtrace/tracectl"
)

// runDataHarts sets --data-harts for a run of n harts with E-Trace data
// trace (each hart's data packets carry source ID n + hart) and returns
// it; 0 when there is one hart or no data trace.
func runDataHarts(fs *flag.FlagSet, n int) (int, error) {
	dt, dh := fs.Lookup("data-trace"), fs.Lookup("data-harts")
	if n < 2 || dt == nil || dh == nil || dt.Value.String() != "true" {
		return 0, nil
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "data-harts" })
	if set && dh.Value.String() != strconv.Itoa(n) {
		return 0, fmt.Errorf("--data-harts %s: this run has %d harts (run sets --data-harts itself)", dh.Value, n)
	}
	if err := fs.Set("data-harts", strconv.Itoa(n)); err != nil {
		return 0, err
	}
	return n, nil
}

// dataPorts returns the data trace interface of each hart that has
// sinks (dsinks[h]; nil for the others), observing the hart's accesses
// (tw, if not nil, sees them too), with the split protocol's lrid_width_p
// when lridWidth > 0.
func dataPorts(m *sim.Machine, dsinks []dataFanout, tw *tarmac.Writer, lridWidth int) ([]*sim.DataPort, error) {
	ports := make([]*sim.DataPort, len(dsinks))
	for h, ds := range dsinks {
		if len(ds) == 0 {
			continue
		}
		p := sim.NewDataPort(m, ds)
		if tw != nil {
			p.Next = tw
		}
		if lridWidth > 0 {
			for _, s := range ds {
				if w, ok := s.(*ingress.DataCSVWriter); ok {
					// --data-ingress: the split protocol's CSV
					w.SetSplit()
				}
			}
			if err := p.SetSplit(lridWidth); err != nil {
				return nil, err
			}
		}
		if err := m.SetObserver(h, p); err != nil {
			return nil, err
		}
		ports[h] = p
	}
	return ports, nil
}

// setTraceCSR makes each hart's data port report CSR accesses when its
// encoder traces them (--data-csr).
func setTraceCSR(ports []*sim.DataPort, encs []ingress.Sink) {
	for h, p := range ports {
		if p == nil || h >= len(encs) {
			continue
		}
		e, ok := encs[h].(interface {
			LastSettings() (tracectl.Settings, bool)
		})
		if !ok || dataSinkOf(encs[h]) == nil {
			continue
		}
		if set, ok := e.LastSettings(); ok && set.ETrace.Data != nil && set.ETrace.Data.CSR {
			p.TraceCSR = true
		}
	}
}

// dataStats returns the data trace statistics of the encoders (one per
// hart) whose hart has a data port, summed; ok is false if none has.
func dataStats(encs []ingress.Sink, ports []*sim.DataPort) (st etrace.DataStats, ok bool) {
	for h, e := range encs {
		de, is := e.(interface{ DataStats() etrace.DataStats })
		if !is || h >= len(ports) || ports[h] == nil || dataSinkOf(e) == nil {
			continue
		}
		ds := de.DataStats()
		st.Accesses += ds.Accesses
		st.Bytes += ds.Bytes
		st.Full += ds.Full
		ok = true
	}
	return st, ok
}

// dataFolder returns the first stage of the encoder component enc (an
// ingress sink) whose data trace interface input is ds: a Folder that
// folds the retirements the data port reports once per access (a Zcmp
// push or pop, a cbo.zero: E-Trace's data trace interface) back into one,
// so that the filters and the encoder see each instruction executed once
// (ingress.Folder). multi tells how many accesses the instruction at an
// address makes (Folder.Multi: imageMulti, or hartMulti in a live run);
// an instruction it does not know is waited for until the next block.
func dataFolder(enc ingress.Sink, ds ingress.SplitDataSink, multi func(iaddr uint64) int) *ingress.Folder {
	f := ingress.NewFolder(enc, ds)
	f.Multi = multi
	return f
}

// imageMulti is the Folder.Multi of a trace of the program of image img
// (ingress CSV files): the accesses of the image's instruction at iaddr,
// 0 when the image has none.
func imageMulti(img *image.Set) func(iaddr uint64) int {
	return func(iaddr uint64) int {
		if in := img.InstPtr(iaddr); in != nil {
			return etrace.DataAccesses(in)
		}
		return 0
	}
}

// hartMulti is the Folder.Multi of hart h of a live run, whose program
// image is img: the accesses of the instruction the hart ran at iaddr,
// read from its memory through its translation in its privilege as the
// block is reported (its retirements come together, right after it
// ran), and decoded with the hart's extensions (img's: the simulator's
// come from the same Tag_RISCV_arch); 0 when it cannot be read. Not
// the image's instruction: wherever the hart does not run the ELF's
// bytes at the ELF's addresses (code it wrote, code at virtual
// addresses) the image would give another count, and a count below the
// instruction's (a store where the hart ran a cbo.zero) would pass its
// repeated retirements on as instructions executed.
func hartMulti(mem codeReader, priv func() ingress.Priv, h int, img *image.Set) func(iaddr uint64) int {
	var b [2]byte
	xlen, ext := img.XLEN(), img.Ext()
	return func(iaddr uint64) int {
		p := priv()
		if _, _, ok := mem.PeekCode(h, iaddr, p, b[:]); !ok {
			return 0
		}
		raw := uint32(binary.LittleEndian.Uint16(b[:]))
		if raw&3 == 3 {
			if _, _, ok := mem.PeekCode(h, iaddr+2, p, b[:]); !ok {
				return 0
			}
			raw |= uint32(binary.LittleEndian.Uint16(b[:])) << 16
		}
		in := riscv.DecodeExt(raw, xlen, ext)
		return etrace.DataAccesses(&in)
	}
}

// liveMulti is hartMulti of hart h of machine m.
func liveMulti(m *sim.Machine, h int, img *image.Set) func(iaddr uint64) int {
	return hartMulti(m, func() ingress.Priv { return m.Hart(h).Priv() }, h, img)
}

// portSinks connects the ingress sinks of s (a fanout, or one sink) to
// the data port p: those that take the data trace interface's
// retirements (ingress.Folder, the ingress CSV writer) to its
// instruction side, the others to the hart's own blocks
// (sim.DataPort.IngressSplit).
func portSinks(p *sim.DataPort, s ingress.Sink) ingress.Sink {
	var lit, plain fanout
	var sort func(s ingress.Sink)
	sort = func(s ingress.Sink) {
		switch k := s.(type) {
		case fanout:
			for _, e := range k {
				sort(e)
			}
		case *ingress.Folder, *ingress.CSVWriter:
			lit = append(lit, s)
		default:
			plain = append(plain, s)
		}
	}
	sort(s)
	var l, pl ingress.Sink
	if len(lit) > 0 {
		l = lit.sink()
	}
	if len(plain) > 0 {
		pl = plain.sink()
	}
	return p.IngressSplit(l, pl)
}
