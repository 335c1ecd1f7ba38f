package filter

import (
	"flag"
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// Flags registers --filter, --trigger and --data-filter (all repeatable;
// see Config.Parse, Config.ParseTrigger and Config.ParseData) on fs. The
// returned function, called after parsing, wraps next in the filter
// stage, or returns next unchanged when no filter or trigger was given.
func Flags(fs *flag.FlagSet) func(next ingress.Sink) (ingress.Sink, error) {
	cfg := ConfigFlags(fs)
	return func(next ingress.Sink) (ingress.Sink, error) {
		c, err := cfg()
		if err != nil {
			return nil, err
		}
		if c.HasData() {
			if _, ok := next.(ingress.DataSink); !ok {
				return nil, fmt.Errorf("--data-filter filters the data trace interface's accesses: it needs --data-trace on rvtrace run")
			}
		}
		if c.Empty() {
			return next, nil
		}
		return New(&c, next), nil
	}
}

// ConfigFlags registers --filter, --trigger and --data-filter as Flags
// does; the returned function, called after parsing, returns the
// configuration they give.
func ConfigFlags(fs *flag.FlagSet) func() (Config, error) {
	var filters, triggers list
	fs.Var(&filters, "filter", "trace `filter`: conditions separated by ';' (priv=U,S  addr=LO-HI  from=A,to=B  context=V|LO-HI  tval=...  ecause=N,..  interrupt  exception  impdef=V/MASK); repeat for alternatives")
	fs.Var(&triggers, "trigger", "debug-module trigger `actions`: on=ADDR,off=ADDR,notify=ADDR ('|' separates addresses); repeatable")
	dataf := DataFlag(fs)
	return func() (Config, error) {
		c, err := dataf()
		if err != nil {
			return Config{}, err
		}
		for _, f := range filters {
			if err := c.Parse(f); err != nil {
				return Config{}, err
			}
		}
		for _, t := range triggers {
			if err := c.ParseTrigger(t); err != nil {
				return Config{}, err
			}
		}
		return c, nil
	}
}

// DataFlag registers --data-filter (repeatable; see Config.ParseData) on
// fs, unless another part of the command did. The returned function,
// called after parsing, gives the data filters (a Config with only
// DataComparators and DataFilters set).
func DataFlag(fs *flag.FlagSet) func() (Config, error) {
	f := fs.Lookup("data-filter")
	if f == nil {
		fs.Var(&list{}, "data-filter", "data trace `filter`: conditions separated by ';' (kind=load,store,atomic  priv=U,S  daddr=LO-HI  addr=LO-HI); repeat for alternatives. A decoder must be given the same")
		f = fs.Lookup("data-filter")
	}
	return func() (Config, error) {
		var c Config
		for _, spec := range *f.Value.(*list) {
			if err := c.ParseData(spec); err != nil {
				return c, err
			}
		}
		return c, nil
	}
}
