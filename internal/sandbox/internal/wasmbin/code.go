package wasmbin

import "fmt"

// skipInstr returns the offset of the instruction after the one at f[p].
func skipInstr(f []byte, p int) (int, error) {
	op := f[p]
	p++
	u32 := func() error {
		_, n, err := readU32(f, p)
		p += n
		return err
	}
	memarg := func() error {
		align, n, err := readU32(f, p)
		if err != nil {
			return err
		}
		p += n
		if align&0x40 != 0 { // multi-memory: a memory index follows
			if err := u32(); err != nil {
				return err
			}
		}
		_, n, err = readULEB(f, p, 10)
		p += n
		return err
	}
	blocktype := func() error {
		if p >= len(f) {
			return errTruncated
		}
		if c := f[p]; c == 0x40 || isValType(c) {
			p++
			return nil
		}
		v, n, err := readSLEB(f, p, 5)
		if err != nil {
			return err
		}
		if v < 0 {
			return fmt.Errorf("%w: block type %d", ErrUnsupported, v)
		}
		p += n
		return nil
	}
	fixed := func(n int) error {
		if p+n > len(f) {
			return errTruncated
		}
		p += n
		return nil
	}

	var err error
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || op == 0x19 ||
		op == 0x0a || op == 0x1a || op == 0x1b || op == 0xd1 ||
		(op >= 0x45 && op <= 0xc4):
		// No immediate.
	case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06:
		err = blocktype()
	case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x18 || op == 0x0c || op == 0x0d ||
		op == 0x10 || op == 0x12 || op == 0x14 || op == 0x15 ||
		(op >= 0x20 && op <= 0x26) || op == 0xd2:
		err = u32()
	case op == 0x11 || op == 0x13:
		if err = u32(); err == nil {
			err = u32()
		}
	case op == 0x0e: // br_table
		var n uint32
		var k int
		if n, k, err = readU32(f, p); err == nil {
			p += k
			for i := uint32(0); i <= n && err == nil; i++ {
				err = u32()
			}
		}
	case op == 0x1c: // select with types
		var n uint32
		var k int
		if n, k, err = readU32(f, p); err == nil {
			p += k
			for i := uint32(0); i < n && err == nil; i++ {
				if p >= len(f) || !isValType(f[p]) {
					err = fmt.Errorf("%w: select type", ErrUnsupported)
				}
				p++
			}
		}
	case op >= 0x28 && op <= 0x3e:
		err = memarg()
	case op == 0x3f || op == 0x40:
		err = u32()
	case op == 0x41:
		_, k, e := readSLEB(f, p, 5)
		p, err = p+k, e
	case op == 0x42:
		_, k, e := readSLEB(f, p, 10)
		p, err = p+k, e
	case op == 0x43:
		err = fixed(4)
	case op == 0x44:
		err = fixed(8)
	case op == 0xd0: // ref.null reftype
		if p >= len(f) || !isValType(f[p]) {
			err = fmt.Errorf("%w: ref.null type", ErrUnsupported)
		}
		p++
	case op == 0x1f: // try_table blocktype vec(catch)
		if err = blocktype(); err != nil {
			break
		}
		var n uint32
		var k int
		if n, k, err = readU32(f, p); err != nil {
			break
		}
		p += k
		for i := uint32(0); i < n && err == nil; i++ {
			if p >= len(f) {
				err = errTruncated
				break
			}
			kind := f[p]
			p++
			switch kind {
			case 0x00, 0x01:
				if err = u32(); err == nil {
					err = u32()
				}
			case 0x02, 0x03:
				err = u32()
			default:
				err = fmt.Errorf("%w: catch kind %#x", ErrUnsupported, kind)
			}
		}
	case op == 0xfc:
		var sub uint32
		var k int
		if sub, k, err = readU32(f, p); err != nil {
			break
		}
		p += k
		switch {
		case sub <= 7:
		case sub == 8 || sub == 10 || sub == 12 || sub == 14: // two indexes
			if err = u32(); err == nil {
				err = u32()
			}
		case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17):
			err = u32()
		default:
			err = fmt.Errorf("%w: opcode 0xfc %d", ErrUnsupported, sub)
		}
	case op == 0xfd:
		var sub uint32
		var k int
		if sub, k, err = readU32(f, p); err != nil {
			break
		}
		p += k
		switch {
		case sub <= 11 || sub == 92 || sub == 93:
			err = memarg()
		case sub == 12 || sub == 13:
			err = fixed(16)
		case sub >= 21 && sub <= 34:
			err = fixed(1)
		case sub >= 84 && sub <= 91:
			if err = memarg(); err == nil {
				err = fixed(1)
			}
		case sub <= 0x113:
		default:
			err = fmt.Errorf("%w: opcode 0xfd %d", ErrUnsupported, sub)
		}
	case op == 0xfe:
		var sub uint32
		var k int
		if sub, k, err = readU32(f, p); err != nil {
			break
		}
		p += k
		if sub == 0x03 {
			err = fixed(1)
		} else if sub <= 0x4e {
			err = memarg()
		} else {
			err = fmt.Errorf("%w: opcode 0xfe %d", ErrUnsupported, sub)
		}
	default:
		err = fmt.Errorf("%w: opcode %#x", ErrUnsupported, op)
	}
	if err != nil {
		return 0, err
	}
	if p > len(f) {
		return 0, errTruncated
	}
	return p, nil
}
