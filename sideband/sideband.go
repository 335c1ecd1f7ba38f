// Package sideband records where each program sat in each address space
// of a traced system, as perf's mmap records do for hardware trace: the
// information a trace decoder needs besides the trace to follow a kernel
// and the processes it runs, which the trace cannot carry (the kernel
// decides where programs are loaded).
//
// A [Recorder] watches the ingress port of every hart while the
// simulator runs ([Recorder.Hart] is a hart's sink). Whenever a context
// (the trace's process ID: the ASID of satp or the scontext value)
// executes from a virtual page it has not executed from before, it
// reads the page's bytes through the hart's translation ([Memory]),
// matches them against the images it was given (ELF files, the kernel's
// raw Image: every 4 KiB of each file) and writes a mapping record:
// hart, context, virtual range, image file and file offset. Pages that
// no image holds byte for byte (code the kernel patched at run time,
// firmware no image was given for) are written as bytes records holding
// the page itself, so that the sideband alone describes all the code the
// trace ran. A page mapped the same way in every address space (a
// global page-table entry, Bare translation or M mode) is recorded once,
// for every context. The pages are matched again, and a record is
// written if their bytes changed, when the code may have changed under
// a context's address:
//   - a write into the physical page (a store, cbo.zero, a device's DMA:
//     [Recorder.CodeWritten]), stamped with the instruction count of
//     the first write;
//   - a translation that now gives another physical page (the kernel
//     remapped the address, or gave the context number to a new
//     process), stamped with the instruction count of the first block
//     that ran from the new page. The hart's translation generation
//     ([Memory.TranslationGen]) tells when a translation may have
//     changed: until it does, a block costs a comparison, and when it
//     does, a lookup of the hart's TLB ([Memory.FetchFrame]) for each
//     page run next; the page is read only when it is another one.
//
// [File.Apply] loads a sideband into an [image.Set]: global records as
// images valid in every context, the others with
// [image.Set.AddContextBytes], so that a decoder following
// [image.Set.ForContext] resolves instructions by (context, address).
// Code that changed while the system ran is loaded as memory valid from
// an instruction count on ([image.Set.AddTimedBytes]). A sideband of
// several harts is loaded as one address space per context that every
// hart's trace follows; it must then hold no change of code (each hart's
// records count its own instructions): [File.Apply] says so otherwise.
//
// # File format
//
// A sideband is a text file, one record per line, fields separated by
// single spaces, numbers in hexadecimal with 0x:
//
//	rvtrace-sideband 3
//	xlen XLEN
//	image ID SIZE SHA256 PATH
//	map HART CTX START END ID OFFSET INSTRET
//	bytes HART CTX START INSTRET HEX
//
// The first line names the format and its version. The xlen line gives
// the harts' register width (0x20 or 0x40), which a decoder needs to
// read the trace's addresses of an RV32 system when no ELF file tells it;
// it comes at most once, and may be missing. An image line
// declares image ID (0, 1, ... in order) as the file PATH (the rest of the
// line) of SIZE bytes with the given SHA-256 (64 hex digits): a reader
// refuses a file that differs. A map line says that hart HART ran in
// context CTX (a number, or * for every context) from [START, END) and
// that those bytes are the bytes of image ID from file offset OFFSET. A
// bytes line gives the bytes at START (HEX, two digits per byte, at most
// 4096 bytes, not crossing a 4 KiB boundary) for context CTX. INSTRET
// says from when the bytes hold, counting the hart's instructions: 0 for
// the first record of an address, and for code that changed while the
// system ran, the number of instructions the hart retired before the
// new bytes could run: before the first write that overwrote the code,
// or before the first block that ran from another physical page after
// the kernel remapped the address (or gave the context number to
// another process). The sideband then has a record for the address with
// a smaller INSTRET before. Records of a hart with the same INSTRET add
// up, the later on top. Each hart has records of its own for all the
// code it ran. Empty lines and lines starting with # are ignored.
//
// Version 2 had no xlen line; version 1 (first line "rvtrace-sideband
// 1") had no HART field either: its records are read as hart 0's.
package sideband

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Magic is the first line of a sideband file.
const Magic = "rvtrace-sideband 3"

// MagicV2 is the first line of a version 2 sideband file (no xlen line),
// which Read accepts too.
const MagicV2 = "rvtrace-sideband 2"

// MagicV1 is the first line of a version 1 sideband file (one hart, no
// HART field), which Read accepts too.
const MagicV1 = "rvtrace-sideband 1"

// PageSize is the granularity of the records the Recorder writes.
const PageSize = 4096

