package repo

import (
	"regexp"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"

	"github.com/ward-run/ward/modules/sdk"
)

// JavaScript files are parsed (goja's parser, ES2020 and after, with
// import, export and await blanked out first, offsets kept) and their
// sinks checked on the syntax tree, in the manner of Semgrep's JavaScript
// rules: values are followed through a function and into its closures
// (assignments, concatenation, template literals, object and array
// literals, destructuring, calls), each carrying how far it is from a
// constant: a literal, a value not known before the program runs, a
// function's parameter, or untrusted input (a route handler's req.query,
// body, params, cookies, headers; an AWS Lambda handler's event;
// process.argv and process.env; location). Each sink (jsSinks) says which
// argument it reads and how untrusted that must be. A file that does not
// parse is left to the line rules.

// jsLevel is how far a value is from a constant.
type jsLevel int

const (
	jsConst    jsLevel = iota // a literal, or a variable only given literals
	jsNonConst                // known only when the program runs
	jsParam                   // from a function's parameter
	jsSource                  // untrusted input
)

// jsVal is what the analysis knows of a JavaScript value.
type jsVal struct {
	level   jsLevel
	src     string // the untrusted source, if any
	event   bool   // the source is a Lambda handler's event
	path    string // what it names: "child_process.exec", "new vm2.VM", "mysql.createPool()"
	req     bool   // a request object (its query, body … are untrusted)
	lits    string // the text of the string literals it was built from
	built   bool   // a string built from a non-constant part
	weak    bool   // an MD5 or SHA-1 hash, or a value made from one
	module  bool   // path is a module's (required or imported)
	obj     *ast.ObjectLiteral
	arr     *ast.ArrayLiteral
	at      int  // where the string or object was built (offset+1)
	sqlDone bool // SQL built from untrusted input, reported where built
	strLit  bool // a string literal (or a variable given one)
	falseOK bool // the literal false
}

func (v jsVal) merge(w jsVal) jsVal {
	if w.level > v.level {
		v.level = w.level
	}
	if v.src == "" {
		v.src, v.event = w.src, w.event
	}
	if len(v.lits) < 2000 {
		v.lits += w.lits
	}
	v.built = v.built || w.built
	v.weak = v.weak || w.weak
	v.sqlDone = v.sqlDone || w.sqlDone
	if v.at == 0 {
		v.at = w.at
	}
	return v
}

// taint is the part of a value that flows into what is computed from it.
func (v jsVal) taint() jsVal {
	return jsVal{level: v.level, src: v.src, event: v.event, lits: v.lits, built: v.built, weak: v.weak, at: v.at, sqlDone: v.sqlDone}
}

// jsEnv is a function's variables, and the enclosing function's.
type jsEnv struct {
	vars   map[string]jsVal
	parent *jsEnv
}

func (e *jsEnv) lookup(name string) (jsVal, bool) {
	for ; e != nil; e = e.parent {
		if v, ok := e.vars[name]; ok {
			return v, true
		}
	}
	return jsVal{}, false
}

// set gives a variable a value where it was declared, or here.
func (e *jsEnv) set(name string, v jsVal) {
	for s := e; s != nil; s = s.parent {
		if _, ok := s.vars[name]; ok {
			s.vars[name] = v
			return
		}
	}
	e.vars[name] = v
}

// jsScan is a JavaScript file under analysis.
type jsScan struct {
	c        *codeScan
	imports  map[string]bool // modules required or imported
	handlers map[string]bool // functions exported as a Lambda handler
	depth    int
	console  int      // console.log(…) arguments being evaluated
	env      *jsEnv   // the environment of the statement being checked
	fn       ast.Node // the function being analysed
}

var (
	jsImport     = regexp.MustCompile(`(?m)^[ \t]*import\b[^;'"]*?(?:\bfrom\s*)?['"]([^'"]*)['"][ \t]*;?`)
	jsImportName = regexp.MustCompile(`^import\s+(?:\*\s+as\s+)?([A-Za-z_$][\w$]*)?\s*,?\s*(?:\{([^}]*)\})?`)
	jsExport     = regexp.MustCompile(`(?m)^[ \t]*export\s+(?:default\s+)?`)
	jsExportList = regexp.MustCompile(`(?m)^[ \t]*export\s*(?:\*|\{[^}]*\})\s*(?:from\s*['"][^'"]*['"])?[ \t]*;?`)
	jsRequire    = regexp.MustCompile(`\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)`)
	jsHandler    = regexp.MustCompile(`\bexports\.handler\s*=\s*([A-Za-z_$][\w$]*)\s*;?\s*$`)
)

// jsSinkWords are words a file must hold to have a sink (lower case:
// in any case).
var jsSinkWords = []string{"query", "exec", "raw", "spawn", "eval", "Function", "setTimeout", "setInterval", "setImmediate",
	"vm", "serialize", "rejectUnauthorized", "NODE_TLS", "createHash", "toFastProperties", "thenify", "Deno", "sqlite",
	"sandbox", "select", "insert", "update", "delete", "create", "alter", "drop", "Script"}

// jsTooDeep reports brackets nested, or prefix operators repeated, past
// 500 (strings not told apart: a bound, not a measure).
func jsTooDeep(text string) bool {
	depth, run := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '(', '[', '{':
			depth++
			if depth > 500 {
				return true
			}
		case ')', ']', '}':
			depth--
		case '-', '+', '!', '~':
			run++
			if run > 500 {
				return true
			}
			continue
		case ' ', '\t', '\n', '\r':
			continue
		}
		run = 0
	}
	return false
}

