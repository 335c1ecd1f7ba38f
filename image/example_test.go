package image_test

import (
	"fmt"

	"github.com/rvtrace/rvtrace/image"
)

func ExampleSet_Run() {
	s := image.NewSet()
	// addi a0, a0, 1; c.addi a0, 1; beq a0, a1, .+8; c.jr ra
	s.AddBytes("code", 0x8000_0000, []byte{
		0x13, 0x05, 0x15, 0x00,
		0x05, 0x05,
		0x63, 0x04, 0xb5, 0x00,
		0x82, 0x80,
	})
	r, err := s.Run(0x8000_0000)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d instructions, %d halfwords, ends with a %v at %#x; falls through to %#x\n",
		r.N, r.Halfwords, r.Last.Class, r.LastAddr, r.End())

	_, err = s.Run(0x8000_000c)
	fmt.Println(err)
	// Output:
	// 3 instructions, 5 halfwords, ends with a branch at 0x80000006; falls through to 0x8000000a
	// image: run at 0x8000000c: unmapped
}
