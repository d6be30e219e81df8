package repo

import "strings"

// TypeScript is read as JavaScript once its types are blanked out (each
// character of a type replaced by a space, so offsets and lines stay):
// annotations of parameters, variables, fields and return values, as and
// satisfies, generic parameters and arguments, non-null assertions,
// interfaces, type aliases, declare and enum statements, access modifiers
// and decorators. It is a reading good enough for the sinks, not a
// compiler: what it does not know (old-style <T>x assertions, JSX) leaves
// a file that does not parse, and the line rules read it.

// tsTok is a token of the TypeScript source.
type tsTok struct {
	start, end int
	kind       byte // 'i' identifier or keyword, 'p' punctuation, 's' string or template, 'n' number, 'r' regexp
	text       string
}

// tsTokens splits the source into tokens, comments left out.
func tsTokens(src string) []tsTok {
	var toks []tsTok
	isID := func(c byte) bool {
		return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	regexOK := func() bool { // a / here starts a regexp
		if len(toks) == 0 {
			return true
		}
		t := toks[len(toks)-1]
		switch t.kind {
		case 'i':
			return t.text == "return" || t.text == "typeof" || t.text == "case" || t.text == "in" || t.text == "of" || t.text == "new" || t.text == "delete" || t.text == "void" || t.text == "throw"
		case 'p':
			return t.text != ")" && t.text != "]" && t.text != "}"
		}
		return false
	}
	// template nesting: the brace depth at which each ${ opened
	var tmpl []int
	depth := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				i = len(src)
			} else {
				i += end + 4
			}
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			toks = append(toks, tsTok{i, j, 's', src[i:j]})
			i = j
		case c == '`' || c == '}' && len(tmpl) > 0 && tmpl[len(tmpl)-1] == depth:
			if c == '}' {
				tmpl = tmpl[:len(tmpl)-1]
			}
			j := i + 1
			for j < len(src) && src[j] != '`' {
				if src[j] == '\\' {
					j++
				} else if src[j] == '$' && j+1 < len(src) && src[j+1] == '{' {
					tmpl = append(tmpl, depth)
					j++
					break
				}
				j++
			}
			j = min(j+1, len(src))
			toks = append(toks, tsTok{i, j, 's', src[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isID(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, tsTok{i, j, 'n', src[i:j]})
			i = j
		case isID(c):
			j := i + 1
			for j < len(src) && isID(src[j]) {
				j++
			}
			toks = append(toks, tsTok{i, j, 'i', src[i:j]})
			i = j
		case c == '/' && regexOK():
			j, class := i+1, false
			for j < len(src) && src[j] != '\n' && (src[j] != '/' || class) {
				switch src[j] {
				case '\\':
					j++
				case '[':
					class = true
				case ']':
					class = false
				}
				j++
			}
			j = min(j+1, len(src))
			for j < len(src) && isID(src[j]) {
				j++
			}
			toks = append(toks, tsTok{i, j, 'r', src[i:j]})
			i = j
		default:
			n := 1
			for _, op := range tsPuncts {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
			toks = append(toks, tsTok{i, i + n, 'p', src[i : i+n]})
			i += n
		}
	}
	return toks
}

// tsPuncts are the punctuators of more than one character, longest first.
var tsPuncts = []string{">>>=", "...", "===", "!==", "**=", "<<=", ">>=", "&&=", "||=", "??=", "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<"}

// tsStrip blanks a TypeScript source's types.
func tsStrip(src string) string {
	toks := tsTokens(src)
	s := &tsStripper{toks: toks, out: []byte(src), gone: make([]bool, len(toks)), pair: make([]int, len(toks)), encl: make([]int, len(toks))}
	var stack []int
	for i, t := range toks {
		s.pair[i] = -1
		s.encl[i] = -1
		if len(stack) > 0 {
			s.encl[i] = stack[len(stack)-1]
		}
		switch t.text {
		case "(", "[", "{":
			stack = append(stack, i)
		case ")", "]", "}":
			if len(stack) > 0 {
				o := stack[len(stack)-1]
				if toks[o].text == map[string]string{")": "(", "]": "[", "}": "{"}[t.text] {
					stack = stack[:len(stack)-1]
					s.pair[o], s.pair[i] = i, o
					s.encl[i] = s.encl[o]
				}
			}
		}
	}
	s.run()
	return string(s.out)
}

type tsStripper struct {
	toks []tsTok
	out  []byte
	gone []bool // tokens blanked
	pair []int  // for each ( [ { ) ] }, the index of its partner; -1 when none
	encl []int  // for each token, the index of the innermost ( [ { around it; -1
}

func (s *tsStripper) blank(from, to int) { // tokens [from, to)
	if from >= to || from >= len(s.toks) {
		return
	}
	a, b := s.toks[from].start, s.toks[min(to, len(s.toks))-1].end
	for k := from; k < min(to, len(s.toks)); k++ {
		s.gone[k] = true
	}
	for k := a; k < b; k++ {
		if s.out[k] != '\n' && s.out[k] != '\r' {
			s.out[k] = ' '
		}
	}
}

func (s *tsStripper) is(i int, text string) bool {
	return i >= 0 && i < len(s.toks) && s.toks[i].text == text
}

func (s *tsStripper) ident(i int) bool { return i >= 0 && i < len(s.toks) && s.toks[i].kind == 'i' }

// match returns the index of the bracket that closes the one at i (-1
// when none does; for <, when what follows cannot be type arguments).
func (s *tsStripper) match(i int) int {
	if s.toks[i].text != "<" {
		return s.pair[i]
	}
	d := 0
	for k := i; k < len(s.toks) && k-i < 400; k++ {
		switch s.toks[k].text {
		case "(", "[", "{":
			if s.pair[k] < 0 {
				return -1
			}
			k = s.pair[k]
		case "<":
			d++
		case ">":
			d--
			if d == 0 {
				return k
			}
		case ">>":
			d -= 2
			if d <= 0 {
				return k
			}
		case ";", ")", "]", "}", "&&", "||", "=", "==", "===", "!=", "!==", "+", "*", "/", "%":
			return -1 // a comparison, not type arguments
		}
	}
	return -1
}

// typeEnd returns the index after a type that starts at i (or i when none
// does).
func (s *tsStripper) typeEnd(i int) int {
	k := i
	for s.is(k, "|") || s.is(k, "&") {
		k++
	}
	for {
		start := k
		for s.is(k, "keyof") || s.is(k, "typeof") || s.is(k, "readonly") || s.is(k, "unique") || s.is(k, "infer") {
			k++
		}
		switch {
		case k >= len(s.toks):
			return start
		case s.is(k, "{") || s.is(k, "[") || s.is(k, "("):
			m := s.match(k)
			if m < 0 {
				return start
			}
			k = m + 1
			if s.is(k, "=>") {
				k = s.typeEnd(k + 1)
			}
		case s.is(k, "new") && s.is(k+1, "("):
			k++
			continue
		case s.is(k, "<"): // a generic function type
			m := s.match(k)
			if m < 0 {
				return start
			}
			k = m + 1
			continue
		case s.ident(k) || s.toks[k].kind == 's' || s.toks[k].kind == 'n' || s.is(k, "-") && k+1 < len(s.toks) && s.toks[k+1].kind == 'n':
			if s.is(k, "-") {
				k++
			}
			k++
			for s.is(k, ".") && s.ident(k+1) {
				k += 2
			}
			if s.is(k-1, "asserts") && s.ident(k) || s.ident(k) && s.is(k, "is") {
				k++
				if s.is(k-1, "is") {
					k = s.typeEnd(k)
				}
			}
			if s.is(k, "is") && k == start+1 {
				k = s.typeEnd(k + 1)
			}
			if s.is(k, "<") {
				m := s.match(k)
				if m < 0 {
					return start
				}
				k = m + 1
			}
		default:
			return start
		}
		for s.is(k, "[") {
			m := s.match(k)
			if m < 0 {
				break
			}
			k = m + 1
		}
		if s.is(k, "extends") && s.is(k+2, "?") || s.is(k, "extends") && !s.is(k+1, "{") {
			// a conditional type: T extends U ? X : Y
			k = s.typeEnd(k + 1)
			if s.is(k, "?") {
				k = s.typeEnd(k + 1)
				if s.is(k, ":") {
					k = s.typeEnd(k + 1)
				}
			}
		}
		if s.is(k, "|") || s.is(k, "&") {
			k++
			continue
		}
		return k
	}
}

// blankStatementTo blanks from token i through the end of a statement
// whose body is balanced brackets (interface, enum, declare).
func (s *tsStripper) blankBlock(i int) int {
	k := i
	for k < len(s.toks) && !s.is(k, "{") && !s.is(k, ";") {
		k++
	}
	if s.is(k, "{") {
		if m := s.match(k); m >= 0 {
			k = m
		}
	}
	s.blank(i, k+1)
	return k + 1
}

func (s *tsStripper) run() {
	t := s.toks
	// what each open brace is: a class body or else
	var braces []bool
	// what each open paren is: a parameter list or else
	var parens []bool
	inClass := func() bool { return len(braces) > 0 && braces[len(braces)-1] }
	inParams := func() bool { return len(parens) > 0 && parens[len(parens)-1] }
	classNext := false
	stmtStart := func(i int) bool {
		return i == 0 || s.is(i-1, ";") || s.is(i-1, "{") || s.is(i-1, "}") || s.newlineBefore(i)
	}
	last := -1
	for i := 0; i < len(t); i++ {
		if i <= last {
			i = last + 1 // always forward, whatever a case set i to
			if i >= len(t) {
				break
			}
		}
		last = i
		tk := t[i]
		switch {
		case tk.text == "import" && s.ident(i+1) && s.is(i+2, "=") && stmtStart(i):
			// import x = require('y'): const x = require('y')
			copy(s.out[tk.start:tk.end], "const ")
		case (tk.text == "import" || tk.text == "export") && s.is(i+1, "type") && stmtStart(i):
			i = s.blankStatement(i) - 1
		case (tk.text == "import" || tk.text == "export") && (s.is(i+1, "{") || s.is(i+1, "*") || tk.text == "import" && s.ident(i+1) && (s.is(i+2, ",") || s.is(i+2, "from"))):
			// import { a as b } from 'm': left as it is
			k := i + 1
			for k < len(t) && t[k].kind != 's' && !s.is(k, ";") {
				k++
			}
			i = k
		case (tk.text == "interface" || tk.text == "enum" || tk.text == "namespace" || tk.text == "module" && s.toks[min(i+1, len(t)-1)].kind != 'p') && s.ident(i+1) && (stmtStart(i) || s.is(i-1, "export") || s.is(i-1, "declare") || s.is(i-1, "const")):
			from := i
			if s.is(i-1, "declare") || s.is(i-1, "const") {
				from = i - 1
			}
			if tk.text == "namespace" || tk.text == "module" {
				// a namespace's body is code: only its head goes
				s.blank(from, i+2)
				i++
				continue
			}
			i = s.blankBlock(from) - 1
		case tk.text == "type" && s.ident(i+1) && (s.is(i+2, "=") || s.is(i+2, "<")) && (stmtStart(i) || s.is(i-1, "export") || s.is(i-1, "declare")):
			k := i + 2
			if s.is(k, "<") && s.match(k) > k {
				k = s.match(k) + 1
			}
			k = s.typeEnd(k + 1)
			if s.is(k, ";") {
				k++
			}
			s.blank(i, k)
			i = k - 1
		case tk.text == "declare" && s.ident(i+1) && stmtStart(i):
			k := i + 1
			for k < len(t) && !s.is(k, ";") && !s.is(k, "{") && t[k].start < len(s.out) && !strings.Contains(string(s.out[t[k-1].end:t[k].start]), "\n") {
				k++
			}
			if s.is(k, "{") && s.match(k) > k {
				k = s.match(k)
			}
			s.blank(i, k+1)
			i = k
		case tk.text == "abstract" && (s.is(i+1, "class") || inClass()):
			s.blank(i, i+1)
		case tk.text == "@" && s.ident(i+1):
			// a decorator
			k := i + 2
			for s.is(k, ".") && s.ident(k+1) {
				k += 2
			}
			if s.is(k, "(") {
				k = s.match(k) + 1
			}
			s.blank(i, k)
			i = k - 1
		case tk.text == "class":
			classNext = true
			// class A<T> extends B<T> implements C, D {
			k := i + 1
			if s.ident(k) && !s.is(k, "extends") && !s.is(k, "implements") {
				k++
			}
			if s.is(k, "<") {
				m := s.match(k)
				s.blank(k, m+1)
				k = m + 1
			}
			if s.is(k, "extends") {
				k++
				for k < len(t) && !s.is(k, "{") && !s.is(k, "<") && !s.is(k, "implements") {
					k++
				}
				if s.is(k, "<") {
					m := s.match(k)
					s.blank(k, m+1)
					k = m + 1
				}
			}
			if s.is(k, "implements") {
				m := k
				for m < len(t) && !s.is(m, "{") {
					m++
				}
				s.blank(k, m)
			}
		case tk.text == "{":
			braces = append(braces, classNext)
			classNext = false
		case tk.text == "}":
			if len(braces) > 0 {
				braces = braces[:len(braces)-1]
			}
		case tk.text == "this" && s.is(i+1, ":") && inParams():
			// a this parameter: (this: T, a)
			k := s.typeEnd(i + 2)
			if s.is(k, ",") {
				k++
			}
			s.blank(i, k)
			i = k - 1
		case tk.text == "(" && inClass() && s.ident(i-1) && s.memberStart(i-1) && s.overload(i):
			// an overload's signature: name(a: T): R with no body
			m := s.match(i)
			k := m + 1
			if s.is(k, ":") {
				k = s.typeEnd(k + 1)
			}
			if s.is(k, ";") {
				k++
			}
			from := i - 1
			for from > 0 && tsModifiers[t[from-1].text] {
				from--
			}
			s.blank(from, k)
			i = k - 1
		case tk.text == "(":
			m := s.match(i)
			params := m > 0 && (s.is(i-1, "function") || s.ident(i-1) && s.is(i-2, "function") || s.is(m+1, "=>") ||
				s.is(m+1, ":") && s.returnType(m+1) || s.is(m+1, "{") && s.ident(i-1) && !tsControl[t[i-1].text] ||
				s.is(i-1, ">") && s.is(m+1, "=>"))
			parens = append(parens, params)
		case tk.text == ")":
			if len(parens) > 0 {
				parens = parens[:len(parens)-1]
			}
			if s.is(i+1, ":") && s.returnType(i+1) {
				k := s.typeEnd(i + 2)
				s.blank(i+1, k)
				i = k - 1
			}
		case tk.text == "<" && i > 0:
			// generic parameters or arguments: f<T>(, new A<T>(, function f<T>(, <T>(x) =>
			m := s.match(i)
			if m > i && (s.is(m+1, "(") && (s.ident(i-1) || s.is(i-1, "=") || s.is(i-1, "(") || s.is(i-1, ",") || s.is(i-1, ":")) && s.typeList(i+1, m) ||
				s.ident(i-1) && s.is(m+1, "=") && s.is(i-2, "type")) {
				s.blank(i, m+1)
				i = m
			}
		case (tk.text == "as" || tk.text == "satisfies") && i > 0 && (t[i-1].kind != 'p' || s.is(i-1, ")") || s.is(i-1, "]") || s.is(i-1, "}") || s.is(i-1, "!")) && !s.is(i-1, "import") && !s.is(i-1, "*"):
			k := s.typeEnd(i + 1)
			if s.is(i+1, "const") {
				k = i + 2
			}
			if k > i+1 {
				s.blank(i, k)
				i = k - 1
			}
		case tk.text == "!" && i > 0 && (s.ident(i-1) && !tsControl[t[i-1].text] || s.is(i-1, ")") || s.is(i-1, "]")) && t[i-1].end == tk.start:
			// a non-null assertion: x!.y, f()!
			s.blank(i, i+1)
		case (tk.text == "public" || tk.text == "private" || tk.text == "protected" || tk.text == "readonly" || tk.text == "override") && s.ident(i+1) && (inClass() || inParams()):
			s.blank(i, i+1)
		case tk.text == ":" && i > 0:
			prev := t[i-1]
			optional := prev.text == "?"
			if optional {
				prev = t[max(0, i-2)]
			}
			annotated := false
			switch {
			case inParams() && (prev.kind == 'i' || prev.text == "}" || prev.text == "]") && s.paramLevel(i):
				annotated = true
			case inClass() && prev.kind == 'i' && s.memberStart(i-1-btoi(optional)):
				annotated = true
			case prev.kind == 'i' && (s.is(i-2-btoi(optional), "let") || s.is(i-2-btoi(optional), "const") || s.is(i-2-btoi(optional), "var")):
				annotated = true
			case (prev.text == "}" || prev.text == "]") && s.declPattern(i-1):
				annotated = true
			case prev.text == ")" && s.is(i-2, "catch"):
				annotated = false
			}
			if s.is(i-1, "catch") || prev.kind == 'i' && s.is(i-2, "(") && s.is(i-3, "catch") {
				annotated = true
			}
			if annotated {
				k := s.typeEnd(i + 1)
				if optional {
					s.blank(i-1, i)
				}
				s.blank(i, k)
				i = k - 1
			}
		case tk.text == "?" && inParams() && s.is(i+1, ")") || tk.text == "?" && inParams() && s.is(i+1, ","):
			s.blank(i, i+1)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tsControl are keywords a ( follows that is no parameter list.
var tsControl = wordSet(`if for while switch catch with return typeof await yield in of new delete void`)

// overload reports whether the ( at i opens the parameters of a method
// signature without a body.
func (s *tsStripper) overload(i int) bool {
	m := s.match(i)
	if m < 0 {
		return false
	}
	k := m + 1
	if s.is(k, ":") {
		k = s.typeEnd(k + 1)
	}
	return !s.is(k, "{") && !s.is(k, "=>") && (s.is(k, ";") || s.newlineBefore(k) || k >= len(s.toks))
}

// returnType reports whether the : at i starts a return type: a type
// followed by { or =>.
func (s *tsStripper) returnType(i int) bool {
	k := s.typeEnd(i + 1)
	return k > i+1 && (s.is(k, "{") || s.is(k, "=>"))
}

// typeList reports whether tokens [from, to) can be generic arguments.
func (s *tsStripper) typeList(from, to int) bool {
	for k := from; k < to; {
		e := s.typeEnd(k)
		if e == k {
			return false
		}
		if s.is(e, "extends") || s.is(e, "=") {
			e = s.typeEnd(e + 1)
		}
		if e == to {
			return true
		}
		if !s.is(e, ",") {
			return false
		}
		k = e + 1
	}
	return true
}

// paramLevel reports a : at the top level of a parameter list (not in an
// object pattern's default nor a nested object).
func (s *tsStripper) paramLevel(i int) bool {
	e := s.encl[i]
	return e >= 0 && s.toks[e].text == "("
}

// memberStart reports whether the identifier at i starts a class member
// (after ; { } or a modifier, on its own line).
func (s *tsStripper) memberStart(i int) bool {
	k := i - 1
	for k >= 0 && (tsModifiers[s.toks[k].text] || s.gone[k]) {
		k--
	}
	return k < 0 || s.is(k, ";") || s.is(k, "{") || s.is(k, "}") || strings.Contains(string(s.out[s.toks[k].end:s.toks[i].start]), "\n")
}

// tsModifiers come before a class member's name.
var tsModifiers = wordSet(`static declare accessor public private protected readonly override abstract`)

// newlineBefore reports a line end between token i and the one before.
func (s *tsStripper) newlineBefore(i int) bool {
	if i <= 0 || i >= len(s.toks) {
		return i <= 0
	}
	return strings.Contains(string(s.out[s.toks[i-1].end:s.toks[i].start]), "\n")
}

// declPattern reports whether the } or ] at i closes a pattern declared
// by let, const or var.
func (s *tsStripper) declPattern(i int) bool {
	k := s.pair[i]
	return k > 0 && (s.is(k-1, "let") || s.is(k-1, "const") || s.is(k-1, "var"))
}

// blankStatement blanks a statement from i to its ; or the end of its
// line (import type …).
func (s *tsStripper) blankStatement(i int) int {
	k := i
	for k+1 < len(s.toks) && !s.is(k, ";") {
		if s.is(k, "{") {
			if m := s.match(k); m > 0 {
				k = m
			}
		}
		if strings.Contains(string(s.out[s.toks[k].end:s.toks[k+1].start]), "\n") && !s.is(k, ",") && !s.is(k+1, "from") && !s.is(k, "from") && !s.is(k, "{") {
			break
		}
		k++
	}
	s.blank(i, k+1)
	return k + 1
}
