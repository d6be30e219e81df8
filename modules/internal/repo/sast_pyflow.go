package repo

import (
	"strings"
)

// The analysis of a parsed Python file (sast_py.go): statements in order,
// functions as scopes, values followed through assignments; the sinks
// are tables in sast_pysinks.go.

// pyVal is what is known of a value.
type pyVal struct {
	konst bool   // a constant: literals, constants, calls of constants
	taint bool   // from outside: a request, the command line, the environment
	built bool   // a string built at run time from values that are not constants
	sql   bool   // its literals read as SQL
	weak  bool   // an MD5 or SHA-1 hash, or its digest
	clean bool   // not a constant but not from outside: a call of constants
	mod   string // a module (__import__("os")) or a function (getattr(os, "system")) by full name
	obj   string // the full name of the class or function that made it
	src   string // where the taint came from
	at    int    // for a built string, where it was first built (the statement's offset+1)
	expr  *pyExpr
}

func (a pyVal) join(b pyVal) pyVal {
	v := pyVal{konst: a.konst && b.konst, taint: a.taint || b.taint, built: a.built || b.built,
		sql: a.sql || b.sql, weak: a.weak || b.weak, src: a.src, clean: a.fixed() && b.fixed()}
	if v.src == "" {
		v.src = b.src
	}
	if a.built {
		v.at = a.at
	}
	if v.at == 0 && b.built {
		v.at = b.at
	}
	return v
}

var pyKonst = pyVal{konst: true}

// fixed reports a value not from outside: a constant, or a call of
// constants (table = table_name()).
func (a pyVal) fixed() bool { return a.konst || a.clean && !a.taint }

// pyFrame is a function's variables (or the module's).
type pyFrame struct {
	indent int // the def's
	vars   map[string]pyVal
	parent *pyFrame
}

// pyFile is a Python file under analysis.
type pyFile struct {
	c       *codeScan
	imports map[string]string // bound name → full name
	scope   *pyFrame
	depth   int // of ev's recursion
	// memo holds the values of the current statement's expressions: a
	// sink may read an argument again (a list's items), and must not
	// evaluate nested calls once per level
	memo map[*pyExpr]pyVal
}

// pyBuiltins are names that are there without an import.
var pyBuiltins = wordSet(`str int float bool bytes len list dict set tuple open print range repr format
	sorted min max sum abs isinstance getattr setattr hasattr type object super enumerate zip map filter
	Exception ValueError KeyError self cls __name__ __file__ id hex oct ord chr round any all iter next`)

// pyAST analyses a Python file on its parse; false when it does not parse.
func (c *codeScan) pyAST() bool {
	lines, ok := pyTokenize(c.s.text, 0)
	if !ok {
		return false
	}
	f := &pyFile{c: c, imports: map[string]string{}, scope: &pyFrame{indent: -1, vars: map[string]pyVal{}}, memo: map[*pyExpr]pyVal{}}
	var decorators []*pyExpr
	for _, ln := range lines {
		for f.scope.parent != nil && ln.indent <= f.scope.indent {
			f.scope = f.scope.parent
		}
		toks := ln.toks
		if toks[0].kind == 'o' && toks[0].text == "@" {
			p := &pyParser{toks: toks[1:]}
			decorators = append(decorators, p.expr())
			continue
		}
		f.statement(toks, ln.indent, decorators)
		decorators = nil
	}
	return true
}

// statement reads one logical line (a header's inline body after it).
func (f *pyFile) statement(toks []pyTok, indent int, decorators []*pyExpr) {
	clear(f.memo)
	for len(toks) > 0 {
		// simple statements separated by ;
		end := len(toks)
		depth := 0
		for k, t := range toks {
			if t.kind != 'o' {
				continue
			}
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			case ";":
				if depth == 0 && k < end {
					end = k
				}
			}
			if end < len(toks) {
				break
			}
		}
		rest := f.simple(toks[:end], indent, decorators)
		if end < len(toks) {
			rest = toks[end+1:]
		}
		toks = rest
		decorators = nil
	}
}