// blankWord replaces each whole word w (outside nothing: strings too) with
// spaces.
func blankWord(s, w string) string {
	if !strings.Contains(s, w) {
		return s
	}
	b := []byte(s)
	word := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; ; {
		k := strings.Index(s[i:], w)
		if k < 0 {
			break
		}
		k += i
		end := k + len(w)
		if (k == 0 || !word(s[k-1])) && (end == len(s) || !word(s[end])) {
			for x := k; x < end; x++ {
				b[x] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// blankOut replaces a match with spaces, its line ends kept.
func blankOut(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] != '\n' && b[i] != '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// jsAST checks a JavaScript file's sinks on its syntax tree; it reports
// false when the file does not parse.
func (c *codeScan) jsAST() (parsed bool) {
	if !c.hasAny(jsSinkWords...) {
		return true // no sink: nothing to find, parsed or not
	}
	if jsTooDeep(c.s.text) {
		return false // the parser recurses: nesting no person writes is left to the line rules
	}
	defer func() {
		if r := recover(); r != nil {
			parsed = false // a source the analysis did not expect: the line rules
		}
	}()
	j := &jsScan{c: c, imports: map[string]bool{}, handlers: map[string]bool{}}
	text := c.s.text
	if c.s.lang == "TypeScript" {
		text = tsStrip(text) // its types blanked out, offsets kept
	}
	prelude := jsEnv{vars: map[string]jsVal{}}
	src := text
	// import bindings, then blanked: goja parses scripts, not modules
	if strings.Contains(text, "import") {
		for _, m := range jsImport.FindAllStringSubmatchIndex(text, -1) {
			mod := text[m[2]:m[3]]
			j.imports[strings.TrimPrefix(mod, "node:")] = true
			j.importNames(strings.TrimSpace(text[m[0]:m[1]]), strings.TrimPrefix(mod, "node:"), &prelude)
		}
		src = jsImport.ReplaceAllStringFunc(src, blankOut)
	}
	if strings.Contains(text, "require") {
		for _, m := range jsRequire.FindAllStringSubmatch(text, -1) {
			j.imports[strings.TrimPrefix(m[1], "node:")] = true
		}
	}
	if strings.Contains(text, "exports.handler") {
		for _, line := range c.s.lines {
			if m := jsHandler.FindStringSubmatch(line); m != nil {
				j.handlers[m[1]] = true
			}
		}
	}
	if strings.Contains(text, "export") {
		src = jsExportList.ReplaceAllStringFunc(src, blankOut)
		src = jsExport.ReplaceAllStringFunc(src, blankOut)
	}
	src = blankWord(src, "await")
	prog, err := jsParse(src)
	if err != nil {
		return false
	}
	env := &jsEnv{vars: prelude.vars}
	j.stmts(prog.Body, env)
	return true
}

func jsParse(src string) (prog *ast.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			prog, err = nil, errJSParse
		}
	}()
	return parser.ParseFile(nil, "", src, parser.IgnoreRegExpErrors)
}

type jsParseError struct{}

func (jsParseError) Error() string { return "the parser failed" }

var errJSParse error = jsParseError{}

// importNames binds the names an import statement declares.
func (j *jsScan) importNames(stmt, mod string, env *jsEnv) {
	m := jsImportName.FindStringSubmatch(stmt)
	if m == nil {
		return
	}
	if m[1] != "" {
		env.vars[m[1]] = jsVal{level: jsNonConst, path: mod, module: true}
	}
	for _, part := range strings.Split(m[2], ",") {
		f := strings.Fields(part)
		switch {
		case len(f) == 3 && f[1] == "as":
			env.vars[f[2]] = jsVal{level: jsNonConst, path: mod + "." + f[0], module: true}
		case len(f) == 1:
			env.vars[f[0]] = jsVal{level: jsNonConst, path: mod + "." + f[0], module: true}
		}
	}
}

func (j *jsScan) off(n ast.Node) int { return max(0, int(n.Idx0())-1) }

func (j *jsScan) report(n ast.Node, rule, msg string) {
	sev := sdk.SeverityError
	if rule == "weak-hash" {
		sev = sdk.SeverityWarning
	}
	j.c.report(j.off(n), rule, sev, msg)
}

func (j *jsScan) stmts(list []ast.Statement, env *jsEnv) {
	for _, s := range list {
		j.stmt(s, env)
	}
}

func (j *jsScan) stmt(s ast.Statement, env *jsEnv) {
	prev := j.env
	j.env = env
	defer func() { j.env = prev }()
	switch s := s.(type) {
	case *ast.ExpressionStatement:
		j.expr(s.Expression, env)
	case *ast.VariableStatement:
		j.bindings(s.List, env)
	case *ast.LexicalDeclaration:
		j.bindings(s.List, env)
	case *ast.FunctionDeclaration:
		v := j.function(s.Function, env, "")
		if s.Function.Name != nil {
			env.vars[string(s.Function.Name.Name)] = v
		}
	case *ast.ClassDeclaration:
		j.class(s.Class, env)
	case *ast.BlockStatement:
		j.stmts(s.List, env)
	case *ast.IfStatement:
		j.expr(s.Test, env)
		j.stmt(s.Consequent, env)
		if s.Alternate != nil {
			j.stmt(s.Alternate, env)
		}
	case *ast.ForStatement:
		switch init := s.Initializer.(type) {
		case *ast.ForLoopInitializerExpression:
			j.expr(init.Expression, env)
		case *ast.ForLoopInitializerVarDeclList:
			j.bindings(init.List, env)
		case *ast.ForLoopInitializerLexicalDecl:
			j.bindings(init.LexicalDeclaration.List, env)
		}
		j.expr(s.Test, env)
		j.expr(s.Update, env)
		j.stmt(s.Body, env)
	case *ast.ForInStatement:
		j.forInto(s.Into, jsVal{level: jsNonConst}, env)
		j.expr(s.Source, env)
		j.stmt(s.Body, env)
	case *ast.ForOfStatement:
		j.forInto(s.Into, j.expr(s.Source, env).taint(), env)
		j.stmt(s.Body, env)
	case *ast.WhileStatement:
		j.expr(s.Test, env)
		j.stmt(s.Body, env)
	case *ast.DoWhileStatement:
		j.stmt(s.Body, env)
		j.expr(s.Test, env)
	case *ast.TryStatement:
		j.stmt(s.Body, env)
		if s.Catch != nil {
			if s.Catch.Parameter != nil {
				j.bind(s.Catch.Parameter, jsVal{level: jsNonConst}, env)
			}
			j.stmt(s.Catch.Body, env)
		}
		if s.Finally != nil {
			j.stmt(s.Finally, env)
		}
	case *ast.ReturnStatement:
		j.expr(s.Argument, env)
	case *ast.ThrowStatement:
		j.expr(s.Argument, env)
	case *ast.SwitchStatement:
		j.expr(s.Discriminant, env)
		for _, cs := range s.Body {
			j.expr(cs.Test, env)
			j.stmts(cs.Consequent, env)
		}
	case *ast.LabelledStatement:
		j.stmt(s.Statement, env)
	case *ast.WithStatement:
		j.expr(s.Object, env)
		j.stmt(s.Body, env)
	}
}

func (j *jsScan) forInto(into ast.ForInto, v jsVal, env *jsEnv) {
	switch in := into.(type) {
	case *ast.ForIntoVar:
		j.bind(in.Binding.Target, v, env)
	case *ast.ForDeclaration:
		j.bind(in.Target, v, env)
	case *ast.ForIntoExpression:
		j.assignTo(in.Expression, v, env)
	}
}

func (j *jsScan) bindings(list []*ast.Binding, env *jsEnv) {
	for _, b := range list {
		var v jsVal
		if b.Initializer != nil {
			name := ""
			if id, ok := b.Target.(*ast.Identifier); ok {
				name = string(id.Name)
			}
			v = j.exprNamed(b.Initializer, env, name)
		}
		j.bind(b.Target, v, env)
	}
}

// bind declares the names of a binding target (a name, or a pattern that
// destructures the value).
func (j *jsScan) bind(t ast.Expression, v jsVal, env *jsEnv) {
	switch t := t.(type) {
	case *ast.Identifier:
		env.vars[string(t.Name)] = v
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				env.vars[string(p.Name.Name)] = j.member(v, string(p.Name.Name))
			case *ast.PropertyKeyed:
				key := ""
				if s, ok := p.Key.(*ast.StringLiteral); ok {
					key = string(s.Value)
				}
				j.bind(p.Value, j.member(v, key), env)
			}
		}
		if t.Rest != nil {
			j.bind(t.Rest, v.taint(), env)
		}
	case *ast.ArrayPattern:
		for _, e := range t.Elements {
			if e != nil {
				j.bind(e, v.taint(), env)
			}
		}
		if t.Rest != nil {
			j.bind(t.Rest, v.taint(), env)
		}
	case *ast.AssignExpression: // a default value
		d := j.expr(t.Right, env)
		j.bind(t.Left, v.merge(d.taint()), env)
	case *ast.Binding:
		j.bind(t.Target, v, env)
	}
}

