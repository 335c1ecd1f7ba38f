package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// fuzzConfigs are the configurations the fuzz targets try, selected by the
// first input byte.
func fuzzConfig(sel byte) Config {
	c := DefaultConfig()
	if sel&1 != 0 {
		c.Version = V026
	}
	if sel&2 != 0 {
		c.Options = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
	}
	if sel&4 != 0 {
		c.Options.FullAddress = true
	}
	if sel&8 != 0 {
		c.Encap = EncapUTDD
		c.SrcBits = 6
		c.TimestampBytes = int(sel>>4) & 3
	}
	if sel&0x40 != 0 {
		c.Params.NoContext, c.Params.NoTime = false, false
		c.Params.ContextWidth, c.Params.TimeWidth = 17, 40
	}
	c.Check()
	return c
}

// FuzzPacket checks that the packet parser never panics and that what it
// reads writes back to the same packet.
func FuzzPacket(f *testing.F) {
	f.Add(byte(0), []byte{0x1f, 0x04})
	f.Add(byte(2), []byte{0xbd, 0xaa, 0xaa, 0x68, 0x00, 0x00, 0x20})
	f.Add(byte(1), []byte{0x77, 0x00, 0x00, 0x00, 0x00, 0x81, 0x88, 0x00, 0x00, 0x20})
	f.Fuzz(func(t *testing.T, sel byte, payload []byte) {
		cfg := fuzzConfig(sel)
		c := NewCodec(&cfg)
		var p Packet
		if err := c.Parse(payload, sel&0x80 != 0, &p); err != nil {
			return
		}
		_ = c.String(&p)
		b, err := c.Append(nil, &p)
		if err != nil {
			return // fields read past the end may not fit a layout
		}
		var q Packet
		if err := c.Parse(b, sel&0x80 != 0, &q); err != nil {
			t.Fatalf("re-parse of % x: %v", b, err)
		}
		if q != p {
			t.Fatalf("%s -> % x -> %s", c.String(&p), b, c.String(&q))
		}
	})
}

// fuzzImage is t1's image when the corpus is present, else a small
// program.
func fuzzImage(f *testing.F) *image.Set {
	img := image.NewSet()
	if err := img.AddELF(corpus + "/t1/test.elf"); err == nil {
		return img
	}
	// c.beqz a0,+4; c.j -2; jalr ra; ret; loop
	img.AddBytes("fuzz", 0x20010522, []byte{0x11, 0xc1, 0xfd, 0xbf, 0x82, 0x90, 0x82, 0x80, 0x01, 0xa0})
	return img
}

// FuzzDecode checks that the decoder never panics nor hangs on any byte
// stream, and reports problems as gaps.
func FuzzDecode(f *testing.F) {
	img := fuzzImage(f)
	if _, err := os.Stat(corpus + "/t1/test.elf"); err == nil {
		loadT1Seeds(f)
	}
	f.Add(byte(0), []byte{0x01, 0x1f, 0x05, 0xf3, 0x48, 0x41, 0x00, 0x08, 0x03, 0x01, 0x55, 0xad})
	f.Fuzz(func(t *testing.T, sel byte, data []byte) {
		cfg := fuzzConfig(sel)
		var c flow.Counter
		d, err := NewDecoder(img, &c, cfg)
		if err != nil {
			t.Skip()
		}
		d.MaxSteps, d.MaxWalk = 1<<12, 1<<14
		err1 := d.Decode(bytes.NewReader(data))
		if err1 != nil && !errors.Is(err1, decode.ErrEmpty) && !errors.Is(err1, decode.ErrNoSync) {
			t.Fatal(err1)
		}
		// The same stream read a few bytes at a time decodes the same.
		var c2 flow.Counter
		d, _ = NewDecoder(img, &c2, cfg)
		d.MaxSteps, d.MaxWalk = 1<<12, 1<<14
		if err := d.Decode(&choppyReader{data, rand.New(rand.NewSource(int64(len(data))))}); fmt.Sprint(err) != fmt.Sprint(err1) {
			t.Fatalf("through a reader: %v, in memory: %v", err, err1)
		}
		if c2 != c {
			t.Fatalf("through a reader: %+v, in memory: %+v", c2, c)
		}
	})
}

// loadT1Seeds adds encoded prefixes of t1 as seeds.
func loadT1Seeds(f *testing.F) {
	img, pcs := loadT1(f)
	for _, sel := range []byte{0, 1, 2, 3, 4, 8} {
		cfg := fuzzConfig(sel)
		blocks := genBlocks(f, img, pcs[:3000], genOpts{trapEvery: 300})
		data, _ := encode(f, cfg, nil, blocks)
		f.Add(sel, data)
	}
}
