package repo

import (
	"strings"
)

// Python on a parse: a tokenizer (strings with their prefixes, f-strings
// and their expressions, triple quotes, comments, line continuation,
// brackets), logical lines grouped by indentation into functions, and an
// expression parser (calls with dotted names and keyword arguments,
// attributes, subscripts, operators, literals). Values are followed
// through the assignments of each function (sast_pysinks.go): where they
// come from (a request, the command line, the environment), whether they
// are constants, whether they are strings built at run time.

// pyTok is a token: n name, 1 number, s string, o operator.
type pyTok struct {
	kind byte
	text string // a name, number or operator; a string's value
	off  int
	str  *pyStr
}

// pyStr is a string literal: its literal text and, for an f-string, the
// expressions it interpolates.
type pyStr struct {
	value string
	parts []*pyExpr
	bytes bool
}

// pyLine is a logical line: its indentation and tokens.
type pyLine struct {
	indent int
	toks   []pyTok
}

// pyTokenize splits text into logical lines; ok is false when a string or
// a bracket is left open.
func pyTokenize(text string, base int) (lines []pyLine, ok bool) {
	var cur []pyTok
	depth := 0
	indent, atStart := 0, true
	i := 0
	flush := func() {
		if len(cur) > 0 {
			lines = append(lines, pyLine{indent: indent, toks: cur})
		}
		cur = nil
		atStart = true
	}
	for i < len(text) {
		ch := text[i]
		if atStart {
			// the indentation of a new logical line
			n := 0
			for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
				if text[i] == '\t' {
					n += 8 - n%8
				} else {
					n++
				}
				i++
			}
			indent, atStart = n, false
			continue
		}
		switch {
		case ch == '\n':
			i++
			if depth == 0 {
				flush()
			}
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f':
			i++
		case ch == '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case ch == '\\' && i+1 < len(text) && (text[i+1] == '\n' || text[i+1] == '\r'):
			i += 2
			if i < len(text) && text[i-1] == '\r' && text[i] == '\n' {
				i++
			}
		case isPyNameStart(ch):
			j := i
			for j < len(text) && isPyNameChar(text[j]) {
				j++
			}
			word := text[i:j]
			if j < len(text) && (text[j] == '"' || text[j] == '\'') && len(word) <= 3 && isStrPrefix(word) {
				tok, end, good := pyString(text, i, j, base)
				if !good {
					return nil, false
				}
				cur = append(cur, tok)
				i = end
				continue
			}
			cur = append(cur, pyTok{kind: 'n', text: word, off: base + i})
			i = j
		case ch == '"' || ch == '\'':
			tok, end, good := pyString(text, i, i, base)
			if !good {
				return nil, false
			}
			cur = append(cur, tok)
			i = end
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9':
			j := i
			for j < len(text) && (isPyNameChar(text[j]) || text[j] == '.' ||
				(text[j] == '+' || text[j] == '-') && (text[j-1] == 'e' || text[j-1] == 'E') && !strings.ContainsAny(text[i:j], "xX")) {
				j++
			}
			cur = append(cur, pyTok{kind: '1', text: text[i:j], off: base + i})
			i = j
		default:
			op := pyOp(text[i:])
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
					depth--
				}
			}
			cur = append(cur, pyTok{kind: 'o', text: op, off: base + i})
			i += len(op)
		}
	}
	flush()
	return lines, depth == 0
}

func isPyNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isPyNameChar(c byte) bool { return isPyNameStart(c) || c >= '0' && c <= '9' }

func isStrPrefix(w string) bool {
	for _, c := range strings.ToLower(w) {
		if !strings.ContainsRune("rbuf", c) {
			return false
		}
	}
	return true
}