// simple reads a statement; for a compound statement's header it returns
// the body that follows the colon on the same line.
func (f *pyFile) simple(toks []pyTok, indent int, decorators []*pyExpr) []pyTok {
	if len(toks) == 0 {
		return nil
	}
	head := toks[0]
	if head.kind == 'n' && head.text == "async" && len(toks) > 1 {
		toks = toks[1:]
		head = toks[0]
	}
	if head.kind == 'n' {
		switch head.text {
		case "import":
			f.importStmt(toks[1:], "")
			return nil
		case "from":
			k := 1
			mod := ""
			for k < len(toks) && !(toks[k].kind == 'n' && toks[k].text == "import") {
				mod += toks[k].text
				k++
			}
			f.importStmt(toks[min(k+1, len(toks)):], strings.TrimLeft(mod, "."))
			return nil
		case "def":
			return f.def(toks, indent, decorators)
		case "class":
			_, body := splitHeader(toks)
			return body
		case "for":
			hdr, body := splitHeader(toks)
			p := &pyParser{toks: hdr[1:]}
			target := p.exprListUntil("in")
			if p.accept('n', "in") {
				v := f.ev(p.exprList())
				f.assign(target, pyVal{taint: v.taint, src: v.src, weak: v.weak})
			}
			return body
		case "with":
			hdr, body := splitHeader(toks)
			p := &pyParser{toks: hdr[1:]}
			for p.peek().kind != 0 {
				v := f.ev(p.expr())
				if p.accept('n', "as") {
					f.assign(p.expr(), v)
				}
				if !p.accept('o', ",") {
					break
				}
			}
			return body
		case "if", "elif", "while":
			hdr, body := splitHeader(toks)
			p := &pyParser{toks: hdr[1:]}
			f.ev(p.exprList())
			return body
		case "else", "try", "finally":
			_, body := splitHeader(toks)
			return body
		case "except":
			_, body := splitHeader(toks)
			return body
		case "return", "yield", "raise", "assert", "del", "print":
			p := &pyParser{toks: toks[1:]}
			if p.peek().kind != 0 {
				f.ev(p.exprList())
			}
			return nil
		case "global", "nonlocal", "pass", "break", "continue":
			return nil
		}
	}
	f.assignStmt(toks)
	return nil
}

// exprListUntil parses a for's targets, up to the word.
func (p *pyParser) exprListUntil(word string) *pyExpr {
	off := p.peek().off
	t := &pyExpr{kind: 'l', off: off}
	for p.peek().kind != 0 && !p.is('n', word) {
		if p.accept('o', ",") || p.accept('o', "(") || p.accept('o', ")") || p.accept('o', "[") || p.accept('o', "]") {
			continue
		}
		if tk := p.peek(); tk.kind == 'n' {
			t.args = append(t.args, &pyExpr{kind: 'n', name: tk.text, off: tk.off})
		}
		p.i++
	}
	return t
}

// splitHeader splits a compound statement at its colon.
func splitHeader(toks []pyTok) (hdr, body []pyTok) {
	depth := 0
	lambda := 0
	for k, t := range toks {
		if t.kind == 'n' && t.text == "lambda" && depth == 0 {
			lambda++
		}
		if t.kind != 'o' {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ":":
			if depth == 0 {
				if lambda > 0 {
					lambda--
					continue
				}
				return toks[:k], toks[k+1:]
			}
		}
	}
	return toks, nil
}

func (f *pyFile) importStmt(toks []pyTok, from string) {
	p := &pyParser{toks: toks}
	for p.peek().kind != 0 {
		if p.accept('o', "(") || p.accept('o', ")") || p.accept('o', ",") {
			continue
		}
		name := ""
		for p.peek().kind == 'n' && p.peek().text != "as" {
			name += p.peek().text
			p.i++
			if !p.accept('o', ".") {
				break
			}
			name += "."
		}
		if name == "" {
			p.i++
			continue
		}
		bound := name
		if p.accept('n', "as") && p.peek().kind == 'n' {
			bound = p.peek().text
			p.i++
		} else if from == "" {
			bound, _, _ = strings.Cut(name, ".")
			name = bound
		}
		full := name
		if from != "" {
			full = from + "." + name
		}
		f.imports[bound] = full
	}
}

