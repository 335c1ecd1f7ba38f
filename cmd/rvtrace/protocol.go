package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// protocol is what the encode, decode, dump and run commands need from a
// trace protocol. Each protocol registers one in its own file (proto_*.go).
// Each hook registers the protocol's own options on the flag set it is
// given and returns a constructor that is called after the flags are
// parsed.
type protocol struct {
	name    string
	summary string
	// encoder: an ingress sink that writes encoded trace to w. img is the
	// program image when one was given (nil otherwise); src is the trace
	// source (hart) number the encoder is for.
	encoder func(fs *flag.FlagSet) func(w io.Writer, img *image.Set, src int) (ingress.Sink, error)
	// decoder: decodes the trace read from r (named name in messages) with
	// the program image into the flow sink.
	decoder func(fs *flag.FlagSet) func(r io.Reader, name string, img *image.Set, sink flow.Sink) error
	// dumper: writes a readable listing of the packets or messages in r.
	dumper func(fs *flag.FlagSet) func(r io.Reader, name string, w io.Writer) error
}

var protocols = map[string]*protocol{}

func registerProtocol(p *protocol) { protocols[p.name] = p }

func protocolNames() string {
	var n []string
	for k := range protocols {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// lookupProtocol finds the protocol a --protocol flag names.
func lookupProtocol(name string) (*protocol, error) {
	p := protocols[name]
	if p == nil {
		return nil, fmt.Errorf("unknown protocol %q (known: %s)", name, protocolNames())
	}
	return p, nil
}

// protocolFromArgs finds the value of --protocol (default "ntrace") in args
// before the flag set is built, because each protocol adds its own flags.
func protocolFromArgs(args []string) string {
	if p := protocolGiven(args); p != "" {
		return p
	}
	return "ntrace"
}

// protocolGiven returns the value of an explicit --protocol flag in args,
// or "".
func protocolGiven(args []string) string {
	for i, a := range args {
		for _, pre := range []string{"--protocol=", "-protocol="} {
			if strings.HasPrefix(a, pre) {
				return a[len(pre):]
			}
		}
		if (a == "--protocol" || a == "-protocol") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
