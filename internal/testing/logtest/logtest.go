// Package logtest is a log destination for tests: what the parts under
// test log, written from any goroutine, read back whole.
package logtest

import (
	"log/slog"
	"strings"
	"sync"
)

// Buffer collects a logger's output; safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger is a text logger writing to l at level and above.
func (l *Buffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: level}))
}
