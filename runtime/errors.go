package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// Code says why a run failed. Codes are stable: callers store them (a job's
// failure reason, a DLQ reason) and match on them.
type Code string

// The codes a *RunError carries.
const (
	// CodeTimeout: the run reached its time limit (Input.TimeLimit, or the
	// deadline of the context given to Run).
	CodeTimeout Code = "timeout"
	// CodeCancelled: the context given to Run was cancelled, or the Runtime
	// was closed under the run.
	CodeCancelled Code = "cancelled"
	// CodeMemoryLimit: the guest needed more memory than
	// Config.MemoryLimitBytes.
	CodeMemoryLimit Code = "memory_limit"
	// CodeOutputTooLarge: the guest wrote more than its output limit to
	// stdout; the run is stopped as soon as it does.
	CodeOutputTooLarge Code = "output_too_large"
	// CodeExit: the guest exited with a non-zero code. The message is the
	// guest's "panic:" or "fatal error:" line if it printed one, otherwise
	// its last non-empty stderr line, followed by the exit code.
	CodeExit Code = "exit"
	// CodeTrap: any other failure: a WebAssembly trap (unreachable,
	// out-of-bounds access, ...), a failed instantiation.
	CodeTrap Code = "trap"
)

// RunError is the error of a run that failed.
type RunError struct {
	Code    Code
	Message string
	// ExitCode is the guest's exit code when Code is CodeExit or
	// CodeMemoryLimit, zero otherwise.
	ExitCode uint32
}

func (e *RunError) Error() string {
	return "runtime: " + string(e.Code) + ": " + e.Message
}

// ErrorCode returns the Code of the *RunError in err's chain, or "" if there
// is none.
func ErrorCode(err error) Code {
	var re *RunError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

// classify turns the error of a run into a *RunError. parent is the context
// given to Run, runCtx the one the run used (parent plus the time limit).
// wazero reports a run stopped by its context as an ExitError whose code says
// why; an error without one (a failed instantiation) is put down to the
// context only if the context is done.
func (r *Runtime) classify(parent, runCtx context.Context, err error, stdout *cappedWriter, stderr *logWriter) *RunError {
	var exitCode uint32
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		exitCode = exitErr.ExitCode()
	}

	switch {
	case stdout.overflowed:
		// Checked first: the overflow cancelled runCtx to stop the guest.
		return &RunError{Code: CodeOutputTooLarge, Message: fmt.Sprintf("stdout exceeded %d bytes", stdout.max)}
	case exitCode == exitCodeRuntimeClosed && r.isClosed():
		return &RunError{Code: CodeCancelled, Message: "runtime closed"}
	case exitCode == sys.ExitCodeContextCanceled,
		exitErr == nil && errors.Is(runCtx.Err(), context.Canceled):
		return &RunError{Code: CodeCancelled, Message: "run cancelled"}
	case exitCode == sys.ExitCodeDeadlineExceeded,
		exitErr == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		msg := "run stopped at its time limit"
		if d, ok := parent.Deadline(); ok && !d.After(time.Now()) {
			msg = "run stopped at the caller's deadline"
		}
		return &RunError{Code: CodeTimeout, Message: msg}
	case stderr.oomLine != "":
		return &RunError{Code: CodeMemoryLimit, ExitCode: exitCode,
			Message: fmt.Sprintf("%s (limit %d bytes)", stderr.oomLine, r.memPages*pageSize)}
	case exitErr != nil:
		msg := stderr.fatal
		if msg == "" {
			msg = string(stderr.last)
		}
		if msg == "" {
			msg = "no message on stderr"
		}
		return &RunError{Code: CodeExit, ExitCode: exitCode, Message: fmt.Sprintf("%s (exit code %d)", msg, exitCode)}
	default:
		// wazero appends a multi-line wasm stack trace; keep the first line.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return &RunError{Code: CodeTrap, Message: msg}
	}
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