// pyRouteDecorators are the methods whose decorators make a function a
// request handler (flask, fastapi, bottle, ...).
var pyRouteDecorators = wordSet(`route get post put patch delete head options api_route websocket view_config api_view`)

// def opens a function: its parameters are sources when it handles
// requests (a route's decorator, a request parameter, a Lambda handler).
func (f *pyFile) def(toks []pyTok, indent int, decorators []*pyExpr) []pyTok {
	hdr, body := splitHeader(toks)
	scope := &pyFrame{indent: indent, vars: map[string]pyVal{}, parent: f.scope}
	var params []string
	depth := 0
	expectName := false
	for k := 2; k < len(hdr); k++ {
		t := hdr[k]
		if t.kind == 'o' {
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth == 1 {
					expectName = true
				}
			case ")", "]", "}":
				depth--
			case ",":
				if depth == 1 {
					expectName = true
				}
			}
			continue
		}
		if expectName && depth == 1 && t.kind == 'n' {
			params = append(params, t.text)
			expectName = false
		}
	}
	route := false
	for _, d := range decorators {
		fn := d
		if fn.kind == 'c' {
			fn = fn.x
		}
		if fn.kind == 'a' && pyRouteDecorators[fn.name] || fn.kind == 'n' && pyRouteDecorators[fn.name] {
			route = true
		}
	}
	lambda := len(params) >= 2 && params[len(params)-2] == "event" && params[len(params)-1] == "context"
	for _, p := range params {
		v := pyVal{}
		switch {
		case p == "self" || p == "cls":
			v = pyVal{obj: "self"}
		case route, lambda && p == "event":
			v = pyVal{taint: true, src: "a request parameter"}
		case p == "request" || p == "req":
			v = pyVal{taint: true, src: "the request"}
		}
		scope.vars[p] = v
	}
	if len(hdr) > 1 && hdr[1].kind == 'n' {
		f.scope.vars[hdr[1].text] = pyVal{konst: true, obj: "def"} // a local eval is not the builtin
	}
	f.scope = scope
	return body
}

// assignStmt reads an assignment (plain, chained, augmented, annotated)
// or an expression statement.
func (f *pyFile) assignStmt(toks []pyTok) {
	// split at the top-level = and augmented operators
	depth := 0
	var parts [][]pyTok
	var aug string
	start := 0
	for k, t := range toks {
		if t.kind != 'o' {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "=":
			if depth == 0 {
				parts = append(parts, toks[start:k])
				start = k + 1
			}
		case "+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "//=", "@=", "**=", ">>=", "<<=":
			if depth == 0 && aug == "" && len(parts) == 0 {
				aug = t.text
				parts = append(parts, toks[start:k])
				start = k + 1
			}
		}
	}
	p := &pyParser{toks: toks[start:]}
	value := p.exprList()
	v := f.ev(value)
	v.expr = value
	if v.built && v.at == 0 && len(parts) > 0 {
		v.at = toks[0].off + 1 // built here
	}
	for _, target := range parts {
		// an annotation (x: int = …) is not part of the target
		if hdr, _ := splitHeader(target); len(hdr) < len(target) {
			target = hdr
		}
		tp := &pyParser{toks: target}
		te := tp.exprList()
		if aug != "" {
			old := f.ev(te)
			nv := old.join(v)
			nv.built = nv.built || !nv.konst && (old.built || old.sql || v.built)
			nv.obj = old.obj
			if nv.built && nv.at == 0 {
				nv.at = toks[0].off + 1 // built here
			}
			f.assign(te, nv)
			continue
		}
		f.assignTLS(te, value)
		f.assign(te, v)
	}
}

// assign gives the target the value.
func (f *pyFile) assign(target *pyExpr, v pyVal) {
	switch target.kind {
	case 'n':
		f.scope.vars[target.name] = v
	case 'l':
		el := pyVal{taint: v.taint, src: v.src, konst: v.konst, weak: v.weak}
		for k, t := range target.args {
			if v.expr != nil && v.expr.kind == 'l' && len(v.expr.args) == len(target.args) {
				ev := f.ev(v.expr.args[k])
				ev.expr = v.expr.args[k]
				f.assign(t, ev)
				continue
			}
			f.assign(t, el)
		}
	case 'a':
		if d := target.dotted(); d != "" {
			f.scope.vars[d] = v
		}
	case 'i':
		if d := target.x.dotted(); d != "" {
			old := f.lookup(d)
			nv := old.join(v)
			nv.obj = old.obj
			f.scope.vars[d] = nv
		}
	case 'u':
		if target.star && len(target.args) == 1 {
			f.assign(target.args[0], v)
		}
	}
}

