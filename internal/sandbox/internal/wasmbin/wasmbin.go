// Package wasmbin rewrites WebAssembly binaries before they are compiled, to
// make them cheaper to instantiate and cheap to interrupt:
//
//   - Data merging joins the active data segments of a module into few
//     large ones. Go's linker emits tens of thousands of small segments
//     (31,007 for a 750 KB echo module); wazero evaluates an offset
//     expression and copies each one at every instantiation, which was a
//     third of the cost of a fresh instance.
//   - Yield instrumentation adds a countdown global, decremented at every
//     function entry and loop header, and an imported host function called
//     (and the countdown reset) each time it reaches zero. The host function
//     is where the embedder stops a guest whose time is up. wazero's
//     WithCloseOnContextDone calls into Go at every loop iteration instead,
//     which makes tight loops 10 to 20 times slower. The guest must call
//     into Go now and then all the same: Go cannot preempt a goroutine that
//     is running JIT code, so a guest that never calls out would hold up the
//     garbage collector's stop-the-world, and with it the whole process.
//
// Rewrite does both in one pass. It refuses (with an error) any module it
// does not fully understand, so that callers can fall back to the original
// bytes; it never panics on malformed input.
package wasmbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Section ids of the WebAssembly binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElem      = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// ErrUnsupported is wrapped by the errors of modules Rewrite cannot handle.
var ErrUnsupported = errors.New("wasmbin: unsupported module")

var magic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// Options selects what Rewrite does.
type Options struct {
	// MergeGap is the largest run of zero bytes between two active data
	// segments that is filled to join them. Zero leaves the data section
	// alone.
	MergeGap int
	// Yield, when set, instruments the module (see the package comment).
	Yield *Yield
}

// Yield describes the host function instrumented code calls.
type Yield struct {
	// Module and Name are the import's names; its type is () -> ().
	Module, Name string
	// Every is how many function entries and loop iterations run between
	// two calls (at least 1).
	Every int32
}

// Stats says what Rewrite did.
type Stats struct {
	SegmentsBefore, SegmentsAfter int
	// Checks is the number of countdown checks inserted: one per function
	// body and one per loop.
	Checks int
}

type section struct {
	id      byte
	payload []byte
}

// Rewrite returns a rewritten copy of wasm. It returns an error wrapping
// ErrUnsupported, and no bytes, when the module uses a construct the rewrite
// does not know.
func Rewrite(wasm []byte, o Options) ([]byte, Stats, error) {
	var st Stats
	secs, err := parseSections(wasm)
	if err != nil {
		return nil, st, err
	}
	var y *yielder
	if o.Yield != nil {
		if y, err = newYielder(secs, *o.Yield); err != nil {
			return nil, st, err
		}
	}
	out := make([]byte, 0, len(wasm)+len(wasm)/16)
	out = append(out, magic...)
	newSegments := -1
	for _, s := range secs {
		payload := s.payload
		switch {
		case s.id == secCustom && y != nil && customName(payload) == "name":
			// Function names are indexed by function: renumbered, they
			// would lie. Only debugging loses them.
			continue
		case y != nil:
			payload, err = y.section(s.id, payload, &st)
		}
		if err == nil && s.id == secData && o.MergeGap > 0 {
			payload, st.SegmentsBefore, st.SegmentsAfter, err = mergeData(payload, o.MergeGap)
			newSegments = st.SegmentsAfter
		}
		if err != nil {
			return nil, st, err
		}
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}
	if newSegments >= 0 {
		// A data count section must match the new number of segments.
		out, err = fixDataCount(out, uint32(newSegments))
		if err != nil {
			return nil, st, err
		}
	}
	return out, st, nil
}

// customName returns the name of a custom section.
func customName(payload []byte) string {
	n, k, err := readU32(payload, 0)
	if err != nil || uint64(k)+uint64(n) > uint64(len(payload)) {
		return ""
	}
	return string(payload[k : k+int(n)])
}

func parseSections(b []byte) ([]section, error) {
	if !bytes.HasPrefix(b, magic) {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary", ErrUnsupported)
	}
	var secs []section
	for p := len(magic); p < len(b); {
		id := b[p]
		size, n, err := readU32(b, p+1)
		if err != nil {
			return nil, err
		}
		start := p + 1 + n
		end := start + int(size)
		if end > len(b) || end < start {
			return nil, fmt.Errorf("%w: section %d runs past the end", ErrUnsupported, id)
		}
		secs = append(secs, section{id: id, payload: b[start:end]})
		p = end
	}
	return secs, nil
}

func fixDataCount(b []byte, count uint32) ([]byte, error) {
	secs, err := parseSections(b)
	if err != nil {
		return nil, err
	}
	found := false
	for i := range secs {
		if secs[i].id == secDataCount {
			found = true
			secs[i].payload = binary.AppendUvarint(nil, uint64(count))
		}
	}
	if !found {
		return b, nil
	}
	out := append([]byte(nil), magic...)
	for _, s := range secs {
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(s.payload)))
		out = append(out, s.payload...)
	}
	return out, nil
}

// errTruncated is what the readers return past the end of their input.
var errTruncated = fmt.Errorf("%w: truncated", ErrUnsupported)

// readU32 reads an unsigned LEB128 of at most 5 bytes at b[p:].
func readU32(b []byte, p int) (uint32, int, error) {
	v, n, err := readULEB(b, p, 5)
	if err != nil {
		return 0, 0, err
	}
	if v > 1<<32-1 {
		return 0, 0, fmt.Errorf("%w: u32 out of range", ErrUnsupported)
	}
	return uint32(v), n, nil
}

// readULEB reads an unsigned LEB128 of at most max bytes.
func readULEB(b []byte, p, max int) (uint64, int, error) {
	var v uint64
	for i := 0; i < max; i++ {
		if p+i >= len(b) || p+i < 0 {
			return 0, 0, errTruncated
		}
		c := b[p+i]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: LEB128 too long", ErrUnsupported)
}

// readSLEB reads a signed LEB128 of at most max bytes.
func readSLEB(b []byte, p, max int) (int64, int, error) {
	var v int64
	var shift uint
	for i := 0; i < max; i++ {
		if p+i >= len(b) || p+i < 0 {
			return 0, 0, errTruncated
		}
		c := b[p+i]
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: LEB128 too long", ErrUnsupported)
}

// skipName skips a vec(byte) name.
func skipName(b []byte, p int) (int, error) {
	n, k, err := readU32(b, p)
	if err != nil {
		return 0, err
	}
	end := p + k + int(n)
	if end > len(b) || end < p {
		return 0, errTruncated
	}
	return end, nil
}

// skipLimits skips table or memory limits.
func skipLimits(b []byte, p int) (int, error) {
	if p >= len(b) {
		return 0, errTruncated
	}
	flag := b[p]
	if flag > 0x07 {
		return 0, fmt.Errorf("%w: limits flag %#x", ErrUnsupported, flag)
	}
	p++
	_, n, err := readULEB(b, p, 10)
	if err != nil {
		return 0, err
	}
	p += n
	if flag&1 != 0 {
		_, n, err := readULEB(b, p, 10)
		if err != nil {
			return 0, err
		}
		p += n
	}
	return p, nil
}

func isValType(c byte) bool {
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}