// assignTo gives an assignment's left side a value.
func (j *jsScan) assignTo(left ast.Expression, v jsVal, env *jsEnv) {
	switch l := left.(type) {
	case *ast.Identifier:
		env.set(string(l.Name), v)
	case *ast.ObjectPattern, *ast.ArrayPattern:
		j.bind(l, v, env)
	case *ast.DotExpression, *ast.BracketExpression:
		// obj.x = tainted: the object is tainted
		root := left
		for {
			switch r := root.(type) {
			case *ast.DotExpression:
				root = r.Left
				continue
			case *ast.BracketExpression:
				root = r.Left
				continue
			}
			break
		}
		if id, ok := root.(*ast.Identifier); ok {
			if prev, ok := env.lookup(string(id.Name)); ok && v.level > jsConst {
				env.set(string(id.Name), prev.merge(v.taint()))
			}
		}
	}
}

// member is the value of v.name.
func (j *jsScan) member(v jsVal, name string) jsVal {
	out := v.taint()
	if v.path != "" && name != "" {
		out.path, out.module = v.path+"."+name, v.module
	}
	if name == "length" {
		return jsVal{level: min(v.level, jsNonConst)}
	}
	if v.req && jsRequestFields[name] {
		out.level, out.src, out.req = jsSource, "request "+name, false
	}
	if v.req && name == "request" {
		out.req = true // koa: ctx.request
	}
	if src, ok := jsGlobalSources[out.path]; ok {
		out.level, out.src = jsSource, src
	}
	return out
}

// jsRequestFields are the untrusted parts of a request.
var jsRequestFields = wordSet(`query body params cookies headers files signedCookies`)

// jsGlobalSources are untrusted values named by a global.
var jsGlobalSources = map[string]string{
	"process.argv": "the command line", "process.env": "the environment",
	"location.search": "the URL", "location.hash": "the URL", "location.href": "the URL",
	"window.location.search": "the URL", "window.location.hash": "the URL", "window.location.href": "the URL",
	"document.location.search": "the URL", "document.location.hash": "the URL", "document.location.href": "the URL",
	"document.URL": "the URL", "document.cookie": "cookies", "document.referrer": "the referrer",
}

// expr evaluates an expression, checking the sinks in it.
func (j *jsScan) expr(e ast.Expression, env *jsEnv) jsVal { return j.exprNamed(e, env, "") }

