package repo

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"path"
	"strconv"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// Go files are parsed once (go/parser) and their sinks checked on the
// syntax tree, in the manner of gosec's G201/G202 (SQL built by formatting
// or concatenation), G204 (commands) and G402 (TLS checks off). Values are
// followed within a function: each local variable carries what was
// assigned to it (a union over its assignments, in the order of the
// source), so a query built on one line and run on another is found. A
// value is a constant when it is a literal, a constant, a variable only
// ever assigned constants, a number (strconv.Itoa, a parameter of a
// numeric type, a %d verb) or a call of a function with constant
// arguments; it is tainted by a parameter, and untrusted when it comes
// from a request (r.FormValue, r.URL.Query(), r.Header.Get, r.Form, gin's
// c.Query …), the environment or os.Args.

// goVal is what the analysis knows of a Go expression's value.
type goVal struct {
	nonConst bool   // not known before the program runs
	src      string // the untrusted source it comes from, if any
	built    bool   // a string built at run time from a non-constant part
	lits     string // the text of the literals it was built from
	line     int    // for a variable: the line where it was first built
	param    bool   // from a parameter of the function
	// for a variable: the line where it was first built as SQL with an
	// untrusted value (a source's or a parameter's), and the assignment's
	// position
	tline int
	tat   token.Pos
}

func (v goVal) merge(w goVal) goVal {
	v.nonConst = v.nonConst || w.nonConst
	if v.src == "" {
		v.src = w.src
	}
	v.built = v.built || w.built
	v.param = v.param || w.param
	if len(v.lits) < 2000 {
		v.lits += " " + w.lits
	}
	if v.line == 0 {
		v.line = w.line
	}
	if v.tline == 0 {
		v.tline, v.tat = w.tline, w.tat
	}
	return v
}

// goScan is a Go file under analysis.
type goScan struct {
	c       *codeScan
	fset    *token.FileSet
	pkgs    map[string]bool  // imported package names
	consts  map[string]goVal // package constants and variables assigned constants
	vars    map[string]goVal // the current function's parameters and variables
	numeric map[string]bool  // the current function's parameters of a numeric type
}

// goAST checks a Go file's SQL, command and TLS sinks on its syntax tree;
// false when the file does not parse.
func (c *codeScan) goAST() bool {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, c.s.path, c.s.text, parser.SkipObjectResolution)
	if file == nil || err != nil && len(file.Decls) == 0 {
		return false
	}
	// a file with errors (two files pasted together) is checked on what
	// parsed, and reported as not parsed so that the regular
	// expressions check the rest (from its first error on)
	var errs scanner.ErrorList
	if errors.As(err, &errs) && len(errs) > 0 {
		c.parsedEnd = errs[0].Pos.Offset
	}
	g := &goScan{c: c, fset: fset, pkgs: map[string]bool{}, consts: map[string]goVal{}}
	for _, im := range file.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		g.pkgs[importName(p, im.Name)] = true
	}
	// Package constants and variables first: a function may use one
	// declared after it.
	g.vars = map[string]goVal{}
	for _, d := range file.Decls {
		if gd, ok := d.(*ast.GenDecl); ok {
			g.genDecl(gd, g.consts, true)
		}
	}
	for _, d := range file.Decls {
		g.vars, g.numeric = map[string]goVal{}, map[string]bool{}
		if fd, ok := d.(*ast.FuncDecl); ok {
			g.params(fd.Recv)
			if fd.Recv != nil {
				for _, f := range fd.Recv.List {
					for _, name := range f.Names {
						g.vars[name.Name] = goVal{nonConst: true} // the object's own state, not its caller's
					}
				}
			}
			g.params(fd.Type.Params)
			if fd.Body != nil {
				ast.Inspect(fd.Body, g.visit)
			}
		} else {
			ast.Inspect(d, g.visit)
		}
	}
	return err == nil
}

// importName is the name an import binds: its alias, or the last element
// of its path less a major version (github.com/jackc/pgx/v5, yaml.v3).
func importName(p string, alias *ast.Ident) string {
	if alias != nil {
		return alias.Name
	}
	name := path.Base(p)
	if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" && path.Dir(p) != "." {
		name = path.Base(path.Dir(p))
	}
	name, _, _ = strings.Cut(name, ".")
	return strings.TrimPrefix(name, "go-")
}

