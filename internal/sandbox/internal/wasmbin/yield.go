package wasmbin

import (
	"encoding/binary"
	"fmt"
)

// yielder instruments a module: it adds the yield import (a function
// import after the module's own, so every defined function's index grows by
// one), the countdown global, and the checks.
type yielder struct {
	y             Yield
	typeIdx       uint32 // of () -> (); newType when it must be added
	newType       bool
	importedFuncs uint32
	budget        uint32 // the countdown global
	check         []byte
}

// newYielder reads what the instrumentation depends on: the types, imports
// and globals of the module.
func newYielder(secs []section, y Yield) (*yielder, error) {
	if y.Every < 1 {
		y.Every = 1
	}
	yl := &yielder{y: y}
	var haveType, haveImport, haveGlobal bool
	var importedGlobals, globals uint32
	for _, s := range secs {
		var err error
		switch s.id {
		case secType:
			haveType = true
			yl.typeIdx, yl.newType, err = findVoidType(s.payload)
		case secImport:
			haveImport = true
			yl.importedFuncs, importedGlobals, err = countImports(s.payload)
		case secGlobal:
			haveGlobal = true
			globals, _, err = readU32(s.payload, 0)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveType || !haveImport || !haveGlobal {
		return nil, fmt.Errorf("%w: no type, import or global section to extend", ErrUnsupported)
	}
	yl.budget = importedGlobals + globals

	g := binary.AppendUvarint(nil, uint64(yl.budget))
	c := []byte{0x23}
	c = append(c, g...)
	c = append(c, 0x45, 0x04, 0x40, 0x10) // i32.eqz if (empty) call
	c = binary.AppendUvarint(c, uint64(yl.importedFuncs))
	c = append(c, 0x41)
	c = appendSLEB(c, int64(y.Every))
	c = append(c, 0x24)
	c = append(c, g...)
	c = append(c, 0x0b, 0x23) // end global.get
	c = append(c, g...)
	c = append(c, 0x41, 0x01, 0x6b, 0x24) // i32.const 1 i32.sub global.set
	yl.check = append(c, g...)
	return yl, nil
}

// fn maps a function index of the original module to the rewritten one.
func (yl *yielder) fn(i uint32) uint32 {
	if i >= yl.importedFuncs {
		return i + 1
	}
	return i
}

// section rewrites one section.
func (yl *yielder) section(id byte, b []byte, st *Stats) ([]byte, error) {
	switch id {
	case secType:
		if !yl.newType {
			return b, nil
		}
		return appendToVec(b, []byte{0x60, 0x00, 0x00})
	case secImport:
		entry := binary.AppendUvarint(nil, uint64(len(yl.y.Module)))
		entry = append(entry, yl.y.Module...)
		entry = binary.AppendUvarint(entry, uint64(len(yl.y.Name)))
		entry = append(entry, yl.y.Name...)
		entry = append(entry, 0x00)
		entry = binary.AppendUvarint(entry, uint64(yl.typeIdx))
		return appendToVec(b, entry)
	case secGlobal:
		out, err := yl.globals(b)
		if err != nil {
			return nil, err
		}
		g := append([]byte{0x7f, 0x01, 0x41}, appendSLEB(nil, int64(yl.y.Every))...)
		return appendToVec(out, append(g, 0x0b))
	case secExport:
		return yl.exports(b)
	case secStart:
		i, _, err := readU32(b, 0)
		if err != nil {
			return nil, err
		}
		return binary.AppendUvarint(nil, uint64(yl.fn(i))), nil
	case secElem:
		return yl.elems(b)
	case secCode:
		out, n, err := yl.code(b)
		st.Checks = n
		return out, err
	}
	return b, nil
}

// appendToVec adds an entry to a section that is a vector.
func appendToVec(b, entry []byte) ([]byte, error) {
	count, n, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(b)+len(entry)+5), uint64(count)+1)
	out = append(out, b[n:]...)
	return append(out, entry...), nil
}