// lookup finds a variable in the scopes, then the imports and builtins.
func (f *pyFile) lookup(name string) pyVal {
	for s := f.scope; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	if full, ok := f.imports[name]; ok {
		return pyVal{konst: true, obj: full}
	}
	if pyBuiltins[name] {
		return pyVal{konst: true, obj: name}
	}
	return pyVal{}
}

// resolve returns an expression's full dotted name, imports resolved.
func (f *pyFile) resolve(e *pyExpr) string {
	if e.kind == 'c' && e.x.kind == 'n' && !f.shadowed(e.x.name) {
		// getattr(os, "system"), __import__("os")
		switch {
		case e.x.name == "getattr" && len(e.args) == 2 && e.args[1].kind == 's':
			if base := f.resolve(e.args[0]); base != "" {
				return base + "." + e.args[1].str.value
			}
		case e.x.name == "__import__" && len(e.args) >= 1 && e.args[0].kind == 's':
			return e.args[0].str.value
		}
	}
	if e.kind == 'a' && e.x.kind == 'c' {
		if base := f.resolve(e.x); base != "" && e.x.x.kind == 'n' && (e.x.x.name == "getattr" || e.x.x.name == "__import__") {
			return base + "." + e.name
		}
	}
	d := e.dotted()
	if d == "" {
		return ""
	}
	head, rest, _ := strings.Cut(d, ".")
	if rest == "" {
		if v := f.lookup(head); v.mod != "" {
			return v.mod
		}
	}
	if full, ok := f.imports[head]; ok {
		if rest == "" {
			return full
		}
		return full + "." + rest
	}
	// a variable that holds an object of a known class
	if e.kind == 'a' {
		if v := f.lookup(head); v.mod != "" && rest != "" {
			return v.mod + "." + rest
		} else if v.obj != "" && v.obj != "self" && rest != "" {
			if _, isImport := f.imports[head]; !isImport && !pyBuiltins[head] {
				return v.obj + "()." + rest
			}
		}
	}
	return d
}

// ev evaluates an expression, checking the calls in it.
func (f *pyFile) ev(e *pyExpr) pyVal {
	if v, ok := f.memo[e]; ok {
		return v
	}
	v := f.ev1(e)
	f.memo[e] = v
	return v
}