// genDecl records constants (and, at package level, variables given
// constants) in into.
func (g *goScan) genDecl(gd *ast.GenDecl, into map[string]goVal, pkg bool) {
	if gd.Tok != token.CONST && gd.Tok != token.VAR {
		return
	}
	for _, spec := range gd.Specs {
		vs := spec.(*ast.ValueSpec)
		for i, name := range vs.Names {
			var v goVal
			if i < len(vs.Values) {
				v = g.eval(vs.Values[i])
			} else if gd.Tok == token.VAR && len(vs.Values) > 0 {
				v = g.eval(vs.Values[0]) // a, b := f()
			}
			if gd.Tok == token.VAR && pkg && (len(vs.Values) == 0 || v.nonConst) {
				continue // a package variable set elsewhere: unknown
			}
			g.set(into, name.Name, v, name.Pos())
		}
	}
}

func (g *goScan) set(into map[string]goVal, name string, v goVal, pos token.Pos) {
	if name == "_" {
		return
	}
	built := v.built
	if built && v.line == 0 {
		v.line = g.fset.Position(pos).Line
	}
	if old, ok := into[name]; ok {
		v = old.merge(v)
	}
	// SQL with an untrusted value in it, first made here (q += " AND a = "
	// + a, on a q holding SELECT …)
	if built && (v.src != "" || v.param) && v.tline == 0 && isSQL(v.lits) {
		v.tline, v.tat = g.fset.Position(pos).Line, pos
	}
	into[name] = v
}

// numericTypes are the types whose values cannot carry SQL or a command.
var numericTypes = wordSet(`int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 float64 bool byte rune time.Duration`)

func (g *goScan) params(fl *ast.FieldList) {
	if fl == nil {
		return
	}
	for _, f := range fl.List {
		numeric := numericTypes[g.text(f.Type)]
		for _, name := range f.Names {
			if numeric {
				g.numeric[name.Name] = true
				continue
			}
			g.vars[name.Name] = goVal{nonConst: true, param: true}
		}
	}
}

// text is a node's source text.
func (g *goScan) text(n ast.Node) string {
	start, end := g.fset.Position(n.Pos()).Offset, g.fset.Position(n.End()).Offset
	if start < 0 || end > len(g.c.s.text) || start > end {
		return ""
	}
	return g.c.s.text[start:end]
}

func (g *goScan) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.FuncLit:
		g.params(n.Type.Params)
	case *ast.GenDecl:
		g.genDecl(n, g.vars, false)
	case *ast.AssignStmt:
		g.assign(n)
	case *ast.RangeStmt:
		v := g.eval(n.X)
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if id, ok := e.(*ast.Ident); ok {
				g.set(g.vars, id.Name, goVal{nonConst: v.nonConst, src: v.src}, id.Pos())
			}
		}
	case *ast.CompositeLit:
		execCmd := n.Type != nil && g.pkgs["exec"] && g.text(n.Type) == "exec.Cmd"
		for _, el := range n.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "InsecureSkipVerify" && isTrue(kv.Value) {
					g.report(kv.Pos(), "tls-verify-disabled", sdk.SeverityError, "InsecureSkipVerify: true turns off certificate checks")
				}
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Path" && execCmd {
					if v := g.eval(kv.Value); v.outside() {
						g.report(n.Pos(), "shell-injection", sdk.SeverityWarning, "exec.Cmd runs a program named at run time"+g.from(v))
					}
				}
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Args" && execCmd {
					if v, ok := g.argvBuilt(kv.Value); ok {
						g.report(n.Pos(), "shell-injection", sdk.SeverityWarning, "exec.Cmd's Args are built at run time"+g.from(v))
					}
				}
			}
		}
	case *ast.CallExpr:
		g.write(n)
		g.call(n)
	}
	return true
}

// write follows text written to a local strings.Builder or bytes.Buffer
// (sb.WriteString(x), fmt.Fprintf(&sb, …)) as sb += x: sb.String() is
// then SQL built where the untrusted value was written.
func (g *goScan) write(call *ast.CallExpr) {
	var dst ast.Expr
	var v goVal
	switch q := g.qualified(call); {
	case q == "fmt.Fprintf" && len(call.Args) > 1:
		dst, v = call.Args[0], g.format(call.Args[1], call.Args[2:])
	case q == "":
		recv, name := funcName(call)
		if recv == nil || name != "WriteString" || len(call.Args) != 1 {
			return
		}
		dst, v = recv, g.eval(call.Args[0])
	default:
		return
	}
	if u, ok := dst.(*ast.UnaryExpr); ok && u.Op == token.AND {
		dst = u.X
	}
	id, ok := dst.(*ast.Ident)
	if !ok {
		return
	}
	old, local := g.vars[id.Name]
	if !local {
		return
	}
	v.built = v.built || v.nonConst || old.built
	g.set(g.vars, id.Name, v, call.Pos())
}

