package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ward-run/ward/api/reason"

	"github.com/tetratelabs/wazero/sys"
)

// RunError is the error of a run that failed.
type RunError struct {
	// Code is one of the sandbox failure codes of package reason.
	Code    reason.Code
	Message string
	// ExitCode is the guest's exit code when it exited, zero otherwise.
	ExitCode uint32
}

// Error is "sandbox: <code>: <message>".
func (e *RunError) Error() string {
	return "sandbox: " + string(e.Code) + ": " + e.Message
}

// ErrorCode returns the Code of the *RunError in err's chain, or "" if there
// is none.
func ErrorCode(err error) reason.Code {
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
		return &RunError{Code: reason.OutputTooLarge, Message: fmt.Sprintf("output exceeded %d bytes", c.out.max)}
	case runCtx.Err() != nil && errors.Is(cause, ErrClosed):
		return &RunError{Code: reason.Cancelled, Message: "runtime closed"}
	case runCtx.Err() != nil && errors.Is(cause, errTimeLimit):
		return &RunError{Code: reason.Timeout, Message: fmt.Sprintf("run stopped at its time limit of %v", c.lim.time)}
	case runCtx.Err() != nil && errors.Is(cause, context.DeadlineExceeded):
		return &RunError{Code: reason.Timeout, Message: "run stopped at the caller's deadline"}
	case runCtx.Err() != nil:
		return &RunError{Code: reason.Cancelled, Message: "run cancelled"}
	case c.log.oomLine != "" || c.memRefused:
		msg := c.log.oomLine
		if msg == "" {
			msg = "memory grow refused"
		}
		return &RunError{Code: reason.MemoryLimit, ExitCode: exitCode, Message: fmt.Sprintf("%s (limit %d bytes)", msg, c.lim.memory)}
	case len(c.refused) > 0 && (c.failed || errors.Is(err, errModuleFailed) || exitErr != nil || c.log.fatal != ""):
		msg := c.failureMessage(exitErr)
		for _, r := range c.refused {
			if !strings.Contains(msg, r) {
				msg += "; refused: " + r
			}
		}
		return &RunError{Code: reason.NotGranted, Message: msg}
	case c.failed && c.inputRefused:
		// ward.refuse: no attempt can run this input.
		return &RunError{Code: reason.InputRefused, Message: c.failureMessage(nil)}
	case c.failed || errors.Is(err, errModuleFailed):
		// A module that called ward.fail and then exited (an SDK command)
		// failed on its own terms: its exit code says nothing more.
		return &RunError{Code: reason.ModuleError, Message: c.failureMessage(nil)}
	case exitErr != nil:
		return &RunError{Code: reason.Exit, ExitCode: exitCode, Message: c.failureMessage(exitErr)}
	case c.log.fatal != "":
		// A reactor that panics aborts with a trap after printing why.
		return &RunError{Code: reason.Exit, Message: c.log.fatal}
	default:
		// wazero appends a multi-line wasm stack trace; keep the first line.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return &RunError{Code: reason.Trap, Message: msg}
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
