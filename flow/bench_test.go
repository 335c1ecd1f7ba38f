package flow

import "testing"

// BenchmarkStrict measures Strict holding and releasing ranges between
// syncs every 1000 ranges (in memory) and every 100000 (spilling to a
// file); Integrity is measured alongside as the baseline of one sink call.
func BenchmarkStrict(b *testing.B) {
	img, pcs := testImage()
	r := rng(pcs, 0, 8)
	sync := Event{Kind: KindSync, Addr: pcs[0]}
	for _, c := range []struct {
		name  string
		every int
	}{{"sync1000", 1000}, {"sync100000", 100000}} {
		b.Run(c.name, func(b *testing.B) {
			var cnt Counter
			s := Strict(&cnt, img)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%c.every == 0 {
					s.Event(&sync)
				}
				s.Event(&r)
			}
			s.Close()
			if cnt.Instructions != uint64(b.N)*8 {
				b.Fatalf("%d instructions passed, want %d", cnt.Instructions, b.N*8)
			}
		})
	}
	b.Run("integrity", func(b *testing.B) {
		var g Integrity
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			g.Event(&r)
		}
	})
}