// exprNamed evaluates an expression given to a variable of the name.
func (j *jsScan) exprNamed(e ast.Expression, env *jsEnv, name string) jsVal {
	if e == nil {
		return jsVal{}
	}
	j.depth++
	defer func() { j.depth-- }()
	if j.depth > 200 {
		return jsVal{level: jsNonConst}
	}
	switch e := e.(type) {
	case *ast.StringLiteral:
		return jsVal{lits: string(e.Value), strLit: true, path: "<lit>"}
	case *ast.NumberLiteral, *ast.NullLiteral, *ast.RegExpLiteral:
		return jsVal{path: "<lit>"}
	case *ast.BooleanLiteral:
		return jsVal{falseOK: !e.Value}
	case *ast.TemplateLiteral:
		var v jsVal
		for _, el := range e.Elements {
			v.lits += string(el.Parsed)
		}
		for _, x := range e.Expressions {
			xv := j.expr(x, env)
			v = v.merge(xv.taint())
			if xv.level > jsConst {
				v.built = true
			}
		}
		if e.Tag != nil {
			t := j.expr(e.Tag, env)
			v = v.merge(t.taint())
			v.lits = ""
		} else if v.built {
			v.at = j.off(e) + 1
			v.sqlDone = j.sqlString(e, v, e.Expressions, env)
		}
		v.strLit = v.level == jsConst
		return v
	case *ast.Identifier:
		n := string(e.Name)
		if v, ok := env.lookup(n); ok {
			return v
		}
		if n == "undefined" {
			return jsVal{}
		}
		return jsVal{level: jsNonConst, path: n}
	case *ast.ThisExpression:
		return jsVal{level: jsNonConst, path: "this"}
	case *ast.DotExpression:
		return j.member(j.expr(e.Left, env), string(e.Identifier.Name))
	case *ast.PrivateDotExpression:
		return j.expr(e.Left, env).taint()
	case *ast.BracketExpression:
		l := j.expr(e.Left, env)
		k := j.expr(e.Member, env)
		if s, ok := e.Member.(*ast.StringLiteral); ok {
			return j.member(l, string(s.Value))
		}
		return l.taint().merge(jsVal{level: min(k.level, jsNonConst)})
	case *ast.BinaryExpression:
		if e.Operator == token.PLUS {
			return j.concat(e, env)
		}
		l, r := j.expr(e.Left, env), j.expr(e.Right, env)
		switch e.Operator {
		case token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
			return l.taint().merge(r.taint())
		}
		// a comparison or arithmetic: a number or a boolean
		return jsVal{level: min(max(l.level, r.level), jsNonConst)}
	case *ast.AssignExpression:
		r := j.exprNamed(e.Right, env, jsName(e.Left))
		j.tlsEnv(e, r)
		if e.Operator == token.PLUS || e.Operator == token.LOGICAL_OR || e.Operator == token.COALESCE {
			l := j.expr(e.Left, env)
			r = l.merge(r)
			if e.Operator == token.PLUS && r.level > jsConst {
				r.built = true
				// q += req.query.id, q holding SQL: where the input joins it
				r.sqlDone = j.sqlString(e, r, []ast.Expression{e.Right}, env) || r.sqlDone
			}
		} else if e.Operator != token.ASSIGN && e.Operator != 0 {
			r = jsVal{level: jsNonConst}
		}
		j.assignTo(e.Left, r, env)
		return r
	case *ast.CallExpression:
		return j.call(e, env)
	case *ast.NewExpression:
		return j.newExpr(e, env)
	case *ast.ObjectLiteral:
		return j.object(e, env)
	case *ast.ArrayLiteral:
		v := jsVal{arr: e}
		for _, x := range e.Value {
			if x != nil {
				v = v.merge(j.expr(x, env).taint())
			}
		}
		v.lits = ""
		return v
	case *ast.ConditionalExpression:
		j.expr(e.Test, env)
		a, b := j.expr(e.Consequent, env), j.expr(e.Alternate, env)
		v := a.taint().merge(b.taint())
		v.strLit = a.strLit && b.strLit
		return v
	case *ast.SequenceExpression:
		var v jsVal
		for _, x := range e.Sequence {
			v = j.expr(x, env)
		}
		return v
	case *ast.UnaryExpression:
		v := j.expr(e.Operand, env)
		switch e.Operator {
		case token.NOT, token.TYPEOF, token.MINUS, token.PLUS, token.INCREMENT, token.DECREMENT, token.BITWISE_NOT, token.DELETE:
			return jsVal{level: min(v.level, jsNonConst)}
		}
		return v.taint()
	case *ast.AwaitExpression:
		return j.expr(e.Argument, env)
	case *ast.YieldExpression:
		j.expr(e.Argument, env)
		return jsVal{level: jsNonConst}
	case *ast.SpreadElement:
		return j.expr(e.Expression, env)
	case *ast.OptionalChain:
		return j.expr(e.Expression, env)
	case *ast.Optional:
		return j.expr(e.Expression, env)
	case *ast.FunctionLiteral:
		return j.function(e, env, name)
	case *ast.ArrowFunctionLiteral:
		return j.arrow(e, env, name, false)
	case *ast.ClassLiteral:
		j.class(e, env)
		return jsVal{level: jsNonConst}
	}
	return jsVal{level: jsNonConst}
}

func jsName(e ast.Expression) string {
	switch e := e.(type) {
	case *ast.Identifier:
		return string(e.Name)
	case *ast.DotExpression:
		if l := jsName(e.Left); l != "" {
			return l + "." + string(e.Identifier.Name)
		}
	}
	return ""
}

// concat evaluates a + chain; SQL built from untrusted input is reported
// where the input joins it.
func (j *jsScan) concat(e *ast.BinaryExpression, env *jsEnv) jsVal {
	var parts []ast.Expression
	var flatten func(x ast.Expression)
	flatten = func(x ast.Expression) {
		if b, ok := x.(*ast.BinaryExpression); ok && b.Operator == token.PLUS {
			flatten(b.Left)
			flatten(b.Right)
			return
		}
		parts = append(parts, x)
	}
	flatten(e)
	var v jsVal
	str := false
	for _, p := range parts {
		pv := j.expr(p, env)
		if pv.strLit || pv.lits != "" {
			str = true
		}
		v = v.merge(pv.taint())
	}
	v.built = v.built || str && v.level > jsConst
	v.strLit = v.level == jsConst && str
	if v.built {
		v.at = j.off(e) + 1
		v.sqlDone = j.sqlString(e, v, parts, env)
	}
	return v
}

// jsSQLText is SQL in a string literal.
var jsSQLText = regexp.MustCompile(`(?i)\b(?:select|delete|insert|create|alter|drop)\b|\bupdate\s[\s\S]+\sset\b`)

// sqlString reports SQL text built from untrusted input: at each
// untrusted part (at the start of the whole string for a Lambda's event).
func (j *jsScan) sqlString(whole ast.Expression, v jsVal, parts []ast.Expression, env *jsEnv) bool {
	if v.level < jsSource || j.console > 0 || !jsSQLText.MatchString(v.lits) {
		return false
	}
	if v.event {
		j.report(whole, "sql-injection", "SQL built from "+v.src+" by concatenation: use query parameters")
		return true
	}
	var flat []ast.Expression
	for _, p := range parts {
		flat = append(flat, jsTerms(p)...)
	}
	for _, p := range flat {
		// evaluated again without reporting: the parts are small
		if pv := j.quiet(p, env); pv.level >= jsSource {
			j.report(p, "sql-injection", "SQL built from "+pv.src+" by concatenation: use query parameters")
		}
	}
	return true
}

// jsTerms are the terms of a + chain, the values of a template.
func jsTerms(e ast.Expression) []ast.Expression {
	var out []ast.Expression
	var walk func(x ast.Expression)
	walk = func(x ast.Expression) {
		switch x := x.(type) {
		case *ast.BinaryExpression:
			if x.Operator == token.PLUS && len(out) < 1000 {
				walk(x.Left)
				walk(x.Right)
				return
			}
		case *ast.TemplateLiteral:
			if x.Tag == nil {
				out = append(out, x.Expressions...)
				return
			}
		}
		out = append(out, x)
	}
	walk(e)
	return out
}