// Image is an image file a sideband refers to.
type Image struct {
	Path   string
	Size   int64
	SHA256 [32]byte
}

// Record is one map or bytes record.
type Record struct {
	Hart    int    // the hart that ran the code
	Global  bool   // valid in every context (CTX *)
	Context uint64 // the context, when not Global
	Start   uint64 // first virtual address
	End     uint64 // first address past the range
	Image   int    // index into File.Images; -1 for a bytes record
	Offset  uint64 // file offset of Start in the image
	Bytes   []byte // a bytes record's contents (End-Start bytes)
	Instret uint64 // the bytes hold from this instruction count on (0: from the start)
	Line    int    // the line the record was read from (0 when not read)
}

// File is a parsed sideband.
type File struct {
	Name    string // the file name, for messages
	XLEN    int    // the harts' register width, 0 when the file does not give it
	Images  []Image
	Records []Record
}

// SyntaxError is an error in a sideband file, at a line.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

// Error formats the error as FILE:LINE: MSG.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// maxLine bounds a line: a bytes record of one page and its fields.
const maxLine = 2*PageSize + 256

// Read parses a sideband from r; name is used in errors. Every error is a
// *SyntaxError naming the line.
func Read(r io.Reader, name string) (*File, error) {
	f := &File{Name: name}
	v1 := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine+1)
	line := 0
	fail := func(format string, a ...any) error {
		return &SyntaxError{File: name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	for sc.Scan() {
		line++
		s := sc.Text()
		if line == 1 {
			if s == MagicV1 {
				v1 = true
				continue
			}
			if s != Magic && s != MagicV2 {
				if strings.HasPrefix(s, "rvtrace-sideband ") {
					return nil, fail("sideband version %q: this rvtrace reads versions 1 to 3 (%q)", clip(s[len("rvtrace-sideband "):]), Magic)
				}
				return nil, fail("not a sideband file: the first line is %q, want %q", clip(s), Magic)
			}
			continue
		}
		if s == "" || s[0] == '#' {
			continue
		}
		kind, rest, _ := strings.Cut(s, " ")
		hart := 0
		if !v1 && (kind == "map" || kind == "bytes") {
			hs, tail, _ := strings.Cut(rest, " ")
			v, err := num(hs)
			if err != nil || v >= maxHarts {
				return nil, fail("%s: invalid HART %q (want a number below %#x)", kind, clip(hs), maxHarts)
			}
			hart, rest = int(v), tail
		}
		switch kind {
		case "xlen":
			v, err := num(rest)
			if err != nil || v != 32 && v != 64 {
				return nil, fail("xlen: invalid XLEN %q (want 0x20 or 0x40)", clip(rest))
			}
			if f.XLEN != 0 {
				return nil, fail("xlen: a second xlen line")
			}
			f.XLEN = int(v)
		case "image":
			fl := strings.SplitN(rest, " ", 4)
			if len(fl) != 4 || fl[3] == "" {
				return nil, fail("image: want ID SIZE SHA256 PATH")
			}
			id, err := num(fl[0])
			if err != nil || id != uint64(len(f.Images)) {
				return nil, fail("image: ID %q: want %#x (images are numbered in order)", fl[0], len(f.Images))
			}
			size, err := num(fl[1])
			if err != nil || size > 1<<62 {
				return nil, fail("image: invalid SIZE %q", fl[1])
			}
			var im Image
			if b, err := hex.DecodeString(fl[2]); err != nil || len(b) != 32 {
				return nil, fail("image: SHA256 %q: want 64 hex digits", clip(fl[2]))
			} else {
				copy(im.SHA256[:], b)
			}
			im.Path, im.Size = fl[3], int64(size)
			f.Images = append(f.Images, im)
		case "map":
			fl := strings.Split(rest, " ")
			if len(fl) != 6 {
				return nil, fail("map: want %sCTX START END ID OFFSET INSTRET, got %d fields", hartField(v1), len(fl))
			}
			rec := Record{Hart: hart}
			if err := ctxField(fl[0], &rec); err != nil {
				return nil, fail("map: %v", err)
			}
			var v [5]uint64
			for i, what := range []string{"START", "END", "ID", "OFFSET", "INSTRET"} {
				var err error
				if v[i], err = num(fl[i+1]); err != nil {
					return nil, fail("map: invalid %s %q", what, clip(fl[i+1]))
				}
			}
			rec.Start, rec.End, rec.Offset, rec.Instret = v[0], v[1], v[3], v[4]
			if rec.End <= rec.Start {
				return nil, fail("map: empty range [%#x, %#x)", rec.Start, rec.End)
			}
			if v[2] >= uint64(len(f.Images)) {
				return nil, fail("map: image %#x is not declared (%d images)", v[2], len(f.Images))
			}
			rec.Image = int(v[2])
			if im := f.Images[rec.Image]; rec.Offset > uint64(im.Size) || rec.End-rec.Start > uint64(im.Size)-rec.Offset+PageSize {
				return nil, fail("map: %#x bytes at offset %#x run past the end of %s (%d bytes)",
					rec.End-rec.Start, rec.Offset, im.Path, im.Size)
			}
			rec.Line = line
			f.Records = append(f.Records, rec)
		case "bytes":
			fl := strings.Split(rest, " ")
			if len(fl) != 4 {
				return nil, fail("bytes: want %sCTX START INSTRET HEX, got %d fields", hartField(v1), len(fl))
			}
			rec := Record{Hart: hart, Image: -1, Line: line}
			if err := ctxField(fl[0], &rec); err != nil {
				return nil, fail("bytes: %v", err)
			}
			var err error
			if rec.Start, err = num(fl[1]); err != nil {
				return nil, fail("bytes: invalid START %q", clip(fl[1]))
			}
			if rec.Instret, err = num(fl[2]); err != nil {
				return nil, fail("bytes: invalid INSTRET %q", clip(fl[2]))
			}
			if rec.Bytes, err = hex.DecodeString(fl[3]); err != nil || len(rec.Bytes) == 0 {
				return nil, fail("bytes: HEX is not an even, non-empty number of hex digits")
			}
			if n := uint64(len(rec.Bytes)); n > PageSize-rec.Start%PageSize {
				return nil, fail("bytes: %d bytes at %#x cross a 4 KiB boundary", n, rec.Start)
			}
			rec.End = rec.Start + uint64(len(rec.Bytes))
			f.Records = append(f.Records, rec)
		default:
			return nil, fail("unknown record %q (want xlen, image, map or bytes)", clip(kind))
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, &SyntaxError{File: name, Line: line + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if line == 0 {
		return nil, &SyntaxError{File: name, Line: 1, Msg: "empty file: want " + Magic}
	}
	return f, nil
}

// maxHarts bounds the HART field.
const maxHarts = 1 << 20

func hartField(v1 bool) string {
	if v1 {
		return ""
	}
	return "HART "
}

// Harts returns the number of harts the records are for: one more than
// the largest HART (1 when there are no records).
func (f *File) Harts() int {
	n := 1
	for i := range f.Records {
		n = max(n, f.Records[i].Hart+1)
	}
	return n
}

func ctxField(s string, r *Record) error {
	if s == "*" {
		r.Global = true
		return nil
	}
	v, err := num(s)
	if err != nil {
		return fmt.Errorf("invalid CTX %q (want a number or *)", clip(s))
	}
	r.Context = v
	return nil
}

// num parses a 0x-prefixed hexadecimal number.
func num(s string) (uint64, error) {
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' {
		return 0, errors.New("want 0x and hexadecimal digits")
	}
	return strconv.ParseUint(s[2:], 16, 64)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Writer writes a sideband file.
type Writer struct {
	w   *bufio.Writer
	err error
}

// NewWriter writes the first line, the xlen line (unless xlen is 0) and
// the image declarations to w.
func NewWriter(w io.Writer, xlen int, images []Image) *Writer {
	sw := &Writer{w: bufio.NewWriterSize(w, 1<<16)}
	fmt.Fprintln(sw.w, Magic)
	if xlen != 0 {
		fmt.Fprintf(sw.w, "xlen %#x\n", xlen)
	}
	for i, im := range images {
		fmt.Fprintf(sw.w, "image %#x %#x %x %s\n", i, im.Size, im.SHA256, im.Path)
	}
	return sw
}

// Write writes one map or bytes record.
func (w *Writer) Write(r *Record) error {
	if w.err != nil {
		return w.err
	}
	ctx := "*"
	if !r.Global {
		ctx = "0x" + strconv.FormatUint(r.Context, 16)
	}
	if r.Image < 0 {
		_, w.err = fmt.Fprintf(w.w, "bytes %#x %s %#x %#x %x\n", r.Hart, ctx, r.Start, r.Instret, r.Bytes)
	} else {
		_, w.err = fmt.Fprintf(w.w, "map %#x %s %#x %#x %#x %#x %#x\n", r.Hart, ctx, r.Start, r.End, r.Image, r.Offset, r.Instret)
	}
	return w.err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}
