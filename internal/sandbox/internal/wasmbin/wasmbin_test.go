package wasmbin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
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

// testModule imports env.nop (function 0), and defines:
//
//	1 spin:  loops forever
//	2 rec:   calls itself forever (no loop: only the entry check sees it)
//	3 answer: returns 42
//	4 run:   calls answer through the table (call_indirect), after env.nop
//	5 init:  the start function, sets global 0 to 7
//
// Instrumenting it renumbers every function reference but env.nop's.
func testModule() []byte {
	return module(
		section{1, vec([]byte{0x60, 0x00, 0x00}, []byte{0x60, 0x00, 0x01, 0x7f})}, // 0: () -> (), 1: () -> i32
		section{2, vec(append(append(name("env"), name("nop")...), 0x00, 0x00))},
		section{3, vec([]byte{0x00}, []byte{0x00}, []byte{0x01}, []byte{0x01}, []byte{0x00})},
		section{4, vec([]byte{0x70, 0x00, 0x01})},             // a funcref table of 1
		section{6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})}, // global 0, mutable i32
		section{7, vec(append(name("spin"), 0x00, 0x01), append(name("rec"), 0x00, 0x02),
			append(name("run"), 0x00, 0x04), append(name("g"), 0x03, 0x00))},
		section{8, []byte{0x05}},                                    // start: init
		section{9, vec([]byte{0x00, 0x41, 0x00, 0x0b, 0x01, 0x03})}, // table[0] = answer
		section{10, vec(
			body(0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b),             // loop br 0 end end
			body(0x00, 0x10, 0x02, 0x0b),                               // call rec
			body(0x00, 0x41, 0x2a, 0x0b),                               // i32.const 42
			body(0x00, 0x10, 0x00, 0x41, 0x00, 0x11, 0x01, 0x00, 0x0b), // call nop; call_indirect (type 1) table[0]
			body(0x00, 0x41, 0x07, 0x24, 0x00, 0x0b),                   // global.set 0 (i32.const 7)
		)},
		section{0, append(name("name"), 0x01, 0x00)}, // a name section, dropped by the rewrite
	)
}

// hostRuntime is a runtime with env.nop and ward.yield, which stops the
// guest once stop is set.
func hostRuntime(t *testing.T, stop *atomic.Bool, yields *atomic.Int64) wazero.Runtime {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), nil, nil).
		Export("nop").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewHostModuleBuilder("ward").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			yields.Add(1)
			if stop.Load() {
				panic(sys.NewExitError(99))
			}
		}), nil, nil).Export("yield").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestYield(t *testing.T) {
	out, st, err := Rewrite(testModule(), Options{Yield: &Yield{Module: "ward", Name: "yield", Every: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Checks != 6 { // five function entries, one loop
		t.Fatalf("%d checks inserted, want 6", st.Checks)
	}
	var stop atomic.Bool
	var yields atomic.Int64
	rt := hostRuntime(t, &stop, &yields)
	ctx := context.Background()

	// The references still point where they did.
	mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	if g := mod.ExportedGlobal("g").Get(); g != 7 {
		t.Fatalf("the start function set g to %d, want 7", g)
	}
	if res, err := mod.ExportedFunction("run").Call(ctx); err != nil || res[0] != 42 {
		t.Fatalf("run() = %v, %v; want 42", res, err)
	}
	mod.Close(ctx)

	for _, fn := range []string{"spin", "rec"} {
		t.Run(fn, func(t *testing.T) {
			mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Close(ctx)
			before := yields.Load()
			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction(fn).Call(ctx)
				done <- err
			}()
			// The guest calls out while it runs: the garbage collector and
			// the scheduler get their turn.
			deadline := time.Now().Add(30 * time.Second)
			for yields.Load() < before+3 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			stop.Store(true)
			defer stop.Store(false)
			select {
			case err := <-done:
				var exit *sys.ExitError
				if fn == "spin" && (!errors.As(err, &exit) || exit.ExitCode() != 99) {
					t.Fatalf("stopped call returned %v, want exit code 99", err)
				}
				if err == nil {
					t.Fatal("stopped call returned no error")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the yield function did not stop the guest")
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
	yield := &Yield{Module: "ward", Name: "yield", Every: 10}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"not wasm":  []byte("hello world"),
		"truncated": testModule()[:30],
		"no import": module(section{1, vec([]byte{0x60, 0x00, 0x00})}, section{6, vec()}),
		"bad opcode": module(section{1, vec([]byte{0x60, 0x00, 0x00})}, section{2, vec()}, section{3, vec([]byte{0x00})},
			section{6, vec()}, section{10, vec(body(0x00, 0xff, 0x0b))}),
	} {
		if _, _, err := Rewrite(b, Options{MergeGap: 16, Yield: yield}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// FuzzRewrite: whatever the input, Rewrite returns an error or bytes, and
// never panics.
func FuzzRewrite(f *testing.F) {
	f.Add(testModule())
	f.Add(module(section{5, vec([]byte{0x00, 0x01})}, section{11, vec([]byte{0x00, 0x41, 0x0a, 0x0b, 0x01, 'x'})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = Rewrite(b, Options{MergeGap: 1024, Yield: &Yield{Module: "ward", Name: "yield", Every: 1000}})
	})
}