// quiet evaluates an expression without reporting.
func (j *jsScan) quiet(e ast.Expression, env *jsEnv) jsVal {
	switch e := e.(type) {
	case *ast.Identifier:
		return j.expr(e, env)
	case *ast.DotExpression:
		return j.member(j.quiet(e.Left, env), string(e.Identifier.Name))
	case *ast.BracketExpression:
		if s, ok := e.Member.(*ast.StringLiteral); ok {
			return j.member(j.quiet(e.Left, env), string(s.Value))
		}
		return j.quiet(e.Left, env).taint()
	case *ast.CallExpression:
		if jsSanitizer(jsMethod(e.Callee)) {
			return jsVal{level: jsNonConst}
		}
		v := jsVal{}
		if d, ok := e.Callee.(*ast.DotExpression); ok {
			v = j.quiet(d.Left, env).taint()
		}
		for _, a := range e.ArgumentList {
			v = v.merge(j.quiet(a, env).taint())
		}
		return v
	case *ast.StringLiteral, *ast.NumberLiteral:
		return jsVal{}
	}
	return jsVal{level: jsNonConst}
}

// object evaluates an object literal; rejectUnauthorized: false is
// reported at the outermost object literal that holds it.
func (j *jsScan) object(o *ast.ObjectLiteral, env *jsEnv) jsVal {
	v := jsVal{obj: o, level: jsConst}
	for _, p := range o.Value {
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if p.Computed {
				j.expr(p.Key, env)
			}
			v = v.merge(j.expr(p.Value, env).taint())
		case *ast.PropertyShort:
			v = v.merge(j.expr(&p.Name, env).taint())
		case *ast.SpreadElement:
			v = v.merge(j.expr(p.Expression, env).taint())
		}
	}
	v.lits = ""
	if v, ok := jsProp(o, "rejectUnauthorized"); ok && jsFalse(v) {
		j.report(o, "tls-verify-disabled", "rejectUnauthorized: false turns off certificate checks")
	} else if _, ok := jsProp(o, "dialectOptions"); ok && jsTLSOff(o, 0) {
		j.report(o, "tls-verify-disabled", "a database connection with rejectUnauthorized: false accepts any certificate")
	}
	return v
}

// jsTLSOff reports an object literal (or one nested in it) that sets
// rejectUnauthorized to false.
func jsTLSOff(o *ast.ObjectLiteral, depth int) bool {
	if depth > 8 {
		return false
	}
	for _, p := range o.Value {
		kp, ok := p.(*ast.PropertyKeyed)
		if !ok {
			continue
		}
		if jsKey(kp) == "rejectUnauthorized" && jsFalse(kp.Value) {
			return true
		}
		if inner, ok := kp.Value.(*ast.ObjectLiteral); ok && jsTLSOff(inner, depth+1) {
			return true
		}
	}
	return false
}

// jsKey is a property's name, when it is not computed.
func jsKey(p *ast.PropertyKeyed) string {
	if p.Computed {
		return ""
	}
	switch k := p.Key.(type) {
	case *ast.StringLiteral:
		return string(k.Value)
	case *ast.Identifier:
		return string(k.Name)
	}
	return ""
}

// jsProp is an object literal's property of the name.
func jsProp(o *ast.ObjectLiteral, name string) (ast.Expression, bool) {
	if o == nil {
		return nil, false
	}
	for _, p := range o.Value {
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if jsKey(p) == name {
				return p.Value, true
			}
		case *ast.PropertyShort:
			if string(p.Name.Name) == name {
				return &p.Name, true
			}
		}
	}
	return nil, false
}

func jsFalse(e ast.Expression) bool {
	switch e := e.(type) {
	case *ast.BooleanLiteral:
		return !e.Value
	case *ast.NumberLiteral:
		return e.Literal == "0"
	case *ast.UnaryExpression: // !1
		if n, ok := e.Operand.(*ast.NumberLiteral); ok && e.Operator == token.NOT {
			return n.Literal != "0"
		}
	}
	return false
}

// tlsEnv reports process.env.NODE_TLS_REJECT_UNAUTHORIZED = 0.
func (j *jsScan) tlsEnv(e *ast.AssignExpression, r jsVal) {
	name := jsName(e.Left)
	if b, ok := e.Left.(*ast.BracketExpression); ok {
		if s, ok := b.Member.(*ast.StringLiteral); ok {
			name = jsName(b.Left) + "." + string(s.Value)
		}
	}
	if !strings.HasSuffix(name, "env.NODE_TLS_REJECT_UNAUTHORIZED") {
		return
	}
	switch v := e.Right.(type) {
	case *ast.NumberLiteral:
		if v.Literal != "0" {
			return
		}
	case *ast.StringLiteral:
		if string(v.Value) != "0" {
			return
		}
	default:
		return
	}
	j.report(e.Left, "tls-verify-disabled", "NODE_TLS_REJECT_UNAUTHORIZED=0 turns off certificate checks")
}

// jsRouteMethods are the methods that register a route's handler.
var jsRouteMethods = wordSet(`get post put patch delete del head options all use route handle`)

// function analyses a function's body; name is what it is given to.
func (j *jsScan) function(f *ast.FunctionLiteral, env *jsEnv, name string) jsVal {
	if name == "" && f.Name != nil {
		name = string(f.Name.Name)
	}
	return j.funcBody(f, f.ParameterList, f.Body, env, name, false)
}

func (j *jsScan) arrow(f *ast.ArrowFunctionLiteral, env *jsEnv, name string, route bool) jsVal {
	return j.funcBody(f, f.ParameterList, f.Body, env, name, route)
}

