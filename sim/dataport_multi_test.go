package sim

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// portLog records what a data port's sinks receive: blocks, and for the
// instruction side the accesses and responses in their order among them.
type portLog struct {
	blocks []ingress.Block
	pre    [][]ingress.Access // accesses before each block, since the one before
	cur    []ingress.Access
	evs    []string // everything, in order
}

func (l *portLog) Block(b *ingress.Block) error {
	l.blocks = append(l.blocks, *b)
	l.pre = append(l.pre, l.cur)
	l.cur = nil
	l.evs = append(l.evs, fmt.Sprintf("block %#x+%d %s", b.IAddr, b.IRetire, b.IType))
	return nil
}
func (l *portLog) Close() error { return nil }
func (l *portLog) Access(a *ingress.Access) error {
	l.cur = append(l.cur, *a)
	l.evs = append(l.evs, fmt.Sprintf("access %#x %#x", a.IAddr, a.DAddr))
	return nil
}
func (l *portLog) Response(r *ingress.LoadResponse) error {
	l.evs = append(l.evs, fmt.Sprintf("response %d", r.LID))
	return nil
}

// multiAccesses returns how many accesses the instruction raw makes as
// the simulator executes it: one per register of a Zcmp push or pop's
// list, eight for cbo.zero, else 0 (one or none: not a multi-access
// instruction).
func multiAccesses(raw uint32) int {
	if raw&0xe003 == 0xa002 && raw>>8&0x1f == 0x18 || raw&0xe003 == 0xa002 && raw>>8&0x1f == 0x1a ||
		raw&0xe003 == 0xa002 && raw>>8&0x1f == 0x1e || raw&0xe003 == 0xa002 && raw>>8&0x1f == 0x1c {
		// cm.push (0xb8..), cm.pop (0xba..), cm.popretz (0xbc..), cm.popret (0xbe..)
		return [16]int{4: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13}[raw>>4&15]
	}
	if raw&0xfff07fff == 0x0040200f {
		return 8 // cbo.zero
	}
	return 0
}

// TestDataPortMultiRetire runs the Zcmp and Zicboz test programs with a
// data port and checks its instruction side against E-Trace's "Data Trace
// Interface requirements" and their illustrations: a multi-access
// instruction (a push or pop of several registers, a cbo.zero) retires
// once per access with its address, each retirement after its access;
// the first ends a block of the instructions before it with itype 0, the
// middle ones are single retirements with itype 0, and the last begins the
// rest of the hart's block, with its itype (a cm.popret's: a single
// retirement with itype 13). The hart's own blocks (IngressSplit's plain
// sink) are those of a run without data port, and an ingress.Folder folds
// the port's retirements back into them. In both block modes, with the
// unified and the split protocol.
func TestDataPortMultiRetire(t *testing.T) {
	for _, prog := range []string{"zcmp", "cboz"} {
		for _, xlen := range []int{32, 64} {
			elfPath := filepath.Join(zcmpDir, fmt.Sprintf("%s%d.elf", prog, xlen))
			for _, mode := range []BlockMode{Coalesced, PerInstruction} {
				for _, split := range []bool{false, true} {
					name := fmt.Sprintf("%s%d %s split=%v", prog, xlen, mode, split)
					checkMultiRetire(t, name, elfPath, mode, split, xlen)
				}
			}
		}
	}
}

