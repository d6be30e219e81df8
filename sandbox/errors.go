package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"
)

// Code says why a run failed. Codes are stable: callers store them (a job's
// failure reason, a DLQ reason) and match on them.
type Code string

// The codes a *RunError carries, in the order a failed run is classified.
const (
	// CodeOutputTooLarge: the guest wrote more than its output limit; the
	// run is stopped as soon as it does.
	CodeOutputTooLarge Code = "output_too_large"
	// CodeCancelled: the context given to Run was cancelled, or the
	// Runtime was closed under the run.
	CodeCancelled Code = "cancelled"
	// CodeTimeout: the run reached its time limit, or the deadline of the
	// context given to Run.
	CodeTimeout Code = "timeout"
	// CodeMemoryLimit: the guest needed more memory than its limit.
	CodeMemoryLimit Code = "memory_limit"
	// CodeNotGranted: the run failed after the guest was refused a
	// capability it was not granted (an HTTP host, a directory); the
	// message names it.
	CodeNotGranted Code = "not_granted"
	// CodeModuleError: the guest reported a failure (ward.fail, or a
	// non-zero result from ward_run); the message is its own.
	CodeModuleError Code = "module_error"
	// CodeExit: the guest exited with a non-zero code, or panicked. The
	// message is the guest's "panic:" or "fatal error:" line if it printed
	// one, otherwise its last non-empty stderr line, followed by the exit
	// code. (A Go reactor that panics aborts with a trap, not an exit: it
	// gets this code, with exit code 0.)
	CodeExit Code = "exit"
	// CodeTrap: any other failure: a WebAssembly trap (unreachable,
	// out-of-bounds access, ...), a failed instantiation.
	CodeTrap Code = "trap"
	// CodeInputTooLarge: the payload is over the module's max_input; the
	// module did not run.
	CodeInputTooLarge Code = "input_too_large"
	// CodeMountUnavailable: a granted directory could not be opened; the
	// module did not run.
	CodeMountUnavailable Code = "mount_unavailable"
)

// RunError is the error of a run that failed.
type RunError struct {
	Code    Code
	Message string
	// ExitCode is the guest's exit code when it exited, zero otherwise.
	ExitCode uint32
}

func (e *RunError) Error() string {
	return "sandbox: " + string(e.Code) + ": " + e.Message
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

// classify turns the error of a run into a *RunError. The cause of runCtx,
// the run's context, says whether the time limit, the caller, an output
// overflow or Close ended it.
func classify(runCtx context.Context, err error, c *call) *RunError {
	var exitCode uint32
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		exitCode = exitErr.ExitCode()
	}
	cause := context.Cause(runCtx)

	switch {
	case c.out.overflowed:
		return &RunError{Code: CodeOutputTooLarge, Message: fmt.Sprintf("output exceeded %d bytes", c.out.max)}
	case runCtx.Err() != nil && errors.Is(cause, ErrClosed):
		return &RunError{Code: CodeCancelled, Message: "runtime closed"}
	case runCtx.Err() != nil && errors.Is(cause, errTimeLimit):
		return &RunError{Code: CodeTimeout, Message: fmt.Sprintf("run stopped at its time limit of %v", c.lim.time)}
	case runCtx.Err() != nil && errors.Is(cause, context.DeadlineExceeded):
		return &RunError{Code: CodeTimeout, Message: "run stopped at the caller's deadline"}
	case runCtx.Err() != nil:
		return &RunError{Code: CodeCancelled, Message: "run cancelled"}
	case c.log.oomLine != "" || c.memRefused:
		msg := c.log.oomLine
		if msg == "" {
			msg = "memory grow refused"
		}
		return &RunError{Code: CodeMemoryLimit, ExitCode: exitCode, Message: fmt.Sprintf("%s (limit %d bytes)", msg, c.lim.memory)}
	case len(c.refused) > 0 && (c.failed || errors.Is(err, errModuleFailed) || exitErr != nil || c.log.fatal != ""):
		msg := c.failureMessage(exitErr)
		for _, r := range c.refused {
			if !strings.Contains(msg, r) {
				msg += "; refused: " + r
			}
		}
		return &RunError{Code: CodeNotGranted, Message: msg}
	case c.failed || errors.Is(err, errModuleFailed):
		// A module that called ward.fail and then exited (an SDK command)
		// failed on its own terms: its exit code says nothing more.
		return &RunError{Code: CodeModuleError, Message: c.failureMessage(nil)}
	case exitErr != nil:
		return &RunError{Code: CodeExit, ExitCode: exitCode, Message: c.failureMessage(exitErr)}
	case c.log.fatal != "":
		// A reactor that panics aborts with a trap after printing why.
		return &RunError{Code: CodeExit, Message: c.log.fatal}
	default:
		// wazero appends a multi-line wasm stack trace; keep the first line.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return &RunError{Code: CodeTrap, Message: msg}
	}
}

// failureMessage is the guest's own word on why it failed: its ward.fail
// message, its panic line, or its last log line.
func (c *call) failureMessage(exitErr *sys.ExitError) string {
	msg := c.failMsg
	if msg == "" {
		msg = c.log.fatal
	}
	if msg == "" {
		msg = string(c.log.last)
	}
	if msg == "" {
		msg = "no message"
	}
	if exitErr != nil {
		msg = fmt.Sprintf("%s (exit code %d)", msg, exitErr.ExitCode())
	}
	return msg
}
