package sandbox

import (
	"strings"
	"testing"
)

func TestLogWriter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writes    []string
		max       int
		log       string
		truncated bool
		last      string
		fatal     string
		oom       string
	}{
		{
			name:   "lines split across writes",
			writes: []string{"star", "ting\nbad in", "put\n", "\n  \n"},
			max:    100,
			log:    "starting\nbad input\n\n  \n",
			last:   "bad input",
		},
		{
			name:   "unterminated last line",
			writes: []string{"one\ntwo"},
			max:    100,
			log:    "one\ntwo",
			last:   "two",
		},
		{
			name:      "log truncated, lines still seen",
			writes:    []string{"0123456789\n", "panic: boom\n", "\ngoroutine 1 [running]:\n\tmain.go:3\n"},
			max:       12,
			log:       "0123456789\np",
			truncated: true,
			last:      "main.go:3",
			fatal:     "panic: boom",
		},
		{
			name:   "go out of memory",
			writes: []string{"runtime: out of memory: cannot allocate 1048576-byte block (33226752 in use)\n", "fatal error: out of memory\n"},
			max:    1 << 10,
			log:    "runtime: out of memory: cannot allocate 1048576-byte block (33226752 in use)\nfatal error: out of memory\n",
			last:   "fatal error: out of memory",
			fatal:  "fatal error: out of memory",
			oom:    "runtime: out of memory: cannot allocate 1048576-byte block (33226752 in use)",
		},
		{
			name:   "rust allocation failure",
			writes: []string{"memory allocation of 4096 bytes failed\n"},
			max:    1 << 10,
			log:    "memory allocation of 4096 bytes failed\n",
			last:   "memory allocation of 4096 bytes failed",
			oom:    "memory allocation of 4096 bytes failed",
		},
		{
			name:   "long line kept short",
			writes: []string{strings.Repeat("x", 2000) + "\n"},
			max:    1 << 12,
			log:    strings.Repeat("x", 2000) + "\n",
			last:   strings.Repeat("x", maxLineBytes),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &logWriter{max: tc.max}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			w.finish()
			if string(w.log) != tc.log || w.truncated != tc.truncated {
				t.Errorf("log %q (truncated %v), want %q (%v)", w.log, w.truncated, tc.log, tc.truncated)
			}
			if string(w.last) != tc.last || w.fatal != tc.fatal || w.oomLine != tc.oom {
				t.Errorf("last %q fatal %q oom %q, want %q %q %q", w.last, w.fatal, w.oomLine, tc.last, tc.fatal, tc.oom)
			}
		})
	}
}

func TestCappedWriter(t *testing.T) {
	overflows := 0
	w := &cappedWriter{max: 10, cancel: func(error) { overflows++ }}
	for _, s := range []string{"01234", "56789"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	for range 2 {
		if n, err := w.Write([]byte("x")); n != 0 || err == nil {
			t.Fatalf("Write past the cap = %d, %v", n, err)
		}
	}
	if string(w.buf) != "0123456789" || !w.overflowed || overflows != 1 {
		t.Fatalf("buf %q, overflowed %v, onOverflow called %d times", w.buf, w.overflowed, overflows)
	}
}
