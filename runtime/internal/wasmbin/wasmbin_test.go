package wasmbin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// module assembles a module from (id, payload) sections.
func module(secs ...section) []byte {
	out := append([]byte(nil), magic...)
	for _, s := range secs {
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(s.payload)))
		out = append(out, s.payload...)
	}
	return out
}

func vec(items ...[]byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func name(s string) []byte { return append(binary.AppendUvarint(nil, uint64(len(s))), s...) }

func body(code ...byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(code))), code...)
}

// spinModule exports "spin", a function that loops forever, and "rec", one
// that calls itself forever (no loop: only the function-entry check stops
// it before the stack runs out).
func spinModule() []byte {
	return module(
		section{1, vec([]byte{0x60, 0x00, 0x00})},             // type 0: () -> ()
		section{3, vec([]byte{0x00}, []byte{0x00})},           // two functions of type 0
		section{6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})}, // a mutable i32 of its own
		section{7, vec(append(name("spin"), 0x00, 0x00), append(name("rec"), 0x00, 0x01))},
		section{10, vec(
			body(0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b), // loop br 0 end end
			body(0x00, 0x10, 0x01, 0x0b),                   // call 1 end
		)},
	)
}

func TestInterrupt(t *testing.T) {
	out, st, err := Rewrite(spinModule(), Options{InterruptExport: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Checks != 3 { // two function entries, one loop
		t.Fatalf("%d checks inserted, want 3", st.Checks)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	for _, fn := range []string{"spin", "rec"} {
		t.Run(fn, func(t *testing.T) {
			mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			stop := mod.ExportedGlobal("stop")
			if stop == nil {
				t.Fatal("no exported interrupt global")
			}
			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction(fn).Call(ctx)
				done <- err
			}()
			stop.(interface{ Set(uint64) }).Set(1)
			select {
			case err := <-done:
				if fn == "spin" && (err == nil || !strings.Contains(err.Error(), "unreachable")) {
					t.Fatalf("interrupted call returned %v, want an unreachable trap", err)
				}
				if err == nil {
					t.Fatal("interrupted call returned no error")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("setting the interrupt global did not stop the guest")
			}
		})
	}
}

func TestMergeData(t *testing.T) {
	seg := func(off int64, data string) []byte {
		b := []byte{0x00, 0x41}
		b = appendSLEB(b, off)
		b = append(b, 0x0b)
		return append(b, name(data)...)
	}
	orig := module(
		section{5, vec([]byte{0x00, 0x01})}, // memory: 1 page
		section{7, vec(append(name("memory"), 0x02, 0x00))},
		section{11, vec(seg(100, "abc"), seg(10, "xy"), seg(105, "zz"), seg(5000, "far"), seg(64, "\x80"))},
	)
	out, st, err := Rewrite(orig, Options{MergeGap: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if st.SegmentsBefore != 5 || st.SegmentsAfter != 2 {
		t.Fatalf("segments %d -> %d, want 5 -> 2", st.SegmentsBefore, st.SegmentsAfter)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	var mems [2][]byte
	for i, b := range [][]byte{orig, out} {
		mod, err := rt.InstantiateWithConfig(ctx, b, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatal(err)
		}
		m, _ := mod.Memory().Read(0, mod.Memory().Size())
		mems[i] = bytes.Clone(m)
		mod.Close(ctx)
	}
	if !bytes.Equal(mems[0], mems[1]) {
		t.Fatal("merged segments initialize the memory differently")
	}

	// Overlapping and passive segments are left as they are.
	for name, data := range map[string][]byte{
		"overlap": vec(seg(10, "abcd"), seg(12, "x")),
		"passive": vec(seg(10, "ab"), append([]byte{0x01}, name("p")...)),
	} {
		_, st, err := Rewrite(module(section{5, vec([]byte{0x00, 0x01})}, section{11, data}), Options{MergeGap: 1024})
		if err != nil || st.SegmentsBefore != st.SegmentsAfter {
			t.Errorf("%s: %+v %v, want the section unchanged", name, st, err)
		}
	}
}

func TestSLEB(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 1 << 20, -(1 << 31), 1<<31 - 1} {
		b := appendSLEB(nil, v)
		got, n, err := readSLEB(b, 0, 10)
		if err != nil || got != v || n != len(b) {
			t.Errorf("%d: encoded % x, read back %d (%d bytes, %v)", v, b, got, n, err)
		}
	}
}

func TestRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":     nil,
		"not wasm":  []byte("hello world"),
		"truncated": spinModule()[:30],
		"no global": module(section{1, vec([]byte{0x60, 0x00, 0x00})}, section{7, vec()}),
		"bad opcode": module(section{1, vec([]byte{0x60, 0x00, 0x00})}, section{3, vec([]byte{0x00})},
			section{6, vec()}, section{7, vec()}, section{10, vec(body(0x00, 0xff, 0x0b))}),
	} {
		if _, _, err := Rewrite(b, Options{MergeGap: 16, InterruptExport: "stop"}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// FuzzRewrite: whatever the input, Rewrite returns an error or bytes, and
// never panics.
func FuzzRewrite(f *testing.F) {
	f.Add(spinModule())
	f.Add(module(section{5, vec([]byte{0x00, 0x01})}, section{11, vec([]byte{0x00, 0x41, 0x0a, 0x0b, 0x01, 'x'})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = Rewrite(b, Options{MergeGap: 1024, InterruptExport: "stop"})
	})
}
