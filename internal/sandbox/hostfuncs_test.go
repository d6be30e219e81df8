package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// hostCaller drives the ward host functions with arbitrary arguments
// through testdata/hostcalls, a reactor that exports call(fn, a, b, c, d).
type hostCaller struct {
	t    testing.TB
	r    *Runtime
	m    *Module
	inst *instance
	buf  uint32 // address of the guest's 4 KiB buffer
	srv  string // host of an HTTP server the calls are granted
}

func newHostCaller(t testing.TB) *hostCaller {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	r, err := New(context.Background(), Config{CacheDir: wasmtest.CacheDir(t), MaxOutputBytes: 1 << 10, MaxLogBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	m, err := r.Load(context.Background(), wasmtest.BuildReactor(t, "./testdata/hostcalls"), &Manifest{Name: "hostcalls"})
	if err != nil {
		t.Fatal(err)
	}
	h := &hostCaller{t: t, r: r, m: m, srv: u.Host}
	h.reset()
	return h
}

// reset starts a new instance, after the last one broke.
func (h *hostCaller) reset() {
	h.t.Helper()
	if h.inst != nil {
		h.inst.close()
	}
	in := &Input{}
	c := newCall(h.r, context.Background(), func(error) {}, in, h.r.limits(h.m, in))
	inst, err := h.r.instantiate(context.Background(), h.m, c)
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := inst.call(context.Background(), inst.mod.ExportedFunction("buffer"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.inst, h.buf = inst, uint32(res[0])
}

// pointerArgs are, by host function (see testdata/hostcalls), the
// arguments that are guest addresses.
var pointerArgs = map[uint32][]int{1: {0}, 2: {0}, 3: {0}, 4: {1}, 5: {1}, 6: {0}, 7: {0, 2}, 8: {0}, 9: {0}, 10: {0}, 11: {0}}

// do writes data into the guest's buffer, then calls host function fn with
// its address arguments taken as offsets from the buffer (wrapping: any
// 32-bit address is reachable) and the others as they are.
func (h *hostCaller) do(payload, data []byte, fn uint32, a, b, c, d int64) int64 {
	h.t.Helper()
	in := &Input{Payload: payload, Tenant: "fuzz", Grants: Grants{HTTPHosts: []string{h.srv}}}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	call := newCall(h.r, ctx, cancel, in, h.r.limits(h.m, in))
	h.inst.stdout.c, h.inst.stderr.c = call, call
	defer func() { h.inst.stdout.c, h.inst.stderr.c = nil, nil }()
	h.inst.mod.Memory().Write(h.buf, data[:min(len(data), 4096)])
	args := []uint64{uint64(fn), uint64(a), uint64(b), uint64(c), uint64(d)}
	for _, i := range pointerArgs[fn%13] {
		args[1+i] = uint64(int64(h.buf) + int64(args[1+i]))
	}
	res, err := h.inst.mod.ExportedFunction("call").Call(withCall(ctx, call), args...)
	if err != nil {
		// The guest only forwards the call: an error is the host's fault.
		h.t.Fatalf("call(%d, %#x, %#x, %#x, %#x): %v", fn, a, b, c, d, err)
	}
	r := int64(res[0])
	// Every function but context_size returns an i32 (which the guest
	// widens): a count, or a documented errno (ErrnoNoJob..ErrnoInvalid).
	if fn%13 != 0 && (int64(int32(r)) != r || r < ErrnoNoJob) {
		h.t.Fatalf("call(%d, ...) returned %d, not an i32 count or a documented errno", fn, r)
	}
	call.finish()
	if len(call.out.buf) > call.out.max || len(call.log.log) > call.log.max || call.stream.total > call.stream.max {
		h.t.Fatalf("output %d/%d, log %d/%d: over their caps", len(call.out.buf), call.out.max, len(call.log.log), call.log.max)
	}
	return r
}

func httpMeta(u string) []byte {
	b, _ := json.Marshal(httpRequest{Method: "GET", URL: u})
	return b
}

func TestHostFunctions(t *testing.T) {
	h := newHostCaller(t)
	payload := []byte("the job's context")
	msg := []byte("hello")
	for _, tc := range []struct {
		name       string
		data       []byte
		fn         uint32
		a, b, c, d int64
		want       int64
	}{
		{"context_size", nil, 0, 0, 0, 0, 0, int64(len(payload))},
		{"context_read", nil, 1, 0, 100, 0, 0, int64(len(payload))},
		{"context_read past the end", nil, 1, 0, 100, 1 << 40, 0, 0},
		{"context_read negative offset", nil, 1, 0, 100, -1, 0, ErrnoInvalid},
		{"context_read outside memory", nil, 1, 1 << 31, 100, 0, 0, ErrnoInvalid},
		{"output_write", msg, 2, 0, 5, 0, 0, 0},
		{"output_write over the cap", msg, 2, 0, 2 << 10, 0, 0, ErrnoLimit},
		{"output_write outside memory", msg, 2, -int64(1 << 20), 5, 0, 0, ErrnoInvalid},
		{"fail", msg, 3, 0, 5, 0, 0, 0},
		{"log", msg, 4, 1, 0, 5, 0, 0},
		{"log bad level", msg, 4, 9, 0, 5, 0, ErrnoInvalid},
		{"progress", msg, 5, 50, 0, 5, 0, 0},
		{"progress over 100", msg, 5, 101, 0, 0, 0, ErrnoInvalid},
		{"job_info too small", nil, 6, 0, 1, 0, 0, 0},
		{"http_request bad JSON", []byte("{"), 7, 0, 1, 0, 0, ErrnoInvalid},
		{"http_request granted", httpMeta("http://" + h.srv + "/"), 7, 0, int64(len(httpMeta("http://" + h.srv + "/"))), 0, 0, 0},
		{"http_request not granted", httpMeta("http://example.com/"), 7, 0, int64(len(httpMeta("http://example.com/"))), 0, 0, ErrnoNotGranted},
		{"response_read nothing", nil, 8, 0, 10, 0, 0, 0},
		{"last_error", nil, 9, 0, 100, 0, 0, 0},
		{"http_read with nothing open", nil, 10, 0, 100, 0, 0, ErrnoInvalid},
		{"http_read outside memory", nil, 10, 1 << 31, 100, 0, 0, ErrnoInvalid},
		{"stream_write", msg, 11, 0, 5, 0, 0, 0},
		{"stream_write over the cap", msg, 11, 0, 2 << 10, 0, 0, ErrnoLimit},
		{"stream_write outside memory", msg, 11, -int64(1 << 20), 5, 0, 0, ErrnoInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.do(payload, tc.data, tc.fn, tc.a, tc.b, tc.c, tc.d)
			switch {
			case tc.name == "job_info too small" || tc.name == "http_request granted":
				if got <= 0 {
					t.Fatalf("got %d, want a length", got)
				}
			case got != tc.want:
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
	// The response of a granted request reads back whole.
	meta := httpMeta("http://" + h.srv + "/")
	n := h.do(payload, meta, 7, 0, int64(len(meta)), 0, 0)
	if n <= 4 {
		t.Fatalf("http_request: %d", n)
	}
}

// FuzzHostFunctions calls every host function with arbitrary pointers,
// lengths, offsets and memory contents: each call returns a result or a
// documented errno, never panics or corrupts the host, and caps hold.
func FuzzHostFunctions(f *testing.F) {
	h := newHostCaller(f)
	meta := httpMeta("http://" + h.srv + "/")
	f.Add([]byte("ctx"), []byte("hello"), uint32(2), int64(0), int64(5), int64(0), int64(0))
	f.Add([]byte("ctx"), meta, uint32(7), int64(0), int64(len(meta)), int64(100), int64(0))
	f.Add([]byte("ctx"), []byte{}, uint32(1), int64(0), int64(1<<31), int64(-5), int64(0))
	f.Add([]byte("ctx"), []byte("x"), uint32(4), int64(2), int64(0), int64(0), int64(1<<32-1))
	f.Add([]byte(""), []byte("x"), uint32(6), int64(-4096), int64(1<<20), int64(0), int64(0))
	f.Add([]byte(""), []byte("x"), uint32(8), int64(1<<33), int64(7), int64(3), int64(0))
	f.Add([]byte(""), []byte("tokens"), uint32(11), int64(0), int64(6), int64(0), int64(0))
	f.Add([]byte(""), []byte("x"), uint32(10), int64(0), int64(4096), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, payload, data []byte, fn uint32, a, b, c, d int64) {
		h.t = t
		h.do(payload, data, fn, a, b, c, d)
		if h.inst.broken {
			h.reset()
		}
	})
}

func TestErrnoValues(t *testing.T) {
	// The values are the ABI: the SDK and every other guest hard-code them.
	if ErrnoInvalid != -1 || ErrnoNotGranted != -2 || ErrnoLimit != -3 || ErrnoFailed != -4 || ErrnoNoJob != -5 {
		t.Fatal("errno values changed")
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], 7)
	_ = api.EncodeI32(-1)
}