func (f *pyFile) ev1(e *pyExpr) pyVal {
	f.depth++
	defer func() { f.depth-- }()
	if f.depth > 2*pyMaxDepth {
		return pyVal{} // a chain of a + b + … thousands long
	}
	switch e.kind {
	case 's':
		v := pyVal{konst: true, sql: maybeSQL(e.str.value) && isSQL(e.str.value)}
		for _, part := range e.str.parts {
			pv := f.ev(part)
			if !pv.konst {
				v.konst = false
				v.built = v.built || !pv.fixed()
				v.clean = !v.built
			}
			v.taint = v.taint || pv.taint
			if v.src == "" {
				v.src = pv.src
			}
			if pv.built && v.at == 0 {
				v.at = pv.at
			}
		}
		return v
	case '1', 'k':
		return pyKonst
	case 'n':
		return f.lookup(e.name)
	case 'a':
		full := f.resolve(e)
		if src := pySource(full); src != "" {
			return pyVal{taint: true, src: src}
		}
		if full == "ssl._create_unverified_context" {
			f.report(e, "tls-verify-disabled", "an unverified SSL context accepts any certificate")
		}
		if d := e.dotted(); d != "" {
			for s := f.scope; s != nil; s = s.parent {
				if v, ok := s.vars[d]; ok {
					return v
				}
			}
		}
		base := f.ev(e.x)
		if base.obj != "" && base.konst && !base.taint {
			// a module's member (ssl.CERT_NONE) or a class's
			return pyVal{konst: true, obj: full}
		}
		return pyVal{taint: base.taint, src: base.src, konst: base.konst, weak: base.weak, obj: base.obj}
	case 'i':
		if src := pySource(f.resolve(e.x)); src != "" {
			return pyVal{taint: true, src: src}
		}
		base, idx := f.ev(e.x), f.ev(e.y)
		return pyVal{taint: base.taint, src: base.src, konst: base.konst && idx.konst, built: base.built, sql: base.sql, weak: base.weak, at: base.at}
	case 'b':
		l := f.ev(e.x)
		switch e.name {
		case ":=":
			r := f.ev(e.y)
			f.assign(e.x, r)
			return r
		case "<", ">", "==", ">=", "<=", "!=", "in", "is", "not":
			f.ev(e.y)
			return pyKonst
		}
		r := f.ev(e.y)
		for _, a := range e.args {
			f.ev(a)
		}
		v := l.join(r)
		switch e.name {
		case "+":
			if !v.fixed() && (e.x.kind == 's' || e.y.kind == 's' || l.built || r.built || l.sql || r.sql || !l.konst && !r.konst) {
				v.built = true
			}
		case "%":
			if e.x.kind == 's' || l.sql || l.built {
				v.built = !r.fixed() || l.built
				v.konst = l.konst && r.konst
			}
		}
		return v
	case 'l', 'd':
		v := pyKonst
		for _, a := range e.args {
			v = v.join(f.ev(a))
		}
		v.built = false
		v.expr = e
		return v
	case 'u':
		if e.name == "lambda" {
			for _, a := range e.args {
				f.ev(a)
			}
			return pyVal{}
		}
		v := pyKonst
		for _, a := range e.args {
			v = v.join(f.ev(a))
		}
		if e.name == "" {
			v.konst = false
		}
		return v
	case 'c':
		return f.call(e)
	}
	return pyVal{}
}

// call evaluates a call: the sinks are checked, and its value is what its
// function makes of its arguments.
func (f *pyFile) call(e *pyExpr) pyVal {
	full := f.resolve(e.x)
	meth := ""
	var base pyVal
	hasBase := false
	if e.x.kind == 'a' {
		meth = e.x.name
		base = f.ev(e.x.x)
		hasBase = true
	} else if e.x.kind == 'n' {
		meth = e.x.name
	} else {
		f.ev(e.x)
	}
	args := make([]pyVal, len(e.args))
	all := pyKonst
	for k, a := range e.args {
		args[k] = f.ev(a)
		args[k].expr = a
		all = all.join(args[k])
	}
	kws := map[string]pyVal{}
	for _, a := range e.kws {
		v := f.ev(a.v)
		v.expr = a.v
		kws[a.name] = v
		all = all.join(v)
	}
	f.sinks(e, full, meth, args, kws)
	if e.x.kind == 'n' && (e.x.name == "getattr" || e.x.name == "__import__") {
		if r := f.resolve(e); r != "" && r != e.x.name {
			return pyVal{konst: true, mod: r}
		}
	}
	// the value
	if src := pySourceCall(full, meth); src != "" {
		return pyVal{taint: true, src: src}
	}
	if pySanitizers[full] || pySanitizers[meth] && !hasBase {
		return pyKonst
	}
	if weakHashNames[full] {
		return pyVal{weak: true, obj: full}
	}
	v := all
	if hasBase {
		v = v.join(base)
		v.weak = base.weak || all.weak
	}
	v.built = false
	switch {
	case meth == "format" && hasBase || meth == "join" && hasBase && e.x.x.kind == 's' || meth == "format" && full == "format":
		v.sql = base.sql || all.sql
		v.built = !v.fixed()
	case hasBase && pyStrMethods[meth]:
		v.sql, v.built, v.at = base.sql, base.built, base.at
	}
	if hasBase && meth == "format" && (strings.HasPrefix(base.obj, "psycopg2.sql.") || strings.HasPrefix(base.obj, "psycopg.sql.") ||
		e.x.x.kind == 'c' && strings.HasSuffix(e.x.x.x.dotted(), "sql.SQL")) {
		return pyVal{konst: true} // psycopg's sql composition quotes its identifiers
	}
	if !v.taint && v.fixed() && !(meth == "format" || meth == "join" || pyStrMethods[meth]) {
		// a call of constants: a constant when it transforms constants
		// (dedent(code)), else not a constant, but not from outside
		// (table_name())
		if !(len(e.args)+len(e.kws) > 0 && v.konst && pyPure[full]) {
			v.konst, v.clean = false, true
		}
	}
	if full != "" && !strings.Contains(full, "()") && (e.x.kind == 'n' || f.lookup(strings.Split(full, ".")[0]).obj != "") {
		v.obj = full
	} else if hasBase && base.obj != "" && !base.konst {
		v.obj = base.obj
	}
	if v.obj == "" && hasBase && base.obj != "" {
		v.obj = base.obj + "()"
	}
	return v
}

