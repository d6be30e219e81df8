package sdk

import (
	"fmt"
	"io"
)

// localBackend runs a job in process: RunLocal, and Main natively.
type localBackend struct {
	input  []byte
	output []byte
	stdout io.Writer // when set, the result goes there as it is written
	logTo  io.Writer
	// streamTo receives what the job streams; nothing when nil.
	streamTo io.Writer
	failure  string
	refused  bool // the failure was a Refuse
	jobInfo  Info
}

func (b *localBackend) inputSize() int64 { return int64(len(b.input)) }

func (b *localBackend) readInput(p []byte, off int64) (int, error) {
	if off >= int64(len(b.input)) {
		return 0, nil
	}
	return copy(p, b.input[off:]), nil
}

func (b *localBackend) write(p []byte) error {
	if b.stdout != nil {
		_, err := b.stdout.Write(p)
		return err
	}
	b.output = append(b.output, p...)
	return nil
}

func (b *localBackend) fail(msg string) {
	b.failure = msg
	fmt.Fprintf(b.logTo, "error: %s\n", msg)
}

func (b *localBackend) refuse(msg string) {
	b.refused = true
	b.fail(msg)
}

func (b *localBackend) log(level int, msg string) {
	names := [...]string{"debug", "info", "warn", "error"}
	fmt.Fprintf(b.logTo, "%s: %s\n", names[min(max(level, 0), 3)], msg)
}

func (b *localBackend) progress(percent int, msg string) {
	fmt.Fprintf(b.logTo, "progress: %d%% %s\n", percent, msg)
}

func (b *localBackend) info() Info { return b.jobInfo }

func (b *localBackend) fetch(req *Request) (*Response, error) { return platformFetch(req) }

func (b *localBackend) stream(p []byte) error {
	if b.streamTo != nil {
		_, err := b.streamTo.Write(p)
		return err
	}
	return nil
}