func isTrue(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "true"
}

func (g *goScan) assign(n *ast.AssignStmt) {
	for i, lhs := range n.Lhs {
		var rhs ast.Expr
		switch {
		case len(n.Rhs) == len(n.Lhs):
			rhs = n.Rhs[i]
		case len(n.Rhs) == 1:
			rhs = n.Rhs[0]
		default:
			continue
		}
		if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "InsecureSkipVerify" && isTrue(rhs) {
			g.report(sel.Sel.Pos(), "tls-verify-disabled", sdk.SeverityError, "InsecureSkipVerify = true turns off certificate checks")
			continue
		}
		id, ok := lhs.(*ast.Ident)
		if !ok {
			continue
		}
		v := g.eval(rhs)
		if n.Tok == token.ADD_ASSIGN {
			old := g.ident(id.Name)
			v.built = v.built || v.nonConst || old.built
		}
		g.set(g.vars, id.Name, v, id.Pos())
	}
}

// ident is what a name holds.
func (g *goScan) ident(name string) goVal {
	switch name {
	case "true", "false", "nil", "iota", "_":
		return goVal{}
	}
	if g.numeric[name] {
		return goVal{}
	}
	if v, ok := g.vars[name]; ok {
		return v
	}
	if v, ok := g.consts[name]; ok {
		return v
	}
	return goVal{nonConst: true}
}

// safeFuncs return a number, or text that cannot carry SQL or a command.
var safeFuncs = wordSet(`strconv.Itoa strconv.FormatInt strconv.FormatUint strconv.FormatFloat strconv.FormatBool
	strconv.AppendInt strconv.Atoi strconv.ParseInt strconv.ParseUint strconv.ParseFloat strconv.ParseBool
	len cap pq.QuoteIdentifier pq.QuoteLiteral shellescape.Quote shellquote.Join`)

// pathFuncPkgs are packages whose functions make a path or a string of
// their arguments.
var pathFuncPkgs = wordSet(`exec filepath path strings fmt`)

// isConversion reports a call that is a conversion to a basic type.
func isConversion(call *ast.CallExpr) bool {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name == "string"
	case *ast.ArrayType:
		return true
	}
	return false
}

// formatFuncs format their arguments into a string.
var formatFuncs = wordSet(`fmt.Sprintf fmt.Sprint fmt.Sprintln fmt.Errorf fmt.Appendf`)

// numericVerbs print a number.
const numericVerbs = "dboxXeEfFgGctUp"

func (g *goScan) eval(e ast.Expr) goVal {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, _ := strconv.Unquote(e.Value)
			return goVal{lits: s}
		}
		return goVal{}
	case *ast.Ident:
		return g.ident(e.Name)
	case *ast.ParenExpr:
		return g.eval(e.X)
	case *ast.StarExpr:
		return g.eval(e.X)
	case *ast.UnaryExpr:
		return g.eval(e.X)
	case *ast.BinaryExpr:
		l, r := g.eval(e.X), g.eval(e.Y)
		switch e.Op {
		case token.ADD:
			v := l.merge(r)
			text := strings.TrimSpace(l.lits+r.lits) != "" || l.built || r.built
			v.built = v.built || text && (l.nonConst || r.nonConst)
			return v
		case token.EQL, token.NEQ, token.LSS, token.GTR, token.LEQ, token.GEQ, token.LAND, token.LOR:
			return goVal{}
		}
		v := l.merge(r)
		v.built, v.lits = false, ""
		return v
	case *ast.SelectorExpr:
		if src := g.source(e); src != "" {
			return goVal{nonConst: true, src: src}
		}
		if id, ok := e.X.(*ast.Ident); ok && g.pkgs[id.Name] {
			return goVal{} // a package's constant or variable
		}
		v := g.eval(e.X)
		return goVal{nonConst: true, src: v.src, param: v.param}
	case *ast.IndexExpr:
		v := g.eval(e.X)
		return goVal{nonConst: true, src: v.src, param: v.param}
	case *ast.SliceExpr:
		return g.eval(e.X)
	case *ast.TypeAssertExpr:
		return g.eval(e.X)
	case *ast.CompositeLit:
		var v goVal
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			v = v.merge(g.eval(el))
		}
		return v
	case *ast.FuncLit:
		return goVal{}
	case *ast.CallExpr:
		return g.evalCall(e)
	}
	return goVal{nonConst: true}
}

