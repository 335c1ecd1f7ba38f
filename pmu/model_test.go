package pmu

import "testing"

func newModel(t *testing.T, c Config) *Model {
	t.Helper()
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	m.SetPriv(1)
	return m
}

// A stride walk touching a new line with every load misses on every
// line, in L1D and in the last level; walking it again hits the last
// level (1 MiB holds 512 KiB) but misses L1D (32 KiB cannot).
func TestStrideWalkMisses(t *testing.T) {
	m := newModel(t, Config{})
	const lines = 8192 // 512 KiB of 64-byte lines
	walk := func() {
		for i := uint64(0); i < lines; i++ {
			m.Retire(0x1000, 4, KindLoad, 0x80000000+64*i, 0x1004, 0)
		}
	}
	walk()
	acc, miss := m.Total(dL1DReadAcc), m.Total(dL1DReadMiss)
	if acc != lines || miss != lines {
		t.Errorf("first walk: %d accesses, %d misses, want %d each", acc, miss, lines)
	}
	if llm := m.Total(dLLReadMiss); llm != lines+1 { // and the instruction line
		t.Errorf("first walk: %d LL misses, want %d", llm, lines+1)
	}
	walk()
	if miss := m.Total(dL1DReadMiss); miss != 2*lines {
		t.Errorf("second walk: L1D misses %d, want %d", miss, 2*lines)
	}
	if llm := m.Total(dLLReadMiss); llm != lines+1 { // and the instruction line
		t.Errorf("second walk: LL misses %d, want still %d (the LL holds the array)", llm, lines+1)
	}
	// every access of a line after the first hits
	m2 := newModel(t, Config{})
	for i := uint64(0); i < 64*8; i += 8 {
		m2.Retire(0x1000, 4, KindLoad, 0x80000000+i, 0x1004, 0)
	}
	if miss := m2.Total(dL1DReadMiss); miss != 8 {
		t.Errorf("sequential 8-byte loads over 8 lines: %d misses, want 8", miss)
	}
	// the next-line prefetcher halves the misses of a sequential walk
	m3 := newModel(t, Config{Prefetch: true})
	for i := uint64(0); i < 1024; i++ {
		m3.Retire(0x1000, 4, KindLoad, 0x90000000+64*i, 0x1004, 0)
	}
	if miss := m3.Total(dL1DReadMiss); miss != 512 {
		t.Errorf("prefetching walk: %d misses, want 512", miss)
	}
}

// Associativity: ways+1 lines mapping to the same set evict each other
// under LRU, ways lines do not.
func TestCacheLRU(t *testing.T) {
	m := newModel(t, Config{})
	setStride := uint64(32 << 10 / 8) // L1D: 32 KiB, 8 ways
	for round := 0; round < 3; round++ {
		for i := uint64(0); i < 8; i++ {
			m.Retire(0x1000, 4, KindLoad, i*setStride, 0x1004, 0)
		}
	}
	if miss := m.Total(dL1DReadMiss); miss != 8 {
		t.Errorf("8 lines in an 8-way set: %d misses, want 8", miss)
	}
	for round := 0; round < 3; round++ {
		for i := uint64(0); i < 9; i++ {
			m.Retire(0x1000, 4, KindLoad, 0x100000+i*setStride, 0x1004, 0)
		}
	}
	if miss := m.Total(dL1DReadMiss) - 8; miss != 27 {
		t.Errorf("9 lines in an 8-way LRU set, 3 rounds: %d misses, want 27", miss)
	}
}

// A loop branch taken n-1 times and then not taken: a bimodal predictor
// mispredicts exactly twice (the first taken, the exit); gshare with h
// bits of history learns it after at most h+1 more.
func TestPredictorLearnsLoop(t *testing.T) {
	loop := func(m *Model, n int) {
		for i := 0; i < n; i++ {
			npc := uint64(0x2000) // taken back
			if i == n-1 {
				npc = 0x2104
			}
			m.Retire(0x2100, 4, KindBranch, 0, npc, 0)
		}
	}
	m := newModel(t, Config{Predictor: PredictorConfig{Entries: 1024, HistoryBits: 0}})
	loop(m, 1000)
	if miss := m.Total(int(HwBranchMisses)); miss != 2 {
		t.Errorf("bimodal: %d mispredictions, want 2", miss)
	}
	if br := m.Total(int(HwBranchInstructions)); br != 1000 {
		t.Errorf("%d branches, want 1000", br)
	}
	g := newModel(t, Config{})
	loop(g, 1000)
	if miss := g.Total(int(HwBranchMisses)); miss < 2 || miss > 2+8+1 {
		t.Errorf("gshare: %d mispredictions, want 2..11", miss)
	}
	// calls and returns: the RAS predicts every return
	r := newModel(t, Config{})
	for i := uint64(0); i < 100; i++ {
		r.Retire(0x3000, 4, KindCall, 0, 0x4000, 0)
		r.Retire(0x4010, 4, KindReturn, 0, 0x3004, 0)
	}
	if miss := r.Total(int(HwBranchMisses)); miss != 0 {
		t.Errorf("calls/returns: %d mispredictions, want 0", miss)
	}
}