func (j *jsScan) funcBody(fn ast.Node, params *ast.ParameterList, body ast.Node, env *jsEnv, name string, route bool) jsVal {
	saved := j.fn
	j.fn = fn
	defer func() { j.fn = saved }()
	child := &jsEnv{vars: map[string]jsVal{}, parent: env}
	if params != nil {
		n := len(params.List)
		for i, b := range params.List {
			v := jsVal{level: jsParam}
			pname := ""
			if id, ok := b.Target.(*ast.Identifier); ok {
				pname = string(id.Name)
				v.path = pname
			}
			if i == 0 {
				switch {
				case name == "handler" || strings.HasSuffix(name, ".handler") || j.handlers[name]:
					v = jsVal{level: jsSource, src: "the Lambda event", event: true}
				case route || n == 2 || n == 3 || jsRequestNames[pname]:
					v.req = true
				}
			} else if jsRequestNames[pname] {
				v.req = true
			}
			j.bind(b.Target, v, child)
		}
		if params.Rest != nil {
			j.bind(params.Rest, jsVal{level: jsParam}, child)
		}
	}
	switch b := body.(type) {
	case *ast.BlockStatement:
		if b != nil {
			j.stmts(b.List, child)
		}
	case *ast.ExpressionBody:
		j.expr(b.Expression, child)
	}
	return jsVal{level: jsNonConst, path: "<function>"}
}

// jsRequestNames are parameters that name a request.
var jsRequestNames = wordSet(`req request ctx context`)

func (j *jsScan) class(c *ast.ClassLiteral, env *jsEnv) {
	if c.SuperClass != nil {
		j.expr(c.SuperClass, env)
	}
	for _, el := range c.Body {
		switch el := el.(type) {
		case *ast.MethodDefinition:
			j.function(el.Body, env, "")
		case *ast.FieldDefinition:
			j.expr(el.Initializer, env)
		case *ast.ClassStaticBlock:
			j.stmts(el.Block.List, &jsEnv{vars: map[string]jsVal{}, parent: env})
		}
	}
}

// jsSanitizers are calls whose value is safe in a query or command (and
// any whose name says escape, quote or sanitize).
var jsSanitizers = wordSet(`parseInt parseFloat Number Boolean isNaN toFixed hash compare literal`)

func jsSanitizer(method string) bool {
	if jsSanitizers[method] {
		return true
	}
	m := strings.ToLower(method)
	return strings.Contains(m, "escape") || strings.Contains(m, "quote") || strings.Contains(m, "sanitiz")
}

// call evaluates a call and checks it against the sinks.
func (j *jsScan) call(e *ast.CallExpression, env *jsEnv) jsVal {
	callee := j.expr(e.Callee, env)
	method := jsMethod(e.Callee)
	if callee.module {
		// import { exec as run }: run() is exec()
		method = callee.path[strings.LastIndexByte(callee.path, '.')+1:]
	}
	route := jsRouteMethods[method]
	if strings.HasPrefix(callee.path, "console.") {
		j.console++
		defer func() { j.console-- }()
	}
	args := j.args(e.ArgumentList, env, route)
	if method == "require" && len(e.ArgumentList) > 0 {
		if s, ok := e.ArgumentList[0].(*ast.StringLiteral); ok {
			return jsVal{level: jsNonConst, path: strings.TrimPrefix(string(s.Value), "node:"), module: true}
		}
	}
	j.sinks(e, e.ArgumentList, callee, method, args, false)
	if jsSanitizer(method) {
		return jsVal{} // a number, or a value escaped: as safe as a constant
	}
	v := jsVal{level: jsNonConst}
	if _, ok := e.Callee.(*ast.DotExpression); ok {
		v = v.merge(callee.taint())
	}
	for _, a := range args {
		v = v.merge(a.taint())
	}
	if callee.path != "" {
		v.path, v.module = callee.path+"()", callee.module
	}
	if method == "createHash" && len(args) > 0 && jsWeakAlgo.MatchString(args[0].lits) {
		v.weak = true
	}
	if method == "concat" || method == "format" {
		v.sqlDone = j.sqlString(e, v, e.ArgumentList, env)
	}
	return v
}

var jsWeakAlgo = regexp.MustCompile(`(?i)^(?:md5|sha1|sha-1)$`)

func (j *jsScan) args(list []ast.Expression, env *jsEnv, route bool) []jsVal {
	out := make([]jsVal, len(list))
	for i, a := range list {
		switch f := a.(type) {
		case *ast.ArrowFunctionLiteral:
			out[i] = j.arrow(f, env, "", route)
		case *ast.FunctionLiteral:
			out[i] = j.funcBody(f, f.ParameterList, f.Body, env, "", route)
		default:
			out[i] = j.expr(a, env)
		}
	}
	return out
}

func (j *jsScan) newExpr(e *ast.NewExpression, env *jsEnv) jsVal {
	callee := j.expr(e.Callee, env)
	args := j.args(e.ArgumentList, env, false)
	j.sinks(e, e.ArgumentList, callee, jsMethod(e.Callee), args, true)
	v := jsVal{level: jsNonConst}
	for _, a := range args {
		v = v.merge(a.taint())
	}
	v.lits = ""
	if callee.path != "" {
		v.path, v.module = "new "+callee.path, callee.module
	}
	v.at = j.off(e) + 1
	return v
}

// jsMethod is the name a call calls: f of f(), m of x.m().
func jsMethod(e ast.Expression) string {
	switch e := e.(type) {
	case *ast.Identifier:
		return string(e.Name)
	case *ast.DotExpression:
		return string(e.Identifier.Name)
	case *ast.BracketExpression:
		if s, ok := e.Member.(*ast.StringLiteral); ok {
			return string(s.Value)
		}
	}
	return ""
}

// jsSink is a call that must not be given untrusted or dynamic values.
type jsSink struct {
	rule  string
	mods  []string // the modules it comes from
	names []string // the function or method
	isNew bool     // called with new
	arg   int      // the argument it reads; -1: any
	level jsLevel  // how untrusted the argument must be
	atArg bool     // reported at the argument (else at the call)
	bound bool     // the callee must come from the module (not a receiver unknown)
	sql   bool     // a query: a string built at run time will do
	what  string
}

