// Package wasmbin rewrites WebAssembly binaries before they are compiled, to
// make them cheaper to instantiate and cheap to interrupt:
//
//   - MergeData joins the active data segments of a module into few large
//     ones. Go's linker emits tens of thousands of small segments (31,007
//     for a 750 KB echo module); wazero evaluates an offset expression and
//     copies each one at every instantiation, which was a third of the cost
//     of a fresh instance.
//   - Instrument adds an exported mutable i32 global and, at every function
//     entry and loop header, a check that traps (unreachable) once the global
//     is non-zero. Setting the global from another goroutine stops a guest
//     spinning in a loop for the cost of one load and branch per iteration,
//     where wazero's WithCloseOnContextDone exits to Go on every iteration.
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
	secImport    = 2
	secGlobal    = 6
	secExport    = 7
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
	// segments that MergeData fills to join them. Zero leaves the data
	// section alone.
	MergeGap int
	// InterruptExport, when set, instruments the module (see the package
	// comment) and exports the interrupt global under this name.
	InterruptExport string
}

// Stats says what Rewrite did.
type Stats struct {
	SegmentsBefore, SegmentsAfter int
	// Checks is the number of interrupt checks inserted: one per function
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
	out := make([]byte, 0, len(wasm)+len(wasm)/16)
	out = append(out, magic...)

	var (
		importedGlobals, globalCount uint32
		interruptIdx                 uint32
		haveGlobal, haveExport       bool
		newSegments                  = -1
	)
	if o.InterruptExport != "" {
		for _, s := range secs {
			switch s.id {
			case secImport:
				if importedGlobals, err = countImportedGlobals(s.payload); err != nil {
					return nil, st, err
				}
			case secGlobal:
				haveGlobal = true
				n, _, err := readU32(s.payload, 0)
				if err != nil {
					return nil, st, err
				}
				globalCount = n
			case secExport:
				haveExport = true
			}
		}
		if !haveGlobal || !haveExport {
			return nil, st, fmt.Errorf("%w: no global or export section to extend", ErrUnsupported)
		}
		interruptIdx = importedGlobals + globalCount
	}

	for _, s := range secs {
		payload := s.payload
		switch {
		case s.id == secGlobal && o.InterruptExport != "":
			payload, err = appendGlobal(payload)
		case s.id == secExport && o.InterruptExport != "":
			payload, err = appendExport(payload, o.InterruptExport, interruptIdx)
		case s.id == secCode && o.InterruptExport != "":
			payload, st.Checks, err = instrumentCode(payload, interruptIdx)
		case s.id == secData && o.MergeGap > 0:
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

func countImportedGlobals(b []byte) (uint32, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return 0, err
	}
	var globals uint32
	for range count {
		if p, err = skipName(b, p); err != nil {
			return 0, err
		}
		if p, err = skipName(b, p); err != nil {
			return 0, err
		}
		if p >= len(b) {
			return 0, errTruncated
		}
		kind := b[p]
		p++
		switch kind {
		case 0x00, 0x04: // function: type index; tag: attribute and type index
			if kind == 0x04 {
				p++
			}
			_, n, err := readU32(b, p)
			if err != nil {
				return 0, err
			}
			p += n
		case 0x01: // table: reftype and limits
			p++
			if p, err = skipLimits(b, p); err != nil {
				return 0, err
			}
		case 0x02: // memory
			if p, err = skipLimits(b, p); err != nil {
				return 0, err
			}
		case 0x03: // global: valtype and mutability
			if p+1 >= len(b) || !isValType(b[p]) {
				return 0, fmt.Errorf("%w: imported global type", ErrUnsupported)
			}
			p += 2
			globals++
		default:
			return 0, fmt.Errorf("%w: import kind %#x", ErrUnsupported, kind)
		}
	}
	return globals, nil
}

// appendGlobal adds (global (mut i32) (i32.const 0)) to a global section.
func appendGlobal(b []byte) ([]byte, error) {
	count, n, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(nil, uint64(count)+1)
	out = append(out, b[n:]...)
	return append(out, 0x7f, 0x01, 0x41, 0x00, 0x0b), nil
}

// appendExport adds an export of global idx under name, which must be free.
func appendExport(b []byte, name string, idx uint32) ([]byte, error) {
	count, hdr, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	p := hdr
	for range count {
		l, n, err := readU32(b, p)
		if err != nil {
			return nil, err
		}
		start := p + n
		end := start + int(l)
		if end+1 > len(b) || end < start {
			return nil, errTruncated
		}
		if string(b[start:end]) == name {
			return nil, fmt.Errorf("%w: export %q exists already", ErrUnsupported, name)
		}
		_, n, err = readU32(b, end+1)
		if err != nil {
			return nil, err
		}
		p = end + 1 + n
	}
	if p != len(b) {
		return nil, fmt.Errorf("%w: trailing bytes in export section", ErrUnsupported)
	}
	out := binary.AppendUvarint(nil, uint64(count)+1)
	out = append(out, b[hdr:]...)
	out = binary.AppendUvarint(out, uint64(len(name)))
	out = append(out, name...)
	out = append(out, 0x03)
	return binary.AppendUvarint(out, uint64(idx)), nil
}
