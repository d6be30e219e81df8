// Package sdk is what a Ward worker module is written with: read the job,
// write the result or an error, log, report progress, call HTTP, with types
// for the common payloads.
//
// A module is a Go main package that registers one Handler:
//
//	package main
//
//	import "github.com/ward-run/ward/modules/sdk"
//
//	func init() {
//		sdk.Handle(func(j *sdk.Job) error {
//			in, err := j.Input()
//			if err != nil {
//				return err
//			}
//			_, err = j.Write(in)
//			return err
//		})
//	}
//
//	func main() { sdk.Main() }
//
// Built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared it is a Ward
// reactor: the runtime calls the handler once per job, through the exported
// ward_run, in a fresh or a pooled instance. Built without -buildmode, it
// is a WASI command that runs the handler once. Built natively, Main reads
// the payload from stdin and writes the result to stdout, which is the
// quickest way to try a module; RunLocal does the same in tests.
//
// A handler that returns an error fails its job with the error's message
// (code module_error), and the scheduler may try it again. An error made
// with Refuse says that no attempt can run this input (code
// input_refused): the job fails at once. A panic fails it too (code
// exit), and a pooled instance that panicked is thrown away.
package sdk

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Handler handles one job. It reads the input from j and writes the result
// to j; returning an error fails the job.
type Handler func(j *Job) error

var handler Handler

// Handle registers the module's handler. Call it from an init function, so
// that a reactor has it before its first job.
func Handle(h Handler) { handler = h }

// Main runs the registered handler once, as a WASI command or natively, and
// exits: 0 if it succeeded, 1 if not. In a reactor (-buildmode=c-shared)
// main is never called, and neither is Main.
func Main() {
	if handler == nil {
		fmt.Fprintln(os.Stderr, "sdk: no handler: call sdk.Handle from an init function")
		os.Exit(2)
	}
	os.Exit(int(serve(mainBackend())))
}

// outBuf buffers the result of the job being served. It is reused from job
// to job: a pooled instance allocating it for each job would spend most of
// its time clearing and collecting it.
var outBuf = bufio.NewWriterSize(nil, 16<<10)

// serve runs the handler for one job on b and returns ward_run's result.
func serve(b backend) int32 {
	j := &Job{b: b, out: outBuf}
	j.out.Reset(outputWriter{b})
	err := handler(j)
	if ferr := j.out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		if IsRefused(err) {
			b.refuse(err.Error())
		} else {
			b.fail(err.Error())
		}
		return 1
	}
	return 0
}

// Refuse marks err as a refusal of the job's input: no attempt can run it
// (a malformed request, a directory the job was not granted), so the job
// fails at once with code input_refused instead of being tried again. Say
// in err what the submitter should change. Refuse(nil) is nil.
func Refuse(err error) error {
	if err == nil {
		return nil
	}
	return &refusedError{err}
}

// IsRefused reports whether err, or one it wraps, was made by Refuse.
func IsRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}

type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// RunLocal runs h on input, in process, and returns what it wrote. Tests
// use it to check a module's logic natively, without building wasm.
func RunLocal(h Handler, input []byte, opts ...LocalOption) ([]byte, error) {
	b := &localBackend{input: input, jobInfo: Info{ID: "local", Tenant: "local"}, logTo: io.Discard}
	for _, o := range opts {
		o(b)
	}
	saved := handler
	handler = h
	defer func() { handler = saved }()
	if serve(b) != 0 {
		if b.refused {
			return b.output, Refuse(errors.New(b.failure))
		}
		return b.output, errors.New(b.failure)
	}
	return b.output, nil
}

// LocalOption configures RunLocal.
type LocalOption func(*localBackend)

// WithInfo sets what Job.Info returns under RunLocal.
func WithInfo(info Info) LocalOption { return func(b *localBackend) { b.jobInfo = info } }

// WithLog sends the job's log lines to w under RunLocal.
func WithLog(w io.Writer) LocalOption { return func(b *localBackend) { b.logTo = w } }

// WithStream sends what the job streams (Job.Stream) to w under RunLocal.
func WithStream(w io.Writer) LocalOption { return func(b *localBackend) { b.streamTo = w } }

// Info describes a job.
type Info struct {
	ID      string            `json:"id"`
	Tenant  string            `json:"tenant"`
	Topic   string            `json:"topic"`
	Attempt int               `json:"attempt"`
	Labels  map[string]string `json:"labels"`
	// Mounts are the directories the job may read, read-only.
	Mounts []string `json:"mounts"`
}

// Job is the job a handler runs.
type Job struct {
	b    backend
	out  *bufio.Writer
	info *Info
}

// Info describes the job: its id, tenant, topic, labels and mounts.
func (j *Job) Info() Info {
	if j.info == nil {
		info := j.b.info()
		j.info = &info
	}
	return *j.info
}

// Input returns the job's whole payload.
func (j *Job) Input() ([]byte, error) {
	n := j.b.inputSize()
	buf := make([]byte, n)
	for off := 0; off < len(buf); {
		k, err := j.b.readInput(buf[off:], int64(off))
		if err != nil {
			return nil, err
		}
		if k == 0 {
			return buf[:off], nil
		}
		off += k
	}
	return buf, nil
}

// InputSize is the payload's size in bytes.
func (j *Job) InputSize() int64 { return j.b.inputSize() }

// Reader streams the payload, for inputs too large to hold at once.
func (j *Job) Reader() io.Reader { return io.NewSectionReader(inputReaderAt{j.b}, 0, j.b.inputSize()) }