// jsSinks are the sinks that need no more than an argument's level; a
// call matches when its callee resolves to one of the modules, or (its
// receiver unknown) the file requires or imports one.
var jsSinks = []jsSink{
	{rule: "sql-injection", mods: []string{"mysql", "mysql2", "mysql2/promise", "pg", "pg-pool", "pg-promise", "sequelize", "mssql", "knex", "oracledb", "mariadb", "postgres", "typeorm", "@prisma/client",
		// and receivers named for a database (db.query, this.pool.query, prisma.$queryRawUnsafe)
		"db", "database", "pool", "conn", "connection", "prisma", "trx"},
		names: []string{"query", "execute", "raw", "whereRaw", "orWhereRaw", "andWhereRaw", "havingRaw", "orHavingRaw", "orderByRaw", "groupByRaw", "joinRaw", "fromRaw", "unsafe", "$queryRawUnsafe", "$executeRawUnsafe", "none", "one", "many", "any", "oneOrNone", "manyOrNone"},
		arg:   0, level: jsParam, atArg: true, sql: true, what: "a query built from %s is run"},
	{rule: "sql-injection", mods: []string{"sqlite3", "better-sqlite3", "sqlite"},
		names: []string{"run", "all", "get", "exec", "each", "prepare"},
		arg:   0, level: jsParam, atArg: true, sql: true, what: "a query built from %s is run"},
	{rule: "shell-injection", mods: []string{"child_process"},
		names: []string{"exec", "execSync", "spawn", "spawnSync"},
		arg:   0, level: jsParam, atArg: true, what: "a command built from %s is run"},
	{rule: "shell-injection", mods: []string{"shelljs"},
		names: []string{"exec"}, arg: 0, level: jsNonConst, what: "shelljs runs a command built from %s in a shell"},
	{rule: "code-injection", mods: []string{"vm"},
		names: []string{"runInContext", "runInNewContext", "runInThisContext", "compileFunction"},
		arg:   -1, level: jsSource, what: "vm runs code built from %s"},
	{rule: "code-injection", mods: []string{"vm"}, isNew: true,
		names: []string{"Script", "SourceTextModule"}, arg: -1, level: jsSource, what: "vm compiles code built from %s"},
	{rule: "code-injection", mods: []string{"vm2"}, isNew: true,
		names: []string{"VM", "NodeVM"}, arg: -1, level: jsSource, what: "a vm2 sandbox is given %s"},
	{rule: "code-injection", mods: []string{"vm2"}, isNew: true,
		names: []string{"VMScript"}, arg: 0, level: jsNonConst, what: "vm2 compiles code built from %s"},
	{rule: "code-injection", mods: []string{"bluebird"},
		names: []string{"toFastProperties"}, arg: 0, level: jsParam, atArg: true, what: "toFastProperties can run code built from %s"},
	{rule: "unsafe-deserialization", mods: []string{"node-serialize", "serialize-to-js", "funcster"},
		names: []string{"unserialize", "deserialize", "deepDeserialize"}, arg: 0, level: jsParam, bound: true, what: "%s is deserialized by a library that runs functions in the data"},
}

// jsLocalModule reports a path that starts at a module of the project
// (require("./db")): what it exports is not known.
func jsLocalModule(path string) bool {
	return strings.HasPrefix(path, ".") || strings.HasPrefix(path, "@/") || strings.HasPrefix(path, "~/")
}

// levelWord says where a value comes from.
func levelWord(v jsVal) string {
	switch {
	case v.src != "":
		return v.src
	case v.level >= jsParam:
		return "a parameter"
	}
	return "a value known only at run time"
}

// fromModule reports a callee that comes from one of the modules.
func (j *jsScan) fromModule(callee jsVal, mods []string) bool {
	return j.fromModuleBound(callee, mods, false)
}

// fromModuleBound is fromModule; bound: only a callee that comes from the
// module.
func (j *jsScan) fromModuleBound(callee jsVal, mods []string, bound bool) bool {
	if callee.module && !jsLocalModule(callee.path) {
		for _, m := range mods {
			if callee.path == m || strings.HasPrefix(callee.path, m+".") || strings.HasPrefix(callee.path, "new "+m+".") || strings.HasPrefix(callee.path, m+"(") {
				return true
			}
		}
		return false
	}
	if bound || strings.HasPrefix(callee.path, "<") {
		return false // a literal's method
	}
	// a receiver named for the module (db.sequelize.query, knex.raw)
	if segs := strings.Split(callee.path, "."); len(segs) > 1 {
		for _, seg := range segs[:len(segs)-1] {
			if slicesContains(mods, seg) {
				return true
			}
		}
	}
	for _, m := range mods {
		if j.imports[m] {
			return true
		}
	}
	return false
}

func (j *jsScan) sinks(call ast.Node, argList []ast.Expression, callee jsVal, method string, args []jsVal, isNew bool) {
	for _, s := range jsSinks {
		if s.isNew != isNew || !slicesContains(s.names, method) || !j.fromModuleBound(callee, s.mods, s.bound) {
			continue
		}
		for i, a := range args {
			if s.arg >= 0 && i != s.arg {
				continue
			}
			if s.sql && a.level < s.level && a.level > jsConst && a.built && jsSQLText.MatchString(a.lits) {
				// SQL built by concatenation or a template: reported at
				// the call, or where the variable given it was built
				at := j.off(call)
				switch argList[i].(type) {
				case *ast.TemplateLiteral, *ast.BinaryExpression:
				default:
					if a.at > 0 {
						at = a.at - 1
					}
				}
				j.c.report(at, s.rule, sdk.SeverityError, "SQL built by concatenation or a template is run: use query parameters")
				break
			}
			if a.level < s.level || s.sql && a.sqlDone && !a.event {
				continue // SQL built from a request: reported where built
			}
			at := call
			if s.atArg {
				at = argList[i]
			}
			j.report(at, s.rule, strings.Replace(s.what, "%s", levelWord(a), 1))
			break
		}
	}
	name := callee.path
	switch {
	case !isNew && (name == "eval" || strings.HasSuffix(name, "window.eval") || strings.HasSuffix(name, "globalThis.eval")):
		if len(args) > 0 && args[0].level > jsConst {
			j.report(call, "code-injection", "eval runs code built from "+levelWord(args[0]))
		}
	case name == "Function":
		for _, a := range args {
			if a.level >= jsSource {
				j.report(call, "code-injection", "new Function compiles code built from "+levelWord(a))
				break
			}
		}
	case !isNew && jsTimers[strings.TrimPrefix(strings.TrimPrefix(name, "window."), "global.")] && len(args) > 0:
		if a := args[0]; a.path != "<function>" && (a.level >= jsSource || a.level > jsConst && (a.built || a.lits != "")) {
			j.report(call, "code-injection", name+" with a string runs it as code")
		}
	}
	if isNew {
		// vm2's sandbox given a parameter: at the function (Semgrep's
		// vm2-context-injection)
		if (name == "vm2.VM" || name == "vm2.NodeVM") && callee.module && len(args) > 0 && args[0].level >= jsParam && j.fn != nil {
			if _, ok := jsProp(args[0].obj, "sandbox"); ok {
				j.report(j.fn, "code-injection", "a vm2 sandbox is given a parameter's value")
			}
		}
		return
	}
	j.shellSinks(call, argList, callee, method, args)
	j.codeSinks(call, argList, callee, method, args)
	if method != "" && strings.Contains(strings.ToLower(jsName(call.(*ast.CallExpression).Callee)+method), "password") {
		for _, a := range args {
			if a.weak {
				j.report(call, "weak-hash", method+" is given an MD5 or SHA-1 hash (use bcrypt, scrypt or Argon2)")
				break
			}
		}
	}
}