// findVoidType returns the index of the type () -> (), or the index it
// gets when added.
func findVoidType(b []byte) (uint32, bool, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return 0, false, err
	}
	for i := range count {
		if p >= len(b) || b[p] != 0x60 {
			return 0, false, fmt.Errorf("%w: type %d is not a function type", ErrUnsupported, i)
		}
		start := p
		p++
		for range 2 { // params, results
			n, k, err := readU32(b, p)
			if err != nil {
				return 0, false, err
			}
			p += k
			for range n {
				if p >= len(b) || !isValType(b[p]) {
					return 0, false, fmt.Errorf("%w: value type in type %d", ErrUnsupported, i)
				}
				p++
			}
		}
		if p-start == 3 { // 0x60 0x00 0x00
			return i, false, nil
		}
	}
	return count, true, nil
}

// countImports counts the imported functions and globals.
func countImports(b []byte) (funcs, globals uint32, err error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return 0, 0, err
	}
	for range count {
		if p, err = skipName(b, p); err != nil {
			return 0, 0, err
		}
		if p, err = skipName(b, p); err != nil {
			return 0, 0, err
		}
		if p >= len(b) {
			return 0, 0, errTruncated
		}
		kind := b[p]
		p++
		switch kind {
		case 0x00: // function: type index
			funcs++
			_, n, err := readU32(b, p)
			if err != nil {
				return 0, 0, err
			}
			p += n
		case 0x01: // table: reftype and limits
			p++
			if p, err = skipLimits(b, p); err != nil {
				return 0, 0, err
			}
		case 0x02: // memory
			if p, err = skipLimits(b, p); err != nil {
				return 0, 0, err
			}
		case 0x03: // global: value type and mutability
			if p+1 >= len(b) || !isValType(b[p]) {
				return 0, 0, fmt.Errorf("%w: imported global type", ErrUnsupported)
			}
			p += 2
			globals++
		default:
			return 0, 0, fmt.Errorf("%w: import kind %#x", ErrUnsupported, kind)
		}
	}
	return funcs, globals, nil
}

// globals copies a global section, renumbering ref.func in initializers.
func (yl *yielder) globals(b []byte) ([]byte, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(b)+8), uint64(count))
	for range count {
		if p+2 > len(b) || !isValType(b[p]) {
			return nil, fmt.Errorf("%w: global type", ErrUnsupported)
		}
		out = append(out, b[p], b[p+1])
		if out, p, err = yl.expr(out, b, p+2); err != nil {
			return nil, err
		}
	}
	if p != len(b) {
		return nil, fmt.Errorf("%w: trailing bytes in global section", ErrUnsupported)
	}
	return out, nil
}

// expr copies a constant expression up to its end, renumbering ref.func.
func (yl *yielder) expr(out, b []byte, p int) ([]byte, int, error) {
	for p < len(b) {
		if b[p] == 0x0b {
			return append(out, 0x0b), p + 1, nil
		}
		var err error
		if out, p, err = yl.instr(out, b, p); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, errTruncated
}

// instr copies the instruction at b[p], renumbering the function indexes of
// call, return_call and ref.func.
func (yl *yielder) instr(out, b []byte, p int) ([]byte, int, error) {
	switch op := b[p]; op {
	case 0x10, 0x12, 0xd2:
		i, n, err := readU32(b, p+1)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, op)
		return binary.AppendUvarint(out, uint64(yl.fn(i))), p + 1 + n, nil
	}
	next, err := skipInstr(b, p)
	if err != nil {
		return nil, 0, err
	}
	return append(out, b[p:next]...), next, nil
}

// exports renumbers exported functions.
func (yl *yielder) exports(b []byte) ([]byte, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(b)+8), uint64(count))
	for range count {
		start := p
		if p, err = skipName(b, p); err != nil {
			return nil, err
		}
		if p >= len(b) {
			return nil, errTruncated
		}
		kind := b[p]
		i, n, err := readU32(b, p+1)
		if err != nil {
			return nil, err
		}
		out = append(out, b[start:p+1]...)
		if kind == 0x00 {
			i = yl.fn(i)
		}
		out = binary.AppendUvarint(out, uint64(i))
		p += 1 + n
	}
	if p != len(b) {
		return nil, fmt.Errorf("%w: trailing bytes in export section", ErrUnsupported)
	}
	return out, nil
}

