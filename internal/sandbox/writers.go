package sandbox

import (
	"bytes"
	"context"
	"errors"
)

// errOutputTooLarge is what the guest's write to its result fails with past
// the limit (a command sees it as an I/O error on stdout), and the cause of
// the run's context once it happened.
var errOutputTooLarge = errors.New("output too large")

// cappedWriter collects the result up to max bytes. The first write past max
// fails, marks the writer and calls onOverflow, which stops the run: a guest
// that ignores the error cannot keep the run alive by writing in a loop.
type cappedWriter struct {
	buf        []byte
	max        int
	overflowed bool
	cancel     context.CancelCauseFunc // stops the run
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if len(w.buf)+len(p) > w.max {
		w.overflow()
		return 0, errOutputTooLarge
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// overflow marks the writer overflowed and stops the run, once.
func (w *cappedWriter) overflow() {
	if !w.overflowed {
		w.overflowed = true
		w.cancel(errOutputTooLarge)
	}
}

// maxLineBytes bounds the lines logWriter remembers for error messages.
const maxLineBytes = 512

// logWriter keeps stderr up to max bytes and, whatever the truncation,
// watches every line for what classify needs: the last non-empty line, the
// first "panic:"/"fatal error:" line, and the runtime's out-of-memory report.
// Writes never fail, so a chatty guest is not broken by the cap. Lines the
// guest logs with ward.log come through Write too.
type logWriter struct {
	log       []byte
	max       int
	truncated bool

	line    []byte // the current, unfinished line (up to maxLineBytes)
	last    []byte // last non-empty line
	fatal   string // first line that starts with "panic: " or "fatal error: "
	oomLine string // first line that reports running out of memory
}

func (w *logWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.log); room >= len(p) {
		w.log = append(w.log, p...)
	} else {
		w.log = append(w.log, p[:max(room, 0)]...)
		w.truncated = true
	}

	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.appendLine(rest)
			break
		}
		w.appendLine(rest[:i])
		w.endLine()
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (w *logWriter) appendLine(p []byte) {
	if room := maxLineBytes - len(w.line); room > 0 {
		w.line = append(w.line, p[:min(room, len(p))]...)
	}
}

func (w *logWriter) endLine() {
	line := bytes.TrimSpace(w.line)
	w.line = w.line[:0]
	if len(line) == 0 {
		return
	}
	w.last = append(w.last[:0], line...) // reused: chatty guests write many lines
	if w.fatal == "" && (bytes.HasPrefix(line, []byte("panic: ")) || bytes.HasPrefix(line, []byte("fatal error: "))) {
		w.fatal = string(line)
	}
	if w.oomLine == "" && isOutOfMemory(line) {
		w.oomLine = string(line)
	}
}

// isOutOfMemory recognizes how guests report a failed memory grow: Go's
// runtime ("runtime: out of memory: cannot allocate …", then "fatal error:
// out of memory") and Rust's default allocation error handler.
func isOutOfMemory(line []byte) bool {
	return bytes.HasPrefix(line, []byte("fatal error: out of memory")) ||
		bytes.HasPrefix(line, []byte("runtime: out of memory")) ||
		(bytes.HasPrefix(line, []byte("memory allocation of ")) && bytes.HasSuffix(line, []byte(" failed")))
}

// finish treats an unterminated last line as a line.
func (w *logWriter) finish() {
	if len(w.line) > 0 {
		w.endLine()
	}
}