// funcName is a call's function as written: pkg.Func, recv.Method or Func.
func funcName(call *ast.CallExpr) (recv ast.Expr, name string) {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return nil, f.Name
	case *ast.SelectorExpr:
		return f.X, f.Sel.Name
	}
	return nil, ""
}

// qualified is pkg.Func for a call of an imported package's function, ""
// otherwise.
func (g *goScan) qualified(call *ast.CallExpr) string {
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		if id, ok := sel.X.(*ast.Ident); ok && g.pkgs[id.Name] {
			return id.Name + "." + sel.Sel.Name
		}
	}
	return ""
}

func (g *goScan) evalCall(call *ast.CallExpr) goVal {
	if src := g.source(call); src != "" {
		return goVal{nonConst: true, src: src}
	}
	q := g.qualified(call)
	if safeFuncs[q] || q == "" && safeFuncs[g.text(call.Fun)] {
		return goVal{}
	}
	if formatFuncs[q] && len(call.Args) > 0 {
		return g.format(call.Args[0], call.Args[1:])
	}
	var v goVal
	for _, a := range call.Args {
		v = v.merge(g.eval(a))
	}
	// a function's or a conversion's value ([]byte(s)) is its arguments'; a
	// method's depends on its receiver too
	if recv, _ := funcName(call); q == "" && recv != nil {
		v = v.merge(g.eval(recv))
		v.nonConst = true
	}
	// a parameter's value passes through a path's or a string's
	// functions, not through another function (promtool(t))
	pkg, _, _ := strings.Cut(q, ".")
	if !pathFuncPkgs[pkg] && !(q == "" && isConversion(call)) {
		v.param = false
	}
	return v
}

// format is fmt.Sprintf's value: the values printed with a number's verb
// (%d) are constants as far as SQL and shells are concerned.
func (g *goScan) format(f ast.Expr, args []ast.Expr) goVal {
	v := g.eval(f)
	verbs := []byte(nil)
	lit, isLit := f.(*ast.BasicLit)
	if isLit {
		s, _ := strconv.Unquote(lit.Value)
		for i := 0; i < len(s); i++ {
			if s[i] != '%' {
				continue
			}
			j := i + 1
			for j < len(s) && strings.IndexByte("+-# 0123456789.*[]", s[j]) >= 0 {
				j++
			}
			if j < len(s) {
				if s[j] != '%' {
					verbs = append(verbs, s[j])
				}
				i = j
			}
		}
	}
	built := v.nonConst
	for i, a := range args {
		av := g.eval(a)
		if isLit && i < len(verbs) && strings.IndexByte(numericVerbs, verbs[i]) >= 0 {
			continue
		}
		v = v.merge(av)
		built = built || av.nonConst
	}
	v.built = v.built || built
	return v
}

// requestMethods read a request's parameters, headers, cookies or path
// (net/http, gin, echo, chi, fiber, mux).
var requestMethods = wordSet(`FormValue PostFormValue PathValue Param Params QueryParam QueryParams QueryString
	DefaultQuery DefaultPostForm GetQuery GetPostForm PostForm GetHeader Cookie Cookies FormParams Query URLParam Vars`)

// requestFields are a request's fields that hold what the client sent.
var requestFields = wordSet(`Form PostForm MultipartForm RawQuery RawPath Fragment Path Header`)

