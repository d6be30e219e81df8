//go:build wasip1

package sdk

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"unsafe"
)

// The "ward" host functions; see sandbox/README.md for the contract.

//go:wasmimport ward context_size
func wardContextSize() int64

//go:wasmimport ward context_read
//go:noescape
func wardContextRead(ptr unsafe.Pointer, n uint32, off int64) int32

//go:wasmimport ward output_write
//go:noescape
func wardOutputWrite(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward fail
//go:noescape
func wardFail(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward refuse
//go:noescape
func wardRefuse(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward log
//go:noescape
func wardLog(level uint32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward progress
//go:noescape
func wardProgress(percent int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward job_info
//go:noescape
func wardJobInfo(ptr unsafe.Pointer, capacity uint32) int32

//go:wasmimport ward http_request
//go:noescape
func wardHTTPRequest(meta unsafe.Pointer, metaLen uint32, body unsafe.Pointer, bodyLen uint32) int32

//go:wasmimport ward response_read
//go:noescape
func wardResponseRead(ptr unsafe.Pointer, n uint32, off uint32) int32

//go:wasmimport ward http_read
//go:noescape
func wardHTTPRead(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward stream_write
//go:noescape
func wardStreamWrite(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ward last_error
//go:noescape
func wardLastError(ptr unsafe.Pointer, capacity uint32) int32

// ward_run is the reactor's entry point: the runtime calls it once per job.
//
//go:wasmexport ward_run
func wardRun() int32 {
	if handler == nil {
		msg := "sdk: no handler: call sdk.Handle from an init function"
		wardFail(ptr(msg), uint32(len(msg)))
		return 1
	}
	return serve(hostBackend{})
}

func mainBackend() backend { return hostBackend{} }

// ptr returns a pointer to s's bytes, or nil for an empty s.
func ptr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

func bptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// hostErr turns a negative result into a *HostError with the host's message.
func hostErr(op string, errno int32) error {
	buf := make([]byte, 512)
	n := wardLastError(bptr(buf), uint32(len(buf)))
	msg := op + " failed"
	if n > 0 {
		msg = string(buf[:min(int(n), len(buf))])
	}
	return &HostError{Op: op, Errno: errno, Message: msg}
}

// hostBackend is a job in the sandbox.
type hostBackend struct{}

func (hostBackend) inputSize() int64 { return wardContextSize() }

func (hostBackend) readInput(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := wardContextRead(bptr(p), uint32(min(len(p), 1<<30)), off)
	if n < 0 {
		return 0, hostErr("context_read", n)
	}
	return int(n), nil
}

func (hostBackend) write(p []byte) error {
	for len(p) > 0 {
		chunk := p[:min(len(p), 1<<30)]
		if n := wardOutputWrite(bptr(chunk), uint32(len(chunk))); n < 0 {
			return hostErr("output_write", n)
		}
		p = p[len(chunk):]
	}
	return nil
}

func (hostBackend) fail(msg string) { wardFail(ptr(msg), uint32(len(msg))) }

func (hostBackend) refuse(msg string) { wardRefuse(ptr(msg), uint32(len(msg))) }

func (hostBackend) log(level int, msg string) { wardLog(uint32(level), ptr(msg), uint32(len(msg))) }

func (hostBackend) progress(percent int, msg string) {
	wardProgress(int32(min(max(percent, 0), 100)), ptr(msg), uint32(len(msg)))
}

func (hostBackend) info() Info {
	buf := make([]byte, 1024)
	n := wardJobInfo(bptr(buf), uint32(len(buf)))
	if int(n) > len(buf) {
		buf = make([]byte, n)
		n = wardJobInfo(bptr(buf), uint32(len(buf)))
	}
	var info Info
	if n > 0 && int(n) <= len(buf) {
		_ = json.Unmarshal(buf[:n], &info)
	}
	return info
}

func (hostBackend) fetch(req *Request) (*Response, error) { return platformFetch(req) }

func (hostBackend) stream(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if n := wardStreamWrite(bptr(p), uint32(min(len(p), 1<<30))); n < 0 {
		return hostErr("stream_write", n)
	}
	return nil
}

func platformFetch(req *Request) (*Response, error) { return hostFetch(req, false) }

// platformFetchStream sends req with "stream": true: the host returns the
// status and headers, and the body is read as it arrives with http_read.
func platformFetchStream(req *Request) (*StreamResponse, error) {
	resp, err := hostFetch(req, true)
	if err != nil {
		return nil, err
	}
	return &StreamResponse{Status: resp.Status, Header: resp.Header, Body: &hostBody{}}, nil
}

// hostBody reads the streamed body of the last http_request.
type hostBody struct{ closed bool }

func (b *hostBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := wardHTTPRead(bptr(p), uint32(min(len(p), 1<<30)))
	if n < 0 {
		return 0, hostErr("http_read", n)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return int(n), nil
}

// Close marks the body read; the host closes it at the next request or
// when the job ends.
func (b *hostBody) Close() error { b.closed = true; return nil }

func hostFetch(req *Request, stream bool) (*Response, error) {
	meta, err := json.Marshal(struct {
		Method string              `json:"method"`
		URL    string              `json:"url"`
		Header map[string][]string `json:"header,omitempty"`
		Stream bool                `json:"stream,omitempty"`
	}{req.Method, req.URL, req.Header, stream})
	if err != nil {
		return nil, err
	}
	n := wardHTTPRequest(bptr(meta), uint32(len(meta)), bptr(req.Body), uint32(len(req.Body)))
	if n < 0 {
		return nil, hostErr("http_request", n)
	}
	buf := make([]byte, n)
	for off := 0; off < len(buf); {
		k := wardResponseRead(bptr(buf[off:]), uint32(len(buf)-off), uint32(off))
		if k <= 0 {
			return nil, fmt.Errorf("http_request: response cut short")
		}
		off += int(k)
	}
	if len(buf) < 4 {
		return nil, fmt.Errorf("http_request: malformed response")
	}
	hl := binary.LittleEndian.Uint32(buf)
	if uint64(hl) > uint64(len(buf)-4) {
		return nil, fmt.Errorf("http_request: malformed response")
	}
	var head struct {
		Status int                 `json:"status"`
		Header map[string][]string `json:"header"`
	}
	if err := json.Unmarshal(buf[4:4+hl], &head); err != nil {
		return nil, fmt.Errorf("http_request: malformed response: %w", err)
	}
	return &Response{Status: head.Status, Header: head.Header, Body: buf[4+hl:]}, nil
}
