package wasmbin

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// segment is an active data segment of memory 0 at a constant offset.
type segment struct {
	offset uint32
	init   []byte
}

// mergeData rewrites a data section so that active segments closer than gap
// bytes become one, the bytes between them zero (which they are anyway: the
// memory starts zeroed and no segment covers them). It leaves the section
// alone unless every segment is active, in memory 0, at an i32.const offset,
// and no two segments overlap.
func mergeData(b []byte, gap int) ([]byte, int, int, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return nil, 0, 0, err
	}
	segs := make([]segment, 0, count)
	for range count {
		flag, n, err := readU32(b, p)
		if err != nil {
			return nil, 0, 0, err
		}
		p += n
		switch flag {
		case 0:
		case 2: // explicit memory index: only memory 0 is merged
			mem, n, err := readU32(b, p)
			if err != nil {
				return nil, 0, 0, err
			}
			if mem != 0 {
				return b, int(count), int(count), nil
			}
			p += n
		default: // passive segments are referred to by index: keep the section
			return b, int(count), int(count), nil
		}
		// The offset must be exactly (i32.const N) end.
		if p >= len(b) || b[p] != 0x41 {
			return b, int(count), int(count), nil
		}
		off, n, err := readSLEB(b, p+1, 5)
		if err != nil {
			return nil, 0, 0, err
		}
		p += 1 + n
		if p >= len(b) || b[p] != 0x0b {
			return b, int(count), int(count), nil
		}
		p++
		size, n, err := readU32(b, p)
		if err != nil {
			return nil, 0, 0, err
		}
		p += n
		end := p + int(size)
		if end > len(b) || end < p {
			return nil, 0, 0, errTruncated
		}
		segs = append(segs, segment{offset: uint32(off), init: b[p:end]})
		p = end
	}
	if p != len(b) {
		return nil, 0, 0, fmt.Errorf("%w: trailing bytes in data section", ErrUnsupported)
	}
	// Go's linker emits its sections' segments one section after another,
	// not in address order. Disjoint segments may be applied in any order.
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(a.offset, b.offset) })
	for i := 1; i < len(segs); i++ {
		prev := segs[i-1]
		if uint64(prev.offset)+uint64(len(prev.init)) > uint64(segs[i].offset) {
			return b, len(segs), len(segs), nil
		}
	}

	var merged []segment
	for _, s := range segs {
		if k := len(merged) - 1; k >= 0 {
			last := &merged[k]
			lastEnd := uint64(last.offset) + uint64(len(last.init))
			if uint64(s.offset)-lastEnd <= uint64(gap) {
				// The last merged segment owns a fresh slice (see below), so
				// appending never writes into the input.
				last.init = append(last.init, make([]byte, uint64(s.offset)-lastEnd)...)
				last.init = append(last.init, s.init...)
				continue
			}
		}
		merged = append(merged, segment{offset: s.offset, init: append([]byte(nil), s.init...)})
	}
	out := binary.AppendUvarint(make([]byte, 0, len(b)), uint64(len(merged)))
	for _, s := range merged {
		out = append(out, 0x00, 0x41)
		out = appendSLEB(out, int64(int32(s.offset)))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, uint64(len(s.init)))
		out = append(out, s.init...)
	}
	return out, len(segs), len(merged), nil
}

// appendSLEB appends v as a signed LEB128 (not Go's zig-zag varint).
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
