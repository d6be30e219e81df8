package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"

	"github.com/ward-run/ward/internal/sandbox"
)

// chunks collects what a run streams (Input.Stream).
type chunks struct {
	mu   sync.Mutex // guards the 2 following
	seqs []int
	data []byte
	got  chan struct{} // a token each time a chunk arrives
}

func newChunks() *chunks { return &chunks{got: make(chan struct{}, 1024)} }

func (c *chunks) add(seq int, chunk []byte) {
	c.mu.Lock()
	c.seqs, c.data = append(c.seqs, seq), append(c.data, chunk...)
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
}

func (c *chunks) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.data)
}

// check fails t unless the chunks are numbered 1, 2, ... in order.
func (c *chunks) check(t *testing.T) (string, int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.seqs {
		if s != i+1 {
			t.Fatalf("chunks numbered %v", c.seqs)
		}
	}
	return string(c.data), len(c.seqs)
}

// streamed is what the hostile module streams for "stream" count:size.
func streamed(count, size int) string {
	var b strings.Builder
	for i := range count {
		b.WriteString(strings.Repeat(strconv.Itoa(i%10), size))
	}
	return b.String()
}

// TestStream: every byte a guest streams arrives, in order, in numbered
// chunks, before Run returns; the chunks are few (coalesced) and a guest
// that floods is cut off at its output limit while its run goes on.
func TestStream(t *testing.T) {
	rt := newRuntime(t, sandbox.Config{MaxOutputBytes: 64 << 10})
	for flavour, m := range flavours(t, rt, hostilePkg) {
		t.Run(flavour, func(t *testing.T) {
			// Tokens: 500 writes of 3 bytes.
			c := newChunks()
			out := mustRun(t, rt, m, sandbox.Input{Payload: ask("stream", "500:3"), Tenant: "acme", Stream: c.add})
			data, n := c.check(t)
			if string(out.Data) != "0" || data != streamed(500, 3) {
				t.Fatalf("refused %s; streamed %d bytes, want %d", out.Data, len(data), 500*3)
			}
			// A chunk goes out per 16 KiB or per 50 ms: never one per write.
			if max := int(out.Duration/(50*time.Millisecond)) + 2; n > max {
				t.Errorf("%d chunks for 500 writes in %s (at most %d)", n, out.Duration, max)
			}

			// A flood: 1 MiB in 1 KiB writes, with 64 KiB allowed.
			c = newChunks()
			out = mustRun(t, rt, m, sandbox.Input{Payload: ask("stream", "1024:1024"), Tenant: "acme", Stream: c.add})
			data, n = c.check(t)
			if string(out.Data) != "960" || data != streamed(64, 1024) {
				t.Fatalf("refused %s of 1024 writes; streamed %d bytes, want the first 64 KiB", out.Data, len(data))
			}
			if max := 64/16 + int(out.Duration/(50*time.Millisecond)) + 1; n > max {
				t.Errorf("%d chunks for 64 KiB in %s (at most %d)", n, out.Duration, max)
			}

			// Nobody listening: the writes are taken all the same.
			out = mustRun(t, rt, m, sandbox.Input{Payload: ask("stream", "10:3"), Tenant: "acme"})
			if string(out.Data) != "0" {
				t.Fatalf("refused %s with no listener", out.Data)
			}
		})
	}
}

// TestHTTPStream: a guest reads a response body as the server sends it,
// within the sandbox's bounds: granted hosts only, the response cap, and a
// timeout on each wait for bytes.
func TestHTTPStream(t *testing.T) {
	const lines = 5
	var step chan struct{} // the test lets the server send the next line
	mux := http.NewServeMux()
	mux.HandleFunc("/lines", func(w http.ResponseWriter, r *http.Request) {
		for i := range lines {
			if i > 0 {
				select {
				case <-step:
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Second):
					return
				}
			}
			fmt.Fprintf(w, "line %d\n", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "one line, then nothing")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for range 8 {
			_, _ = w.Write([]byte(strings.Repeat("x", 256)))
			w.(http.Flusher).Flush()
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)

	rt := newRuntime(t, sandbox.Config{HTTP: sandbox.HTTPConfig{MaxResponseBytes: 1 << 10, Timeout: 500 * time.Millisecond}})
	m := reactor(t, rt, hostilePkg, sandbox.Pooled)
	run := func(path string, c *chunks, grants ...string) (*sandbox.Output, error) {
		in := sandbox.Input{Payload: ask("httpstream", srv.URL+path), Tenant: "acme", Grants: sandbox.Grants{HTTPHosts: grants}}
		if c != nil {
			in.Stream = c.add
		}
		return rt.Run(context.Background(), m, in)
	}

	t.Run("as it arrives", func(t *testing.T) {
		// The server sends line i+1 only once line i was streamed on: a
		// guest that waited for the whole body would never get it.
		step = make(chan struct{})
		c := newChunks()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 1; i < lines; i++ {
				deadline := time.After(10 * time.Second)
				for {
					if strings.Contains(c.text(), fmt.Sprintf("line %d\n", i-1)) {
						break
					}
					select {
					case <-c.got:
					case <-deadline:
						return
					}
				}
				step <- struct{}{}
			}
		}()
		out, err := run("/lines", c, u.Host)
		<-done
		if err != nil {
			t.Fatalf("%v (log %q)", err, logOf(out))
		}
		want := "line 0\nline 1\nline 2\nline 3\nline 4\n"
		if data, _ := c.check(t); string(out.Data) != want || data != want {
			t.Fatalf("result %q, streamed %q", out.Data, data)
		}
	})

	for _, tc := range []struct {
		name, path string
		grants     []string
		code       reason.Code
		want       string
	}{
		{"not granted", "/lines", nil, reason.NotGranted, "is not granted"},
		{"a stalled body", "/stall", []string{u.Host}, reason.ModuleError, "no data within the timeout"},
		{"over the response cap", "/big", []string{u.Host}, reason.ModuleError, "response body over 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(tc.path, nil, tc.grants...)
			var re *sandbox.RunError
			if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(re.Message, tc.want) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.want)
			}
		})
	}
}
