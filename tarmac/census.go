package tarmac

import (
	"errors"
	"io"
	"sort"
)

// TagCount is the number of records of one tag and kind in a trace.
type TagCount struct {
	Tag     string // the record tag, "" for none
	Kind    Kind
	Records int
}

// Census is the number of records of each tag and kind of a Tarmac
// trace, as [CountRecords] reads it.
type Census struct {
	// Counts has one entry per tag and kind, most records first, then by
	// tag and kind. A tag can have two kinds ("ES" instructions and "ES
	// EXC" events; an "MCW4___R" coprocessor transfer is other): each
	// record counts under its own kind.
	Counts []TagCount
	// Records is the number of records read; Kinds the number of each
	// kind.
	Records int
	Kinds   [numRecordKinds]int
	// Skipped is the number of malformed lines skipped (lenient only);
	// Errors holds the first MaxKeptErrors of them.
	Skipped int
	Errors  []error
}

// CountRecords reads r to the end and counts its records by tag and
// kind. A malformed line stops it with its *SyntaxError, unless lenient:
// then it is skipped and counted in Skipped.
func CountRecords(r *Reader, lenient bool) (*Census, error) {
	type key struct {
		tag  string
		kind Kind
	}
	counts := map[key]int{}
	c := &Census{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *SyntaxError
			if lenient && errors.As(err, &se) {
				c.Skipped++
				if len(c.Errors) < MaxKeptErrors {
					c.Errors = append(c.Errors, err)
				}
				continue
			}
			return c, err
		}
		counts[key{rec.Tag, rec.Kind}]++
		c.Records++
		c.Kinds[rec.Kind]++
	}
	for k, n := range counts {
		c.Counts = append(c.Counts, TagCount{Tag: k.tag, Kind: k.kind, Records: n})
	}
	sort.Slice(c.Counts, func(i, j int) bool {
		a, b := c.Counts[i], c.Counts[j]
		if a.Records != b.Records {
			return a.Records > b.Records
		}
		if a.Tag != b.Tag {
			return a.Tag < b.Tag
		}
		return a.Kind < b.Kind
	})
	return c, nil
}

// SniffResult is what [Sniff] found at the start of a file.
type SniffResult struct {
	// Tarmac is set when the file starts like a Tarmac trace: most of
	// its first lines are Tarmac records, and one of them at least is
	// an instruction, register, memory, event or flow record or the
	// "Tarmac Text" header.
	Tarmac bool
	// Arm is set when an instruction record of its first lines names an
	// Arm instruction set (A, T, X, O) rather than RV32/RV64.
	Arm bool
}

// Sniff lines read by Sniff: sniffLines to tell Tarmac, sniffArmLines to
// find an instruction record, and at most sniffBytes in all.
const (
	sniffLines    = 64
	sniffArmLines = 4000
	sniffBytes    = 1 << 20
)

// Sniff reads the start of a file (at most 1 MiB) and tells whether it
// is a Tarmac trace, and an Arm one.
func Sniff(r io.Reader) SniffResult {
	var res SniffResult
	tr := NewReader(io.LimitReader(r, sniffBytes), "")
	lines, bad, telling := 0, 0, 0
	for lines < sniffArmLines {
		rec, err := tr.Next()
		if err == io.EOF {
			break
		}
		lines++
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				break
			}
			if lines <= sniffLines {
				bad++
			}
			continue
		}
		if lines <= sniffLines && (rec.Kind != KindOther || rec.Tag == "Tarmac") {
			telling++
		}
		if rec.Kind == KindInst && !rec.FetchFailed {
			res.Arm = isArmISet(rec.ISet)
			break
		}
	}
	n := min(lines, sniffLines)
	res.Tarmac = n > 0 && telling > 0 && bad*4 <= n
	if !res.Tarmac {
		res.Arm = false
	}
	return res
}