// Stalls: a miss to memory costs LLLatency+MemLatency, a mispredict
// MispredictPenalty, and they are counted as back-end/front-end stalls.
func TestStalls(t *testing.T) {
	m := newModel(t, Config{})
	c := m.Config()
	first := m.Retire(0x1000, 4, KindLoad, 0x80000000, 0x1004, 0)
	want := uint64(c.LLLatency+c.MemLatency) * 2 // instruction fetch and data both miss
	if first != want {
		t.Errorf("cold load: %d stall cycles, want %d", first, want)
	}
	if be := m.Total(int(HwStalledCyclesBackend)); be != uint64(c.LLLatency+c.MemLatency) {
		t.Errorf("back-end stalls %d", be)
	}
	if s := m.Retire(0x1004, 4, KindLoad, 0x80000008, 0x1008, 0); s != 0 {
		t.Errorf("hit: %d stall cycles", s)
	}
}

// ParseConfig and the event tables.
func TestParseConfigAndEvents(t *testing.T) {
	c, err := ParseConfig("l1d=16K/4/32,ll=2M/8/64,bp=1024/4/256/16,lat=10/50/30/8,prefetch")
	if err != nil {
		t.Fatal(err)
	}
	if c.L1D.Size != 16<<10 || c.L1D.Ways != 4 || c.L1D.LineSize != 32 || !c.Prefetch || c.Predictor.RASDepth != 16 || c.MemLatency != 50 {
		t.Errorf("parsed %+v", c)
	}
	if _, err := ParseConfig("l1d=3K/4/64"); err == nil {
		t.Error("bad geometry accepted")
	}
	seen := map[string]bool{}
	for _, e := range Events() {
		if seen[e.Name] {
			t.Errorf("duplicate event name %s", e.Name)
		}
		seen[e.Name] = true
		if e.Idx.Type() == TypeCache || e.Idx.Type() == TypeHardware {
			if d := Dense(uint64(e.Idx)); d < 0 || Selector(d) != uint64(e.Idx) {
				t.Errorf("%s: dense round trip", e.Name)
			}
		}
	}
	if Dense(uint64(CacheEvent(CacheL1D, OpRead, ResultMiss))) != dL1DReadMiss {
		t.Error("dense constants disagree with Dense")
	}
}

// The fast paths (Fast.Retire, Step) give the counts and stalls of the
// full path (Retire with Track set) on a random instruction stream.
func TestFastPathsMatchFullPath(t *testing.T) {
	small := Config{
		L1I:       CacheConfig{Size: 512, Ways: 2, LineSize: 32},
		L1D:       CacheConfig{Size: 512, Ways: 2, LineSize: 32},
		LL:        CacheConfig{Size: 4096, Ways: 4, LineSize: 64},
		Predictor: PredictorConfig{Entries: 64, HistoryBits: 3, BTBEntries: 8, RASDepth: 2},
	}
	for _, cfg := range []Config{{}, {Prefetch: true}, small} {
		full, fast := newModel(t, cfg), newModel(t, cfg)
		full.Track = true
		rng := uint64(1)
		rnd := func(n uint64) uint64 {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			return rng % n
		}
		pc := uint64(0x1000)
		var sFull, sFast uint64
		for i := 0; i < 200000; i++ {
			k := Kind(rnd(16))
			size := uint8(2 + 2*rnd(2))
			ea := 0x80000000 + rnd(4)*0x10000 + rnd(64)*8
			npc := pc + uint64(size)
			switch k {
			case KindBranch:
				if rnd(3) == 0 {
					npc = pc - 2*rnd(64)
				}
			case KindJump, KindCall, KindCallIndirect, KindReturn, KindIndirect:
				npc = 0x1000 + 2*rnd(4096)
			}
			sFull += full.Retire(pc, size, k, ea, npc, 0)
			if fk := FastKind(k, size); !fast.Fast.Retire(pc, fk, ea) {
				sFast += fast.Step(pc, fk, ea, npc)
			}
			if rnd(5000) == 0 {
				p := int(rnd(2) * 3)
				full.SetPriv(p)
				fast.SetPriv(p)
			}
			if rnd(20000) == 0 {
				full.FlushICache()
				fast.FlushICache()
			}
			pc = npc
		}
		if sFull != sFast {
			t.Errorf("%+v: stalls %d (full path), %d (fast paths)", cfg, sFull, sFast)
		}
		for p := 0; p < NumPriv; p++ {
			for i := 1; i < NumDense; i++ {
				if a, b := full.Count(p, i), fast.Count(p, i); a != b {
					t.Errorf("%+v: priv %d %s: %d (full path), %d (fast paths)", cfg, p, DenseName(i), a, b)
				}
			}
		}
	}
}