// pyPure are functions whose value is made of their arguments alone: of
// constants, a constant (another call of constants may read a file or
// the network: not from outside, but not a constant).
var pyPure = wordSet(`textwrap.dedent textwrap.indent str repr bytes bytearray os.path.join os.path.basename
	os.path.dirname os.path.normpath posixpath.join ntpath.join base64.b64encode base64.b64decode
	base64.decodestring base64.encodestring base64.urlsafe_b64decode base64.urlsafe_b64encode codecs.decode
	codecs.encode json.dumps urllib.parse.quote urllib.parse.urlencode compile code.compile_command`)

// pyStrMethods keep a string's kind.
var pyStrMethods = wordSet(`strip lstrip rstrip lower upper replace encode decode title capitalize casefold
	expandtabs ljust rjust center zfill removeprefix removesuffix`)

// pySanitizers make a value safe for every sink checked: numbers,
// quoting for a shell.
var pySanitizers = map[string]bool{"int": true, "float": true, "bool": true, "len": true, "shlex.quote": true,
	"pipes.quote": true, "shlex.join": true, "hash": true, "abs": true, "round": true, "uuid.uuid4": true}

// sqlWords are the words sqlRe needs, one of them at least.
var sqlWords = []string{"select", "insert", "update", "delete", "where", "order", "group", "drop", "create", "alter", "truncate"}

// maybeSQL is a quick test before isSQL: a word of SQL, in any case.
func maybeSQL(s string) bool {
	if len(s) < 6 {
		return false
	}
	l := strings.ToLower(s)
	for _, w := range sqlWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// pySource names the source an attribute or name is, or "".
func pySource(full string) string {
	switch {
	case full == "sys.argv" || strings.HasPrefix(full, "sys.argv."):
		return "the command line"
	case full == "os.environ" || strings.HasPrefix(full, "os.environ."):
		return "the environment"
	case full == "sys.stdin" || strings.HasPrefix(full, "sys.stdin."):
		return "standard input"
	case strings.HasPrefix(full, "flask.request.") || full == "flask.request" ||
		strings.HasPrefix(full, "bottle.request.") || strings.HasPrefix(full, "django.http.request."):
		return "the request"
	}
	return ""
}

// pySourceCall names the source a call's value is, or "".
func pySourceCall(full, meth string) string {
	switch full {
	case "input", "raw_input":
		return "input()"
	case "os.getenv", "os.environb.get", "os.getenvb":
		return "the environment"
	case "getopt.getopt", "getopt.gnu_getopt":
		return "the command line"
	}
	if meth == "parse_args" || meth == "parse_known_args" {
		return "the command line"
	}
	if pySource(full) != "" {
		return pySource(full)
	}
	return ""
}

// assignTLS checks an assignment that turns certificate checks off.
func (f *pyFile) assignTLS(target, value *pyExpr) {
	if target.kind != 'a' {
		return
	}
	switch target.name {
	case "check_hostname":
		if value.kind == 'k' && value.name == "False" {
			f.report(target, "tls-verify-disabled", "check_hostname = False accepts any host's certificate")
		}
	case "verify_mode":
		if strings.HasSuffix(value.dotted(), "CERT_NONE") {
			f.report(target, "tls-verify-disabled", "CERT_NONE turns off certificate checks")
		}
	}
}
