package analysis

// rangeTable counts executions of distinct instruction ranges: an
// open-addressing hash table keyed by (start, n, call-tree node), the hot
// path of every profile. Its size is bounded by the number of distinct
// ranges and call paths of the program, not by the length of the trace.
type rangeTable struct {
	slots []rangeSlot
	index []int32 // hash index into slots; -1 when empty
	mask  uint64
}

// rangeSlot is one distinct range executed with one call path (node).
type rangeSlot struct {
	start, last uint64
	n           uint64
	node        *Node
	count       uint64 // executions
	cycles      uint64 // time attributed to its instructions
}

func (t *rangeTable) init() {
	t.index = make([]int32, 1<<12)
	for i := range t.index {
		t.index[i] = -1
	}
	t.mask = uint64(len(t.index) - 1)
}

func hashRange(start, n uint64, node *Node) uint64 {
	h := (start ^ n<<48 ^ uint64(node.id)<<28) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// add counts one execution of the range by node and returns its slot.
func (t *rangeTable) add(start, last, n uint64, node *Node) int32 {
	h := hashRange(start, n, node)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := t.index[i]
		if s < 0 {
			t.slots = append(t.slots, rangeSlot{start: start, last: last, n: n, node: node, count: 1})
			idx := int32(len(t.slots) - 1)
			t.index[i] = idx
			if uint64(len(t.slots))*2 > t.mask {
				t.grow()
			}
			return idx
		}
		sl := &t.slots[s]
		if sl.start == start && sl.n == n && sl.last == last && sl.node == node {
			sl.count++
			return s
		}
	}
}

func (t *rangeTable) grow() {
	t.index = make([]int32, 2*len(t.index))
	for i := range t.index {
		t.index[i] = -1
	}
	t.mask = uint64(len(t.index) - 1)
	for si := range t.slots {
		sl := &t.slots[si]
		for i := hashRange(sl.start, sl.n, sl.node) & t.mask; ; i = (i + 1) & t.mask {
			if t.index[i] < 0 {
				t.index[i] = int32(si)
				break
			}
		}
	}
}