// source names the untrusted source an expression reads, or "".
func (g *goScan) source(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		if id, ok := sel.X.(*ast.Ident); ok && g.pkgs[id.Name] {
			switch id.Name + "." + sel.Sel.Name {
			case "os.Getenv", "os.LookupEnv", "syscall.Getenv":
				return "os.Getenv"
			case "mux.Vars", "chi.URLParam":
				return id.Name + "." + sel.Sel.Name
			}
			return ""
		}
		name := sel.Sel.Name
		if name == "Query" {
			// r.URL.Query(), c.Query("id"); not db.Query(…, args)
			if len(e.Args) == 1 {
				if _, ok := e.Args[0].(*ast.BasicLit); ok {
					return g.text(sel.X) + ".Query"
				}
			}
			if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "URL" && len(e.Args) == 0 {
				return g.text(e)
			}
			return ""
		}
		if requestMethods[name] {
			return g.text(sel.X) + "." + name
		}
		if src := g.source(sel.X); src != "" {
			return src // r.URL.Query().Get("id"), r.Header.Get("X")
		}
	case *ast.SelectorExpr:
		if id, ok := e.X.(*ast.Ident); ok && g.pkgs[id.Name] {
			if id.Name == "os" && e.Sel.Name == "Args" {
				return "os.Args"
			}
			return ""
		}
		if !requestFields[e.Sel.Name] {
			return ""
		}
		switch e.Sel.Name {
		case "Path", "RawPath", "RawQuery", "Fragment":
			if x, ok := e.X.(*ast.SelectorExpr); !ok || x.Sel.Name != "URL" {
				return "" // r.URL.Path, not cfg.Path
			}
		case "Header":
			if g.isResponse(e.X) {
				return ""
			}
		}
		return g.text(e)
	case *ast.IndexExpr:
		return g.source(e.X)
	}
	return ""
}

// isResponse reports a name that looks like an HTTP response (resp.Header).
func (g *goScan) isResponse(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && (strings.HasPrefix(id.Name, "res") || id.Name == "w")
}

// sqlMethods run or prepare a query (database/sql, sqlx, pgx, gorm's Raw
// and Exec); condMethods take a condition (gorm).
var (
	sqlMethods = wordSet(`Query QueryRow QueryContext QueryRowContext Exec ExecContext Prepare PrepareContext Raw
		Select Get NamedExec NamedQuery MustExec MustExecContext Queryx QueryRowx QueryxContext QueryRowxContext
		SelectContext GetContext NamedExecContext NamedQueryContext Preparex PreparexContext
		QueryOne QueryOneContext ExecOne ExecOneContext QueryEx ExecEx QueryRowEx`)
	condMethods = wordSet(`Where Having Order Group Joins Not Or WhereOr OrderExpr ColumnExpr TableExpr`)
)

// call checks a call that is a sink.
func (g *goScan) call(call *ast.CallExpr) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	name := sel.Sel.Name
	pkg := ""
	if id, ok := sel.X.(*ast.Ident); ok && g.pkgs[id.Name] {
		pkg = id.Name
	}
	switch {
	case pkg == "exec" && (name == "Command" || name == "CommandContext"):
		g.command(call, "exec."+name)
	case pkg == "syscall" && (name == "Exec" || name == "ForkExec" || name == "StartProcess") || pkg == "os" && name == "StartProcess":
		if len(call.Args) > 0 {
			if v := g.eval(call.Args[0]); v.outside() {
				g.report(call.Pos(), "shell-injection", sdk.SeverityWarning, pkg+"."+name+" runs a program named at run time"+g.from(v))
			} else if len(call.Args) > 1 {
				if v, ok := g.argvBuilt(call.Args[1]); ok {
					g.report(call.Pos(), "shell-injection", sdk.SeverityWarning, pkg+"."+name+"'s arguments are built at run time"+g.from(v))
				}
			}
		}
	case pkg == "" && g.pkgs["otto"] && (name == "Run" || name == "Eval") && len(call.Args) == 1:
		if v := g.eval(call.Args[0]); v.nonConst {
			g.report(call.Pos(), "code-injection", sdk.SeverityError, "otto's "+name+" runs JavaScript built at run time"+g.from(v))
		}
	case pkg != "":
	case sqlMethods[name]:
		for _, a := range call.Args {
			if v := g.eval(a); v.built && isSQL(v.lits) {
				if at, ok := g.builtBefore(a, v, sel.Sel.Pos()); ok {
					// a variable given SQL built on an earlier line: the
					// injection is made there, and reported there
					g.report(at, "sql-injection", sdk.SeverityError,
						"SQL built here by string formatting or concatenation"+g.from(v)+" is run by "+
							g.sinkName(call)+" on line "+itoa(g.fset.Position(sel.Sel.Pos()).Line)+": use parameters")
					return
				}
				g.report(sel.Sel.Pos(), "sql-injection", sdk.SeverityError,
					"SQL built by string formatting or concatenation"+g.how(a, v)+" is run by "+name+": use parameters")
				return
			}
		}
	case condMethods[name] && len(call.Args) > 0:
		// reported at the call (the start of its chain: db.Model(m).
		// Where(q) …), as semgrep's rules for ORMs' conditions match it,
		// wherever the condition was built
		if v := g.eval(call.Args[0]); v.built && (condRe.MatchString(v.lits) || isSQL(v.lits)) || v.src != "" {
			g.report(call.Pos(), "sql-injection", sdk.SeverityError,
				"SQL condition built by string formatting or concatenation"+g.how(call.Args[0], v)+" is passed to "+name+": use parameters")
		}
	}
}

