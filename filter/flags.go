package filter

import (
	"flag"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// Flags registers --filter and --trigger (both repeatable; see
// Config.Parse and Config.ParseTrigger) on fs. The returned function,
// called after parsing, wraps next in the filter stage, or returns next
// unchanged when no filter or trigger was given.
func Flags(fs *flag.FlagSet) func(next ingress.Sink) (ingress.Sink, error) {
	cfg := ConfigFlags(fs)
	return func(next ingress.Sink) (ingress.Sink, error) {
		c, err := cfg()
		if err != nil {
			return nil, err
		}
		if c.Empty() {
			return next, nil
		}
		return New(&c, next), nil
	}
}

// ConfigFlags registers --filter and --trigger as Flags does; the
// returned function, called after parsing, returns the configuration they
// give.
func ConfigFlags(fs *flag.FlagSet) func() (Config, error) {
	var filters, triggers list
	fs.Var(&filters, "filter", "trace `filter`: conditions separated by ';' (priv=U,S  addr=LO-HI  from=A,to=B  context=V|LO-HI  tval=...  ecause=N,..  interrupt  exception  impdef=V/MASK); repeat for alternatives")
	fs.Var(&triggers, "trigger", "debug-module trigger `actions`: on=ADDR,off=ADDR,notify=ADDR ('|' separates addresses); repeatable")
	return func() (Config, error) {
		var c Config
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