func checkMultiRetire(t *testing.T, name, elfPath string, mode BlockMode, split bool, xlen int) {
	// the hart's blocks without data port
	ref := &portLog{}
	m, err := New(Config{MaxInstret: 1e5, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(elfPath); err != nil {
		t.Fatal(err)
	}
	m.SetIngress(0, ref)
	if res, err := m.Run(); err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v", name, res.ExitCode, err)
	}
	lit, plain := &portLog{}, &portLog{}
	m, _ = New(Config{MaxInstret: 1e5, Mode: mode})
	if err := m.LoadELF(elfPath); err != nil {
		t.Fatal(err)
	}
	p := NewDataPort(m, lit)
	if split {
		if err := p.SetSplit(2); err != nil {
			t.Fatal(err)
		}
	}
	m.SetObserver(0, p)
	m.SetIngress(0, p.IngressSplit(lit, plain))
	if res, err := m.Run(); err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v", name, res.ExitCode, err)
	}
	if fmt.Sprint(plain.blocks) != fmt.Sprint(ref.blocks) {
		t.Errorf("%s: the plain sink's %d blocks are not the %d of a run without data port", name, len(plain.blocks), len(ref.blocks))
	}
	raw := func(pc uint64) uint32 {
		var b [4]byte
		m.ReadMem(pc, b[:])
		return binary.LittleEndian.Uint32(b[:])
	}
	// walk the hart's blocks and the port's retirements side by side
	k, multis, pops := 0, 0, 0
	for _, h := range plain.blocks {
		if k >= len(lit.blocks) || lit.blocks[k].IAddr != h.IAddr {
			t.Fatalf("%s: retirement %d does not begin the hart's block %#x", name, k, h.IAddr)
		}
		for {
			r := lit.blocks[k]
			if r.LastAddr() == h.LastAddr() && (k+1 == len(lit.blocks) || lit.blocks[k+1].IAddr != r.LastAddr() || r.IType != 0) {
				// the hart's block ends here
				if r.IType != h.IType || r.Cause != h.Cause {
					t.Errorf("%s: the last retirement of the block %#x has itype %s, the hart's %s", name, h.IAddr, r.IType, h.IType)
				}
				k++
				break
			}
			// a multi-access instruction at x, retired again next
			x := r.LastAddr()
			n := multiAccesses(raw(x))
			if r.IType != 0 || n < 2 {
				t.Fatalf("%s: retirement %d (%#x+%d %s) ends at %#x (%#08x), retired again: not a multi-access instruction's",
					name, k, r.IAddr, r.IRetire, r.IType, x, raw(x))
			}
			multis++
			// n retirements: k (ends at x), then n-2 singles, then one
			// beginning at x; each after one access of x
			for i := 0; i < n; i++ {
				q := lit.blocks[k+i]
				nx := 0
				for _, a := range lit.pre[k+i] {
					if a.IAddr == x {
						nx++
					}
				}
				switch {
				case nx != 1:
					t.Errorf("%s: retirement %d of %#x comes after %d of its accesses, want 1", name, i+1, x, nx)
				case i > 0 && q.IAddr != x:
					t.Errorf("%s: retirement %d of %#x begins at %#x", name, i+1, x, q.IAddr)
				case i > 0 && i < n-1 && (q.IRetire != r.IRetire-uint32((x-r.IAddr)/2) || q.IType != 0):
					t.Errorf("%s: retirement %d of %#x is not a single one with itype 0: %#x+%d %s", name, i+1, x, q.IAddr, q.IRetire, q.IType)
				}
			}
			if last := lit.blocks[k+n-1]; raw(x)>>8&0x1d == 0x1c && (last.IRetire != 1 || last.IType != ingress.ITypeReturn) {
				t.Errorf("%s: the last retirement of the pop-return at %#x is %#x+%d %s, want a single one with itype 13", name, x, last.IAddr, last.IRetire, last.IType)
			} else if raw(x)>>8&0x1d == 0x1c {
				pops++
			}
			k += n - 1
		}
	}
	if k != len(lit.blocks) {
		t.Errorf("%s: %d retirements after the hart's last block", name, len(lit.blocks)-k)
	}
	prog := strings.TrimSuffix(filepath.Base(elfPath), fmt.Sprintf("%d.elf", xlen))
	wantMulti := map[string]int{"zcmp": 8, "cboz": 2}[prog]
	if multis < wantMulti || prog == "zcmp" && pops < 2 {
		t.Errorf("%s: %d multi-access instructions (%d pop-returns) retired, want %d", name, multis, pops, wantMulti)
	}
	// folded back: the hart's blocks, every access before its own
	f := &portLog{}
	fo := ingress.NewFolder(f, f)
	for i := range lit.blocks {
		for j := range lit.pre[i] {
			fo.Access(&lit.pre[i][j])
		}
		if err := fo.Block(&lit.blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	fo.Close()
	if fmt.Sprint(f.blocks) != fmt.Sprint(plain.blocks) {
		t.Errorf("%s: the retirements folded are not the hart's blocks", name)
	}
}