// DecodeJSON decodes the payload, JSON, into v.
func (j *Job) DecodeJSON(v any) error {
	in, err := j.Input()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(in, v); err != nil {
		return Refuse(fmt.Errorf("input is not the JSON expected: %w", err))
	}
	return nil
}

// Write appends p to the result. Past the job's output limit the write
// fails and the job ends with output_too_large.
func (j *Job) Write(p []byte) (int, error) { return j.out.Write(p) }

// WriteString appends s to the result.
func (j *Job) WriteString(s string) (int, error) { return j.out.WriteString(s) }

// WriteJSON appends v, as JSON, to the result.
func (j *Job) WriteJSON(v any) error {
	enc := json.NewEncoder(j.out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Log levels.
const (
	LevelDebug = 0
	LevelInfo  = 1
	LevelWarn  = 2
	LevelError = 3
)

// Logf logs a line at info level. Lines past the job's log rate or size are
// dropped.
func (j *Job) Logf(format string, args ...any) { j.b.log(LevelInfo, fmt.Sprintf(format, args...)) }

// Warnf logs a line at warn level.
func (j *Job) Warnf(format string, args ...any) { j.b.log(LevelWarn, fmt.Sprintf(format, args...)) }

// Progress reports how far the job is, 0 to 100, with a short message.
// Reports closer together than about 100 ms are coalesced.
func (j *Job) Progress(percent int, message string) { j.b.progress(percent, message) }

// Stream sends text to those following the job (`ward submit --wait`)
// as it is produced, an LLM's tokens say, in order: nothing streamed is
// dropped, though the host may send several writes together. It is not the
// result: write that too. Past the job's output limit in all, Stream fails
// and the job goes on.
func (j *Job) Stream(text string) error { return j.b.stream([]byte(text)) }

// Getenv returns the environment variable key: the job sees only those it
// was granted.
func Getenv(key string) string { return os.Getenv(key) }

// Request is an outbound HTTP request.
type Request struct {
	Method string
	URL    string
	Header map[string][]string
	Body   []byte
}

// Response is an HTTP response.
type Response struct {
	Status int
	Header map[string][]string
	Body   []byte
}

// Fetch sends req. In the sandbox only hosts granted to the job are
// reachable (others fail with ErrNotGranted), redirects to other hosts are
// refused, and the host bounds the time and the response size.
func Fetch(req *Request) (*Response, error) { return platformFetch(req) }

// StreamResponse is an HTTP response whose body is read as it arrives.
type StreamResponse struct {
	Status int
	Header map[string][]string
	// Body reads the body. In the sandbox one body is open at a time: the
	// next Fetch or FetchStream closes it, and so does the end of the job.
	// Each read waits at most the host's HTTP timeout for bytes, and the
	// whole body is capped at its response size.
	Body io.ReadCloser
}

// FetchStream sends req like Fetch, and returns once the status and
// headers have arrived: the body is read as the server sends it (an
// Ollama /api/generate with "stream": true).
func FetchStream(req *Request) (*StreamResponse, error) { return platformFetchStream(req) }

// PostJSON posts in as JSON to url and decodes the JSON answer into out. A
// status other than 2xx is an error.
func PostJSON(url string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := Fetch(&Request{Method: "POST", URL: url, Body: body,
		Header: map[string][]string{"Content-Type": {"application/json"}}})
	if err != nil {
		return err
	}
	if resp.Status/100 != 2 {
		return fmt.Errorf("POST %s: status %d: %.200s", url, resp.Status, resp.Body)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	return nil
}

// ParseChatRequest reads a chat payload: a ChatRequest as JSON, or any
// other text as the message itself.
func ParseChatRequest(in []byte) (ChatRequest, error) {
	var req ChatRequest
	text := strings.TrimSpace(string(in))
	if strings.HasPrefix(text, "{") {
		if err := json.Unmarshal([]byte(text), &req); err != nil {
			return req, fmt.Errorf("chat request: %w", err)
		}
	} else {
		req.Message = text
	}
	if strings.TrimSpace(req.Message) == "" {
		return req, errors.New(`chat request: no message: send {"message": "..."} or plain text`)
	}
	return req, nil
}

// Errors of the host functions; match them with errors.Is.
var (
	ErrInvalid    = errors.New("invalid argument")
	ErrNotGranted = errors.New("not granted")
	ErrLimit      = errors.New("limit reached")
	ErrFailed     = errors.New("failed")
	ErrNoJob      = errors.New("no job")
)

// HostError is an error a host function returned.
type HostError struct {
	Op      string // the host function
	Errno   int32
	Message string // the host's explanation
}

func (e *HostError) Error() string { return e.Message }

// Unwrap returns the sentinel of the error's class.
func (e *HostError) Unwrap() error {
	switch e.Errno {
	case -1:
		return ErrInvalid
	case -2:
		return ErrNotGranted
	case -3:
		return ErrLimit
	case -5:
		return ErrNoJob
	}
	return ErrFailed
}

// backend is what a Job runs on: the ward host functions, or a local
// stand-in.
type backend interface {
	inputSize() int64
	readInput(p []byte, off int64) (int, error)
	write(p []byte) error
	fail(msg string)
	refuse(msg string)
	log(level int, msg string)
	progress(percent int, msg string)
	info() Info
	fetch(req *Request) (*Response, error)
	stream(p []byte) error
}

type outputWriter struct{ b backend }

func (w outputWriter) Write(p []byte) (int, error) {
	if err := w.b.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

type inputReaderAt struct{ b backend }

func (r inputReaderAt) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for len(p) > 0 {
		n, err := r.b.readInput(p, off)
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, io.EOF
		}
		total, off, p = total+n, off+int64(n), p[n:]
	}
	return total, nil
}
