// Command hostcalls is a reactor that calls a ward host function with
// whatever arguments it is given, for the host functions' fuzz test: the
// test calls the exported call(fn, a, b, c, d) directly.
package main

import "unsafe"

//go:wasmimport ward context_size
func contextSize() int64

//go:wasmimport ward context_read
func contextRead(ptr, n uint32, off int64) int32

//go:wasmimport ward output_write
func outputWrite(ptr, n uint32) int32

//go:wasmimport ward fail
func fail(ptr, n uint32) int32

//go:wasmimport ward log
func log(level, ptr, n uint32) int32

//go:wasmimport ward progress
func progress(percent int32, ptr, n uint32) int32

//go:wasmimport ward job_info
func jobInfo(ptr, capacity uint32) int32

//go:wasmimport ward http_request
func httpRequest(meta, metaLen, body, bodyLen uint32) int32

//go:wasmimport ward response_read
func responseRead(ptr, n, off uint32) int32

//go:wasmimport ward http_read
func httpRead(ptr, n uint32) int32

//go:wasmimport ward stream_write
func streamWrite(ptr, n uint32) int32

//go:wasmimport ward last_error
func lastError(ptr, capacity uint32) int32

// buf gives the fuzzer some guest memory it can point at.
var buf [4096]byte

//go:wasmexport buffer
func buffer() uint32 { return uint32(uintptrOf(&buf[0])) }

//go:wasmexport call
func call(fn uint32, a, b, c, d int64) int64 {
	switch fn % 13 {
	case 0:
		return contextSize()
	case 1:
		return int64(contextRead(uint32(a), uint32(b), c))
	case 2:
		return int64(outputWrite(uint32(a), uint32(b)))
	case 3:
		return int64(fail(uint32(a), uint32(b)))
	case 4:
		return int64(log(uint32(a), uint32(b), uint32(c)))
	case 5:
		return int64(progress(int32(a), uint32(b), uint32(c)))
	case 6:
		return int64(jobInfo(uint32(a), uint32(b)))
	case 7:
		return int64(httpRequest(uint32(a), uint32(b), uint32(c), uint32(d)))
	case 8:
		return int64(responseRead(uint32(a), uint32(b), uint32(c)))
	case 9:
		return int64(lastError(uint32(a), uint32(b)))
	case 10:
		return int64(httpRead(uint32(a), uint32(b)))
	case 11:
		return int64(streamWrite(uint32(a), uint32(b)))
	}
	return 0
}

//go:wasmexport ward_run
func wardRun() int32 { return 0 }

func main() {}

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
