package protocol

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
)

// ntraceAddrRe matches an address field of the N-Trace listing with the
// full address it encodes: "F-ADDR=0x40000012 [0x80000024]".
var ntraceAddrRe = regexp.MustCompile(`([FU]-ADDR=0x[0-9a-f]+ \[)(0x[0-9a-f]+)\]`)

// symWriter adds the symbol of every full address of the N-Trace listing
// written through it: "[0x80000024 <_start+0x24>]".
type symWriter struct {
	w   io.Writer
	sym func(addr uint64) string
	buf []byte
}

func (s *symWriter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if _, err := s.w.Write(s.line(s.buf[:i+1])); err != nil {
			return 0, err
		}
		s.buf = s.buf[i+1:]
	}
}

func (s *symWriter) line(l []byte) []byte {
	return ntraceAddrRe.ReplaceAllFunc(l, func(m []byte) []byte {
		sub := ntraceAddrRe.FindSubmatch(m)
		a, err := strconv.ParseUint(string(sub[2][2:]), 16, 64)
		if err != nil {
			return m
		}
		name := s.sym(a)
		if name == "" {
			return m
		}
		out := append([]byte{}, sub[1]...)
		out = append(out, sub[2]...)
		out = append(out, " <"...)
		out = append(out, name...)
		return append(out, ">]"...)
	})
}

// flush writes a last line without a newline.
func (s *symWriter) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.line(s.buf))
	s.buf = nil
	return err
}
