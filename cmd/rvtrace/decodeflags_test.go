package main

import (
	"bytes"
	"flag"
	"io"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	tproto "github.com/rvtrace/rvtrace/protocol"
)

// fakeProto records the configuration its last decoder was made with and
// decodes every trace to one range.
type fakeProto struct{ last *tproto.Config }

func (*fakeProto) Name() string    { return "fake" }
func (*fakeProto) Summary() string { return "test protocol" }
func (*fakeProto) NewEncoder(io.Writer, *image.Set, *tproto.Config) (ingress.Sink, error) {
	return nil, nil
}
func (f *fakeProto) NewDecoder(_ *image.Set, sink flow.Sink, cfg *tproto.Config) (tproto.Decoder, error) {
	c := *cfg
	f.last = &c
	return fakeDecoder{sink}, nil
}
func (*fakeProto) Dump(io.Reader, io.Writer, *tproto.Config) error { return nil }
func (*fakeProto) Sniff([]byte, *tproto.Config) float64            { return 1 }

type fakeDecoder struct{ sink flow.Sink }

func (d fakeDecoder) Decode(r io.Reader) error {
	io.Copy(io.Discard, r)
	return d.sink.Event(&flow.Event{Kind: flow.KindRange, Start: 0x1000, Last: 0x1000, N: 1})
}

// --allow-truncated reaches the decoder's configuration.
func TestAllowTruncatedFlag(t *testing.T) {
	for _, allow := range []bool{false, true} {
		fake := &fakeProto{}
		p := &protocol{name: "fake", lib: fake}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		df := addDecodeFlags(fs)
		args := []string{}
		if allow {
			args = append(args, "--allow-truncated")
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		config := func(string) (*decodeSetup, error) { return &decodeSetup{cfg: tproto.DefaultConfig()}, nil }
		img := image.NewSet()
		img.AddBytes("x", 0x1000, []byte{0x13, 0, 0, 0})
		var integ flow.Integrity
		err := decodeTrace(&protoChoice{p: p}, config, df, "t.bin", bytes.NewReader([]byte{1, 2, 3}), img, &integ)
		if err != nil {
			t.Fatal(err)
		}
		if fake.last == nil || fake.last.Decode.AllowTruncated != allow {
			t.Errorf("--allow-truncated=%v: decoder configured with %+v", allow, fake.last)
		}
		if integ.Instructions != 1 {
			t.Errorf("decoded %d instructions", integ.Instructions)
		}
	}
}