// builtBefore returns where the variable e was built from an untrusted
// value (a request's, the environment's, a parameter's), when that is a
// line before the sink at pos. SQL built from values of unknown origin
// stays reported at the sink, as semgrep's audit rules (gosql-sqli,
// pgx-sqli) report it; a tainted string where it is built, as
// tainted-sql-string and string-formatted-query do.
func (g *goScan) builtBefore(e ast.Expr, v goVal, pos token.Pos) (token.Pos, bool) {
	if _, ok := e.(*ast.Ident); !ok || !v.tat.IsValid() || v.tline >= g.fset.Position(pos).Line {
		return token.NoPos, false
	}
	return v.tat, true
}

// sinkName is a call's function as written (db.Exec), shortened.
func (g *goScan) sinkName(call *ast.CallExpr) string {
	name := g.text(call.Fun)
	if len(name) > 40 || strings.ContainsAny(name, "\n(") {
		_, name = funcName(call)
	}
	return name
}

// how says where a variable was built.
func (g *goScan) how(e ast.Expr, v goVal) string {
	if id, ok := e.(*ast.Ident); ok && v.line > 0 {
		return " (" + id.Name + ", built on line " + itoa(v.line) + ")"
	}
	return ""
}

// command checks exec.Command and exec.CommandContext: a shell's -c with
// a command that is not a constant (as before), a program named by an
// untrusted source, an argument from a request (gosec's G204).
func (g *goScan) command(call *ast.CallExpr, name string) {
	args := call.Args
	if name == "exec.CommandContext" && len(args) > 0 {
		args = args[1:]
	}
	for k := 1; k+1 < len(args); k++ {
		if c := stringLit(args[k]); (c != "-c" && c != "/c" && c != "-Command") || !shells[stringLit(args[k-1])] {
			continue
		}
		if v := g.eval(args[k+1]); v.nonConst {
			how := ""
			if v.src != "" {
				how = " (from " + v.src + ")"
			}
			g.report(call.Pos(), "shell-injection", sdk.SeverityError, name+" runs a shell with a command built at run time"+how)
		}
		return
	}
	if len(args) == 0 {
		return
	}
	if v := g.eval(args[0]); v.outside() {
		// a program named at run time: by a request, the environment, a
		// parameter (not a package's variable: a tool's path found once)
		g.report(call.Pos(), "shell-injection", sdk.SeverityWarning, name+" runs a program named at run time"+g.from(v))
		return
	}
	for _, a := range args[1:] {
		// an argument from a request; a command line passing on its own
		// arguments or environment (exec.Command("ls", os.Args[1])) is not
		// reported
		if v := g.eval(a); v.src != "" && v.src != "os.Args" && v.src != "os.Getenv" {
			g.report(call.Pos(), "shell-injection", sdk.SeverityWarning, name+" is given an argument from "+v.src)
			return
		}
	}
}

// argvBuilt reports an argument vector that runs what it is given: its
// program (argv[0]) not a constant, or a shell's -c with a command that
// is not; a variable holding one, when any of its items is not a
// constant.
func (g *goScan) argvBuilt(e ast.Expr) (goVal, bool) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		v := g.eval(e)
		return v, v.outside()
	}
	for k, el := range lit.Elts {
		v := g.eval(el)
		if k == 0 && v.outside() {
			return v, true
		}
		if c := stringLit(el); (c == "-c" || c == "/c") && k+1 < len(lit.Elts) {
			if v := g.eval(lit.Elts[k+1]); v.nonConst {
				return v, true
			}
		}
	}
	return goVal{}, false
}

// outside reports a value from outside the program's own making: a
// request, the environment, os.Args, or the function's caller (a
// parameter), not a package's variable or a call of constants.
func (v goVal) outside() bool { return v.nonConst && (v.src != "" || v.param) }

// from says where a value came from, for a message.
func (g *goScan) from(v goVal) string {
	if v.src != "" {
		return " (" + v.src + ")"
	}
	return ""
}

func (g *goScan) report(pos token.Pos, rule, sev, msg string) {
	g.c.report(g.fset.Position(pos).Offset, rule, sev, msg)
}

// stringLit returns the value of a string literal, or "".
func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}