var pyOps = []string{"**=", "//=", ">>=", "<<=", "...", "->", ":=", "==", "!=", "<=", ">=", "**", "//", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

func pyOp(s string) string {
	for _, op := range pyOps {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return s[:1]
}

// pyString reads a string literal whose prefix starts at i and quote at q.
func pyString(text string, i, q, base int) (pyTok, int, bool) {
	prefix := strings.ToLower(text[i:q])
	raw, fstr := strings.Contains(prefix, "r"), strings.Contains(prefix, "f")
	quote := text[q : q+1]
	if strings.HasPrefix(text[q:], quote+quote+quote) {
		quote = text[q : q+3]
	}
	j := q + len(quote)
	start := j
	for {
		if j >= len(text) {
			return pyTok{}, 0, false
		}
		if text[j] == '\\' {
			j += 2
			continue
		}
		if len(quote) == 1 && text[j] == '\n' {
			return pyTok{}, 0, false
		}
		if strings.HasPrefix(text[j:], quote) {
			break
		}
		j++
	}
	body := text[start:j]
	s := &pyStr{bytes: strings.Contains(prefix, "b")}
	if fstr {
		s.value, s.parts = pyFString(body, base+start)
	} else {
		s.value = body
	}
	_ = raw
	return pyTok{kind: 's', text: s.value, off: base + i, str: s}, j + len(quote), true
}

// pyFString splits an f-string's body into its literal text and the
// expressions in its braces.
func pyFString(body string, base int) (string, []*pyExpr) {
	var lit strings.Builder
	var parts []*pyExpr
	for k := 0; k < len(body); k++ {
		c := body[k]
		if c == '{' && k+1 < len(body) && body[k+1] == '{' || c == '}' && k+1 < len(body) && body[k+1] == '}' {
			lit.WriteByte(c)
			k++
			continue
		}
		if c != '{' {
			lit.WriteByte(c)
			continue
		}
		depth, end := 1, k+1
		for ; end < len(body) && depth > 0; end++ {
			switch body[end] {
			case '{', '[', '(':
				depth++
			case '}', ']', ')':
				depth--
			}
		}
		inner := body[k+1 : max(k+1, end-1)]
		// drop a conversion (!r) or a format spec (:>10)
		if cut := strings.IndexAny(inner, "!:"); cut > 0 && !strings.HasPrefix(inner[cut:], "!=") {
			inner = inner[:cut]
		}
		lit.WriteString("?")
		if lines, ok := pyTokenize(inner, base+k+1); ok && len(lines) > 0 {
			p := &pyParser{toks: lines[0].toks}
			parts = append(parts, p.expr())
		} else {
			parts = append(parts, &pyExpr{kind: 'u', off: base + k})
		}
		k = end - 1
	}
	return lit.String(), parts
}

// pyExpr is an expression: n name, a attribute (x.name), c call, s
// string, 1 number, k None/True/False, b binary operator (name is the
// operator), l list/tuple/set, d dict, i subscript, u anything else
// (its parts in args).
type pyExpr struct {
	kind byte
	name string
	x, y *pyExpr
	args []*pyExpr
	kws  []pyKw
	str  *pyStr
	off  int
	star bool
}

// pyKw is a keyword argument (name "" for **kwargs).
type pyKw struct {
	name string
	v    *pyExpr
}

type pyParser struct {
	toks  []pyTok
	i     int
	depth int // of nested expressions: past pyMaxDepth the rest is skipped
}

// pyMaxDepth bounds the parser's recursion on nested brackets and
// operators, so that no file can exhaust the stack.
const pyMaxDepth = 200

func (p *pyParser) peek() pyTok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return pyTok{kind: 0}
}

func (p *pyParser) is(kind byte, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *pyParser) accept(kind byte, text string) bool {
	if p.is(kind, text) {
		p.i++
		return true
	}
	return false
}

// exprList parses expressions separated by commas: a tuple when there is
// a comma.
func (p *pyParser) exprList() *pyExpr {
	off := p.peek().off
	first := p.expr()
	if !p.is('o', ",") {
		return first
	}
	t := &pyExpr{kind: 'l', off: off, args: []*pyExpr{first}}
	for p.accept('o', ",") {
		if p.atEnd() {
			break
		}
		t.args = append(t.args, p.expr())
	}
	return t
}

// atEnd reports the end of an expression list.
func (p *pyParser) atEnd() bool {
	t := p.peek()
	if t.kind == 0 {
		return true
	}
	if t.kind == 'o' {
		switch t.text {
		case ")", "]", "}", "=", ":", ";":
			return true
		}
		return strings.HasSuffix(t.text, "=") && t.text != "==" && t.text != "<=" && t.text != ">=" && t.text != "!="
	}
	return t.kind == 'n' && (t.text == "for" || t.text == "in" || t.text == "if" || t.text == "else" || t.text == "async")
}

var pyBinary = map[string]int{
	"or": 1, "and": 2, "in": 4, "is": 4, "not": 4, "<": 4, ">": 4, "==": 4, ">=": 4, "<=": 4, "!=": 4,
	"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "@": 10,
}

// expr parses one expression (a conditional, a lambda, a walrus).
func (p *pyParser) expr() *pyExpr {
	t := p.peek()
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > pyMaxDepth {
		p.i = len(p.toks)
		return &pyExpr{kind: 'u', off: t.off}
	}
	if t.kind == 'n' && t.text == "lambda" {
		p.i++
		for !p.is('o', ":") && p.peek().kind != 0 {
			p.i++
		}
		p.accept('o', ":")
		body := p.expr()
		return &pyExpr{kind: 'u', name: "lambda", off: t.off, args: []*pyExpr{body}}
	}
	if t.kind == 'o' && (t.text == "*" || t.text == "**") {
		p.i++
		e := p.binary(0)
		return &pyExpr{kind: 'u', name: "star", off: t.off, args: []*pyExpr{e}, star: true}
	}
	e := p.binary(0)
	if p.is('n', "if") {
		p.i++
		cond := p.binary(0)
		var alt *pyExpr
		if p.accept('n', "else") {
			alt = p.expr()
		} else {
			alt = &pyExpr{kind: 'k', off: t.off}
		}
		return &pyExpr{kind: 'b', name: "if", x: e, y: alt, off: t.off, args: []*pyExpr{cond}}
	}
	if p.accept('o', ":=") {
		v := p.expr()
		return &pyExpr{kind: 'b', name: ":=", x: e, y: v, off: t.off}
	}
	return e
}

func (p *pyParser) binary(min int) *pyExpr {
	var left *pyExpr
	if p.is('n', "not") {
		off := p.peek().off
		p.i++
		left = &pyExpr{kind: 'u', name: "not", off: off, args: []*pyExpr{p.binary(3)}}
	} else {
		left = p.unary()
	}
	for {
		t := p.peek()
		prec, ok := pyBinary[t.text]
		if !ok || t.kind == 's' || t.kind == '1' || prec <= min {
			return left
		}
		p.i++
		op := t.text
		if op == "not" && !p.accept('n', "in") {
			p.i--
			return left
		}
		if op == "is" {
			p.accept('n', "not")
		}
		right := p.binary(prec)
		left = &pyExpr{kind: 'b', name: op, x: left, y: right, off: left.off}
	}
}

func (p *pyParser) unary() *pyExpr {
	t := p.peek()
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > pyMaxDepth {
		p.i = len(p.toks)
		return &pyExpr{kind: 'u', off: t.off}
	}
	if t.kind == 'o' && (t.text == "-" || t.text == "+" || t.text == "~") {
		p.i++
		e := p.unary()
		if e.kind == '1' {
			return e
		}
		return &pyExpr{kind: 'u', name: t.text, off: t.off, args: []*pyExpr{e}}
	}
	if t.kind == 'n' && t.text == "await" {
		p.i++
		return p.unary()
	}
	e := p.postfix(p.primary())
	if p.accept('o', "**") {
		r := p.unary()
		return &pyExpr{kind: 'b', name: "**", x: e, y: r, off: e.off}
	}
	return e
}

func (p *pyParser) primary() *pyExpr {
	t := p.peek()
	switch t.kind {
	case 0:
		return &pyExpr{kind: 'u', off: t.off}
	case 'n':
		p.i++
		switch t.text {
		case "None", "True", "False":
			return &pyExpr{kind: 'k', name: t.text, off: t.off}
		}
		return &pyExpr{kind: 'n', name: t.text, off: t.off}
	case '1':
		p.i++
		return &pyExpr{kind: '1', name: t.text, off: t.off}
	case 's':
		// adjacent literals are one string
		s := &pyStr{}
		for p.peek().kind == 's' {
			st := p.peek().str
			s.value += st.value
			s.parts = append(s.parts, st.parts...)
			s.bytes = s.bytes || st.bytes
			p.i++
		}
		return &pyExpr{kind: 's', str: s, off: t.off}
	}
	switch t.text {
	case "(", "[", "{":
		p.i++
		closer := map[string]string{"(": ")", "[": "]", "{": "}"}[t.text]
		e := &pyExpr{kind: 'l', off: t.off, name: t.text}
		dict := false
		for !p.is('o', closer) && p.peek().kind != 0 {
			if p.accept('o', ",") {
				continue
			}
			if p.atEnd() && !p.is('n', "for") && !p.is('n', "if") && !p.is('n', "in") && !p.is('n', "async") && !p.is('n', "else") && !p.is('o', ":") {
				p.i++ // a stray token
				continue
			}
			if p.accept('o', ":") {
				dict = true
				continue
			}
			if p.is('n', "for") || p.is('n', "in") || p.is('n', "if") || p.is('n', "async") || p.is('n', "else") {
				p.i++ // a comprehension: its parts are the values
				e.name = "comp"
				continue
			}
			before := p.i
			e.args = append(e.args, p.expr())
			if p.i == before {
				p.i++
			}
		}
		p.accept('o', closer)
		if dict {
			e.kind = 'd'
		}
		if t.text == "(" && len(e.args) == 1 && e.name == "(" {
			// a parenthesised expression, unless it had a comma
			if p.toks[p.i-2].text != "," {
				inner := e.args[0]
				return inner
			}
		}
		return e
	case "...":
		p.i++
		return &pyExpr{kind: 'k', name: "...", off: t.off}
	}
	p.i++
	return &pyExpr{kind: 'u', off: t.off}
}

func (p *pyParser) postfix(e *pyExpr) *pyExpr {
	for {
		switch {
		case p.is('o', "."):
			p.i++
			t := p.peek()
			if t.kind != 'n' {
				return e
			}
			p.i++
			e = &pyExpr{kind: 'a', name: t.text, x: e, off: t.off}
		case p.is('o', "("):
			off := p.peek().off
			p.i++
			call := &pyExpr{kind: 'c', x: e, off: e.off}
			_ = off
			for !p.is('o', ")") && p.peek().kind != 0 {
				if p.accept('o', ",") {
					continue
				}
				if p.is('o', "**") {
					p.i++
					call.kws = append(call.kws, pyKw{v: p.expr()})
					continue
				}
				if t := p.peek(); t.kind == 'n' && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 'o' && p.toks[p.i+1].text == "=" {
					p.i += 2
					call.kws = append(call.kws, pyKw{name: t.text, v: p.expr()})
					continue
				}
				before := p.i
				a := p.expr()
				if p.is('n', "for") {
					// a generator argument
					g := &pyExpr{kind: 'l', name: "comp", off: a.off, args: []*pyExpr{a}}
					for !p.is('o', ")") && p.peek().kind != 0 {
						if p.is('n', "for") || p.is('n', "in") || p.is('n', "if") || p.is('n', "async") {
							p.i++
							continue
						}
						b := p.i
						g.args = append(g.args, p.expr())
						if p.i == b {
							p.i++
						}
					}
					a = g
				}
				call.args = append(call.args, a)
				if p.i == before {
					p.i++
				}
			}
			p.accept('o', ")")
			e = call
		case p.is('o', "["):
			p.i++
			idx := &pyExpr{kind: 'l', off: e.off}
			for !p.is('o', "]") && p.peek().kind != 0 {
				if p.accept('o', ":") || p.accept('o', ",") {
					continue
				}
				b := p.i
				idx.args = append(idx.args, p.expr())
				if p.i == b {
					p.i++
				}
			}
			p.accept('o', "]")
			var y *pyExpr
			if len(idx.args) == 1 {
				y = idx.args[0]
			} else {
				y = idx
			}
			e = &pyExpr{kind: 'i', x: e, y: y, off: e.off}
		default:
			return e
		}
	}
}

// dotted returns an expression's dotted name (a.b.c), or "".
func (e *pyExpr) dotted() string {
	switch e.kind {
	case 'n':
		return e.name
	case 'a':
		if d := e.x.dotted(); d != "" {
			return d + "." + e.name
		}
	}
	return ""
}