// elems renumbers the functions of element segments, in all eight forms.
func (yl *yielder) elems(b []byte) ([]byte, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(make([]byte, 0, len(b)+8), uint64(count))
	u32 := func() (uint32, error) {
		v, n, err := readU32(b, p)
		p += n
		return v, err
	}
	copyU32 := func() error {
		v, err := u32()
		out = binary.AppendUvarint(out, uint64(v))
		return err
	}
	copyByte := func() error {
		if p >= len(b) {
			return errTruncated
		}
		out = append(out, b[p])
		p++
		return nil
	}
	for range count {
		flags, err := u32()
		if err != nil {
			return nil, err
		}
		if flags > 7 {
			return nil, fmt.Errorf("%w: element segment flags %d", ErrUnsupported, flags)
		}
		out = binary.AppendUvarint(out, uint64(flags))
		if flags == 2 || flags == 6 { // explicit table index
			if err := copyU32(); err != nil {
				return nil, err
			}
		}
		if flags&1 == 0 { // active: an offset expression
			if out, p, err = yl.expr(out, b, p); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 { // elemkind or reftype
			if err := copyByte(); err != nil {
				return nil, err
			}
		}
		n, err := u32()
		if err != nil {
			return nil, err
		}
		out = binary.AppendUvarint(out, uint64(n))
		for range n {
			if flags&4 != 0 {
				if out, p, err = yl.expr(out, b, p); err != nil {
					return nil, err
				}
				continue
			}
			i, err := u32()
			if err != nil {
				return nil, err
			}
			out = binary.AppendUvarint(out, uint64(yl.fn(i)))
		}
	}
	if p != len(b) {
		return nil, fmt.Errorf("%w: trailing bytes in element section", ErrUnsupported)
	}
	return out, nil
}

// code instruments every function body: the check at its start (after its
// locals) and after every loop instruction; calls are renumbered.
func (yl *yielder) code(b []byte) ([]byte, int, error) {
	count, p, err := readU32(b, 0)
	if err != nil {
		return nil, 0, err
	}
	out := make([]byte, 0, len(b)+len(b)/4)
	out = binary.AppendUvarint(out, uint64(count))
	checks := 0
	var body []byte
	for range count {
		size, n, err := readU32(b, p)
		if err != nil {
			return nil, 0, err
		}
		start := p + n
		end := start + int(size)
		if end > len(b) || end < start {
			return nil, 0, errTruncated
		}
		body, n, err = yl.body(body[:0], b[start:end])
		if err != nil {
			return nil, 0, err
		}
		checks += n
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
		p = end
	}
	if p != len(b) {
		return nil, 0, fmt.Errorf("%w: trailing bytes in code section", ErrUnsupported)
	}
	return out, checks, nil
}

func (yl *yielder) body(out, f []byte) ([]byte, int, error) {
	// Locals: vec((count, valtype)).
	groups, p, err := readU32(f, 0)
	if err != nil {
		return nil, 0, err
	}
	for range groups {
		_, n, err := readU32(f, p)
		if err != nil {
			return nil, 0, err
		}
		p += n
		if p >= len(f) || !isValType(f[p]) {
			return nil, 0, fmt.Errorf("%w: local type", ErrUnsupported)
		}
		p++
	}
	out = append(out, f[:p]...)
	out = append(out, yl.check...)
	checks := 1
	for p < len(f) {
		op := f[p]
		if out, p, err = yl.instr(out, f, p); err != nil {
			return nil, 0, err
		}
		if op == 0x03 { // loop: the check runs at every iteration
			out = append(out, yl.check...)
			checks++
		}
	}
	return out, checks, nil
}