var jsTimers = wordSet(`setTimeout setInterval setImmediate`)

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsShells are the programs that run their -c argument as a command.
var jsShells = regexp.MustCompile(`^(?:/(?:usr/)?bin/)?(?:sh|bash|ksh|csh|tcsh|zsh|dash)$|^cmd(?:\.exe)?$|^powershell(?:\.exe)?$`)

// shellSinks: spawn with shell: true, spawn of a shell with -c and a
// value, spawn of git clone with a value, Deno.run.
func (j *jsScan) shellSinks(call ast.Node, argList []ast.Expression, callee jsVal, method string, args []jsVal) {
	rule := "shell-injection"
	if (method == "spawn" || method == "spawnSync") && j.fromModule(callee, []string{"child_process"}) || method == "spawn" && !strings.HasPrefix(callee.path, "<") && len(args) > 1 {
		for i, a := range args {
			if i == 0 {
				continue
			}
			if sh, ok := jsProp(a.obj, "shell"); ok && !jsFalse(sh) {
				j.report(call, rule, method+" with shell: true runs its command in a shell")
				return
			}
		}
	}
	if (method == "spawn" || method == "spawnSync" || method == "execFile" || method == "execFileSync") && len(args) > 1 && args[0].strLit && args[1].arr != nil {
		prog := strings.TrimSpace(args[0].lits)
		els := args[1].arr.Value
		switch {
		case jsShells.MatchString(prog) && len(els) > 0:
			k := 0
			if s, ok := els[0].(*ast.StringLiteral); ok && strings.HasPrefix(string(s.Value), "-") {
				k = 1
			}
			if k < len(els) && els[k] != nil {
				if v := j.quiet(els[k], &jsEnv{vars: map[string]jsVal{}}); v.level >= jsParam || j.levelIn(els[k]) >= jsParam {
					j.report(els[k], rule, prog+" -c runs a command built from "+levelWord(v))
				} else if jsBuilt(els[k]) {
					// as Go's: a shell's command built at run time is
					// injectable whatever the value's origin
					j.report(els[k], rule, prog+" -c runs a command built at run time: pass the program and its arguments as an array, without a shell")
				}
			}
		case prog == "git" && len(els) > 1:
			if s, ok := els[0].(*ast.StringLiteral); ok && string(s.Value) == "clone" {
				if last := els[len(els)-1]; last != nil && j.levelIn(last) > jsConst {
					j.report(call, rule, "git clone of a value that may start with - (an option: --upload-pack runs a command)")
				}
			}
		}
	}
	if callee.path == "Deno.run" && len(args) > 0 {
		if cmd, ok := jsProp(args[0].obj, "cmd"); ok {
			if arr, ok := cmd.(*ast.ArrayLiteral); ok && len(arr.Value) > 0 {
				k := 0
				if s, ok := arr.Value[0].(*ast.StringLiteral); ok && jsShells.MatchString(string(s.Value)) && len(arr.Value) > 2 {
					k = 2
				}
				if arr.Value[k] != nil && j.levelIn(arr.Value[k]) >= jsParam {
					j.report(arr.Value[k], rule, "Deno.run runs a command built from a parameter")
				}
			}
		}
	}
}

// jsBuilt reports whether e builds a string from values: a template with
// substitutions, or a concatenation.
func jsBuilt(e ast.Expression) bool {
	switch x := e.(type) {
	case *ast.TemplateLiteral:
		return len(x.Expressions) > 0
	case *ast.BinaryExpression:
		return x.Operator.String() == "+"
	}
	return false
}

// levelIn is the level of an expression already evaluated (no reports).
func (j *jsScan) levelIn(e ast.Expression) jsLevel {
	if j.env == nil {
		return jsNonConst
	}
	return j.quiet(e, j.env).level
}

// codeSinks: sandbox's and vm2's run, thenify's multiArgs.
func (j *jsScan) codeSinks(call ast.Node, argList []ast.Expression, callee jsVal, method string, args []jsVal) {
	rule := "code-injection"
	recv := strings.TrimSuffix(callee.path, "."+method)
	if method == "run" && callee.module && len(args) > 0 {
		switch {
		case strings.HasPrefix(recv, "new sandbox"), strings.HasPrefix(recv, "new vm2.VM"), strings.HasPrefix(recv, "new vm2.NodeVM"):
			if a := args[0]; a.level >= jsSource || a.level > jsConst && !strings.Contains(a.path, "VMScript") {
				// at the call, or where the sandbox held in a variable
				// was made
				at := j.off(call)
				if d, ok := call.(*ast.CallExpression).Callee.(*ast.DotExpression); ok && j.env != nil {
					if _, isNew := d.Left.(*ast.NewExpression); !isNew {
						if rv := j.quiet(d.Left, j.env); rv.at > 0 && a.level < jsSource && strings.HasPrefix(recv, "new vm2.") {
							at = rv.at - 1
						}
					}
				}
				j.c.report(at, rule, sdk.SeverityError, "a sandbox runs code built from "+levelWord(a))
			}
		}
	}
	if callee.module && callee.path == "thenify" && len(args) > 1 {
		if v, ok := jsProp(args[1].obj, "multiArgs"); ok && !jsFalse(v) {
			at := ast.Node(call)
			if _, inline := argList[1].(*ast.ObjectLiteral); !inline {
				at = args[1].obj
			}
			j.report(at, rule, "thenify with multiArgs can run code")
		}
	}
}
