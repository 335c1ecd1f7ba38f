package parallel

import (
	"bytes"
	"io"
	"testing"
)

// A Tee gives back the bytes read through it by offset, after dropping
// those before a piece.
func TestTee(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	tee := &Tee{R: io.LimitReader(bytes.NewReader(data), 600)}
	buf := make([]byte, 256)
	for n := 0; n < 500; {
		k, err := tee.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if tee.End() != 512 {
		t.Fatalf("End %d after reading 512 bytes", tee.End())
	}
	got := tee.Bytes(10, 300)
	tee.Drop(200)
	if !bytes.Equal(got, data[10:300]) || !bytes.Equal(tee.Bytes(200, 512), data[200:512]) {
		t.Error("bytes kept differ from those read")
	}
	if _, err := io.ReadAll(tee); err != nil || tee.End() != 600 || !bytes.Equal(tee.Bytes(200, 600), data[200:600]) {
		t.Errorf("after reading to the end: End %d, %v", tee.End(), err)
	}
	got[0] ^= 0xff // a copy: the Tee's bytes stay
	tee.Drop(250)
	if !bytes.Equal(tee.Bytes(250, 600), data[250:600]) {
		t.Error("bytes kept differ after a second Drop")
	}
}
