package repo

import (
	"regexp"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// The sinks of a parsed Python file, per class, by the full name of the
// function (imports resolved) or by method name: tables easy to extend.

// pyArgSink is a function that runs its argument (at index arg, or the
// keyword) as a shell command, code, or SQL.
type pyArgSink struct {
	arg int
	kw  string
}

// pyShellSinks run a command line in a shell.
var pyShellSinks = map[string]pyArgSink{
	"os.system": {0, "command"}, "os.popen": {0, "cmd"}, "os.popen2": {0, "cmd"}, "os.popen3": {0, "cmd"}, "os.popen4": {0, "cmd"},
	"popen2.popen2": {0, "cmd"}, "popen2.popen3": {0, "cmd"}, "popen2.popen4": {0, "cmd"}, "popen2.Popen3": {0, "cmd"}, "popen2.Popen4": {0, "cmd"},
	"commands.getoutput": {0, "cmd"}, "commands.getstatusoutput": {0, "cmd"},
	"subprocess.getoutput": {0, "cmd"}, "subprocess.getstatusoutput": {0, "cmd"},
	"asyncio.create_subprocess_shell": {0, "cmd"}, "asyncio.subprocess.create_subprocess_shell": {0, "cmd"},
	"platform.popen": {0, "cmd"},
}

// pySubprocessNot are subprocess's names that run nothing; its others
// (call, run, check_call, check_output, Popen…) run a shell with
// shell=True, else a program and its arguments.
var pySubprocessNot = wordSet(`CalledProcessError SubprocessError TimeoutExpired CompletedProcess PIPE STDOUT DEVNULL list2cmdline`)

func (s pyArgSink) isSet() bool { return s.kw != "" }

// pyExecSinks run a program: arg is the program's index; shellArgs the
// index of the arguments' list (os.execv) or -1 when they follow the
// program (os.execl).
type pyExecSink struct{ prog, list int }

var pyExecSinks = map[string]pyExecSink{
	"os.execl": {0, -1}, "os.execle": {0, -1}, "os.execlp": {0, -1}, "os.execlpe": {0, -1},
	"os.execv": {0, 1}, "os.execve": {0, 1}, "os.execvp": {0, 1}, "os.execvpe": {0, 1},
	"os.spawnl": {1, -1}, "os.spawnle": {1, -1}, "os.spawnlp": {1, -1}, "os.spawnlpe": {1, -1},
	"os.spawnv": {1, 2}, "os.spawnve": {1, 2}, "os.spawnvp": {1, 2}, "os.spawnvpe": {1, 2},
	"os.posix_spawn": {0, 1}, "os.posix_spawnp": {0, 1},
	"asyncio.create_subprocess_exec": {0, -1}, "asyncio.subprocess.create_subprocess_exec": {0, -1},
}

// pyCodeSinks run their argument as Python code.
var pyCodeSinks = map[string]pyArgSink{
	"eval": {0, "source"}, "exec": {0, "source"}, "execfile": {0, ""},
	"_testcapi.run_in_subinterp": {0, ""}, "test.support.run_in_subinterp": {0, ""},
	"_xxsubinterpreters.run_string": {1, ""}, "_interpreters.run_string": {1, ""}, "interpreters.run_string": {1, ""},
	"code.InteractiveConsole().push": {0, ""}, "code.InteractiveInterpreter().runsource": {0, ""},
	"code.InteractiveInterpreter().runcode": {0, ""}, "code.InteractiveConsole().runsource": {0, ""},
	"code.InteractiveConsole().runcode": {0, ""},
}

// pySQLMethods run their first argument as SQL, whatever their receiver
// (a cursor, a connection, a session, a queryset's raw).
var pySQLMethods = wordSet(`execute executemany executescript mogrify fetch fetchrow fetchval prepare cursor
	copy_from_query copyfromquery raw RawSQL text`)

// pyQueryClauses are SQLAlchemy query methods that take raw SQL text.
var pyQueryClauses = wordSet(`filter where having group_by order_by distinct`)

// chainHas reports a receiver chain (session.query(M).join(x)) with a
// call or attribute of the name.
func chainHas(e *pyExpr, name string) bool {
	for e != nil {
		switch e.kind {
		case 'n':
			return e.name == name
		case 'a':
			if e.name == name {
				return true
			}
			e = e.x
		case 'c':
			e = e.x
		default:
			return false
		}
	}
	return false
}

// pyStrongSQL are sinks that take nothing but SQL: a string built at run
// time is reported even without SQL words in it.
var pyStrongSQL = wordSet(`executemany executescript mogrify fetch fetchrow fetchval raw RawSQL copy_from_query copyfromquery run`)

// pySQLReceivers name a database handle.
var pySQLReceivers = regexp.MustCompile(`(?i)(?:^|_|\b)(?:cur|cursor|conn|connection|con|db|database|session|engine|sql|pool|pg|mysql|sqlite|tx|transaction|c)\w*$`)

// pyDeser are loaders that build objects or run code from their data;
// the constant-argument loaders (yaml.load of a file name) are not.
var pyDeser = wordSet(`pickle.load pickle.loads pickle.Unpickler _pickle.load _pickle.loads _pickle.Unpickler
	cPickle.load cPickle.loads cPickle.Unpickler dill.load dill.loads dill.Unpickler cloudpickle.load cloudpickle.loads
	marshal.load marshal.loads shelve.loads jsonpickle.decode jsonpickle.unpickler.decode shelve.open shelve.DbfilenameShelf
	joblib.load pandas.read_pickle yaml.unsafe_load yaml.unsafe_load_all yaml.full_load yaml.full_load_all
	multiprocessing.connection.Connection().recv multiprocessing.Pipe().recv`)

// pySafeLoaders make yaml.load safe.
var pySafeLoaders = wordSet(`SafeLoader CSafeLoader BaseLoader CBaseLoader`)

// weakHashNames make an MD5 or SHA-1 hash.
var weakHashNames = wordSet(`hashlib.md5 hashlib.sha1 Crypto.Hash.MD5.new Crypto.Hash.SHA.new Crypto.Hash.SHA1.new
	Cryptodome.Hash.MD5.new Cryptodome.Hash.SHA1.new cryptography.hazmat.primitives.hashes.MD5
	cryptography.hazmat.primitives.hashes.SHA1 md5.new sha.new`)

var pyPasswordFunc = regexp.MustCompile(`(?i)pass(?:word|wd)`)

// pythonProgram is python as a list's first element.
var pythonProgram = regexp.MustCompile(`(?:^|/)python[\d.]*$`)

func (f *pyFile) report(e *pyExpr, rule, msg string) {
	sev := sdk.SeverityError
	if rule == "weak-hash" {
		sev = sdk.SeverityWarning
	}
	f.c.report(e.off, rule, sev, msg)
}

// reportBuilt reports a sink given v where v was built, when it is a
// variable (or an attribute) built by a statement on an earlier line:
// the message names the sink and its line; else at the sink, with msg.
// Only BashOperator's command is reported so: the other sinks' findings
// stay on their call, where semgrep's rules for them (psycopg-sqli,
// formatted-sql-query, os-system-injection, eval-injection and the rest)
// report too; formatted-string-bashoperator reports the command's
// formatting.
func (f *pyFile) reportBuilt(e *pyExpr, v pyVal, rule, sink, what, msg string) {
	if at, ok := f.builtAt(e, v); ok {
		line, _ := f.c.s.lineOf(e.off)
		f.c.report(at, rule, sdk.SeverityError, what+" built here at run time"+from(v)+" is run by "+sink+" on line "+itoa(line))
		return
	}
	f.report(e, rule, msg)
}

// builtAt returns where the value v given to the sink e was built, when
// it is a variable's (or an attribute's) built on a line before the sink.
func (f *pyFile) builtAt(e *pyExpr, v pyVal) (int, bool) {
	if v.expr == nil || v.expr.kind != 'n' && v.expr.kind != 'a' || !v.built || v.at == 0 {
		return 0, false
	}
	built, _ := f.c.s.lineOf(v.at - 1)
	if sink, _ := f.c.s.lineOf(e.off); built >= sink {
		return 0, false
	}
	return v.at - 1, true
}

// from says where a value came from, for a message.
func from(v pyVal) string {
	if v.taint && v.src != "" {
		return " (from " + v.src + ")"
	}
	return ""
}

// sinks checks a call against the tables.
func (f *pyFile) sinks(e *pyExpr, full, meth string, args []pyVal, kws map[string]pyVal) {
	argAt := func(k int, kw string) (pyVal, bool) {
		if v, ok := kws[kw]; ok && kw != "" {
			return v, true
		}
		if k >= 0 && k < len(args) {
			return args[k], true
		}
		return pyVal{}, false
	}
	// a shell command
	if s, ok := pyShellSinks[full]; ok {
		if v, ok := argAt(s.arg, s.kw); ok && !v.konst {
			f.report(e, "shell-injection", full+" runs a shell command built at run time"+from(v))
		}
	}
	if sf := strings.TrimPrefix(full, "subprocess."); len(sf) < len(full) && !strings.Contains(sf, ".") && !pySubprocessNot[sf] && !pyShellSinks[full].isSet() {
		v, ok := argAt(0, "args")
		shell, hasShell := kws["shell"]
		shellOn := hasShell && !(shell.expr.kind == 'k' && shell.expr.name != "True" || shell.expr.kind == '1' && shell.expr.name == "0")
		if ok && f.runsProgram(v, shellOn) {
			f.report(e, "shell-injection", full+" runs a command built at run time"+from(v))
		}
	}
	if s, ok := pyExecSinks[full]; ok {
		f.execSink(e, full, s, args)
	}
	if meth == "subprocess_shell" && len(args) > 1 && !args[1].konst {
		f.report(e, "shell-injection", "subprocess_shell runs a shell command built at run time"+from(args[1]))
	}
	if meth == "subprocess_exec" && len(args) > 1 {
		f.execSink(e, meth, pyExecSink{1, -1}, args)
	}
	if meth == "exec_command" && f.importsAny("paramiko") && len(args) > 0 && !args[0].konst {
		f.report(e, "shell-injection", "exec_command runs a command built at run time on the remote host"+from(args[0]))
	}
	if strings.HasPrefix(full, "sh.") && strings.Count(full, ".") == 1 {
		for _, a := range args {
			if a.built {
				f.report(e, "shell-injection", full+" runs a command with arguments built at run time")
				break
			}
		}
	}
	if strings.HasSuffix(full, "BashOperator") {
		if v, ok := kws["bash_command"]; ok && !v.konst && (v.built || v.clean || v.taint) {
			f.reportBuilt(e, v, "shell-injection", "a BashOperator", "A shell command", "BashOperator's bash_command is built at run time"+from(v))
		}
	}
	// code
	codeName := full
	if e.x.kind == 'n' && (e.x.name == "eval" || e.x.name == "exec") && !f.assigned(e.x.name) {
		codeName = e.x.name // imported under the name (from x import eval): code all the same
	}
	if s, ok := pyCodeSinks[codeName]; ok && (e.x.kind != 'n' || !f.assigned(e.x.name)) {
		if v, ok := argAt(s.arg, s.kw); ok && !v.konst {
			f.report(e, "code-injection", strings.TrimSuffix(codeName, "()")+" runs code built at run time"+from(v))
		}
	}
	if full == "logging.config.listen" {
		f.report(e, "code-injection", "logging.config.listen runs the code in the configurations it receives")
	}
	// exec or eval passed as a function: run_in_executor(None, exec, x)
	for k, a := range e.args {
		if a.kind == 'n' && (a.name == "exec" || a.name == "eval") && !f.shadowed(a.name) {
			for j := k + 1; j < len(args); j++ {
				if !args[j].konst {
					f.report(e, "code-injection", a.name+" is passed code built at run time"+from(args[j]))
					break
				}
			}
		}
	}
	// SQL
	if pySQLMethods[meth] && (e.x.kind == 'a' || meth == "RawSQL" || meth == "text") ||
		meth == "run" && e.x.kind == 'a' && f.importsAny("pg8000") {
		f.sqlSink(e, full, meth, args, kws)
	}
	if pyQueryClauses[meth] && e.x.kind == 'a' && chainHas(e.x.x, "query") && len(args) > 0 && args[0].built {
		f.report(e.x, "sql-injection", meth+" is given SQL built at run time (bind the values with bindparams)"+from(args[0]))
	}
	if meth == "extra" && e.x.kind == 'a' {
		for _, k := range []string{"where", "select", "tables", "order_by", "params"} {
			if v, ok := kws[k]; ok && v.expr != nil {
				for _, el := range listElems(v.expr) {
					if ev := f.ev(el); ev.built || ev.taint {
						f.report(e, "sql-injection", "QuerySet.extra with SQL built at run time"+from(ev))
						break
					}
				}
			}
		}
	}
	// deserialization
	if pyDeser[full] || full == "yaml.load" || full == "yaml.load_all" {
		f.deserSink(e, full, args, kws)
	}
	if meth == "recv" && f.importsAny("multiprocessing") {
		f.report(e, "unsafe-deserialization", "multiprocessing's Connection.recv unpickles what it receives")
	}
	if full == "torch.load" {
		if w, ok := kws["weights_only"]; !ok || w.expr.kind != 'k' || w.expr.name != "True" {
			f.report(e, "unsafe-deserialization", "torch.load unpickles the file it loads (pass weights_only=True)")
		}
	}
	if full == "numpy.load" {
		if w, ok := kws["allow_pickle"]; ok && w.expr.kind == 'k' && w.expr.name == "True" {
			f.report(e, "unsafe-deserialization", "numpy.load with allow_pickle=True unpickles the file it loads")
		}
	}
	if strings.HasPrefix(full, "ruamel.yaml.YAML") && strings.Count(full, ".") == 2 {
		if t, ok := kws["typ"]; ok && t.expr.kind == 's' && (t.expr.str.value == "unsafe" || t.expr.str.value == "base") {
			f.report(e, "unsafe-deserialization", "ruamel.yaml's unsafe loader builds arbitrary objects")
		}
	}
	// TLS
	if v, ok := kws["verify"]; ok && v.expr.kind == 'k' && v.expr.name == "False" {
		f.report(v.expr, "tls-verify-disabled", "verify=False turns off certificate checks")
	}
	if v, ok := kws["cert_reqs"]; ok {
		d := v.expr.dotted()
		if strings.HasSuffix(d, "CERT_NONE") || strings.HasSuffix(d, "CERT_OPTIONAL") ||
			v.expr.kind == 's' && (v.expr.str.value == "NONE" || v.expr.str.value == "OPTIONAL" || v.expr.str.value == "CERT_NONE") {
			f.report(v.expr, "tls-verify-disabled", "cert_reqs="+strings.TrimPrefix(d, "ssl.")+" turns off certificate checks")
		}
	}
	if full == "ssl._create_unverified_context" {
		f.report(e, "tls-verify-disabled", "an unverified SSL context accepts any certificate")
	}
	if meth == "HTTPSConnection" && (strings.HasPrefix(full, "httplib.") || strings.Contains(full, "http_client.")) {
		// Python 2's (httplib, six's http_client); Python 3's http.client
		// checks certificates since 3.4.3
		if _, ok := kws["context"]; !ok && len(args) < 7 {
			f.report(e, "tls-verify-disabled", full+" without a context does not check certificates on Python 2")
		}
	}
	// a weak hash given to a function that takes a password
	if pyPasswordFunc.MatchString(meth) {
		for _, a := range args {
			if a.weak {
				f.report(e, "weak-hash", meth+" is given an MD5 or SHA-1 hash (use bcrypt, scrypt or Argon2)")
				break
			}
		}
	}
}

// runsProgram reports a subprocess call's command that is built at run
// time: a string with a shell, a program not a constant, a shell's -c or
// python's code not a constant.
func (f *pyFile) runsProgram(v pyVal, shell bool) bool {
	ex := v.expr
	if ex != nil && ex.kind == 'n' {
		if lv := f.lookup(ex.name); lv.expr != nil && lv.expr.kind == 'l' {
			ex = lv.expr
		}
	}
	if ex == nil || ex.kind != 'l' || ex.name == "comp" {
		// a string with a shell; without one, a command from outside
		return shell && !v.konst || v.taint
	}
	elems := listElems(ex)
	if len(elems) == 0 {
		return false
	}
	if shell {
		// the list's items are the shell's arguments
		for _, el := range elems {
			if !el.star && !f.ev(el).konst {
				return true
			}
		}
		return false
	}
	first := f.ev(elems[0])
	if first.taint && !elems[0].star {
		return true // a program from outside
	}
	prog := ""
	if first.konst && elems[0].kind == 's' {
		prog = elems[0].str.value
	}
	rest := elems[1:]
	for k, el := range rest {
		// a shell's -c, python's -c or its script: code, not arguments
		if el.kind == 's' && (el.str.value == "-c" || el.str.value == "/c") && k+1 < len(rest) {
			return !f.ev(rest[k+1]).konst
		}
	}
	if pythonProgram.MatchString(prog) && len(rest) > 0 {
		return f.ev(rest[0]).taint
	}
	return false
}

// execSink checks os.exec*, os.spawn*, create_subprocess_exec: a program
// that is not a constant, a shell's -c with code that is not.
func (f *pyFile) execSink(e *pyExpr, name string, s pyExecSink, args []pyVal) {
	if s.prog >= len(args) {
		return
	}
	if p := args[s.prog]; !p.konst && !(p.expr != nil && p.expr.star) {
		f.report(e, "shell-injection", name+" runs a program named at run time"+from(p))
		return
	}
	var rest []*pyExpr
	if s.list >= 0 {
		if s.list < len(args) && args[s.list].expr != nil {
			rest = listElems(args[s.list].expr)
		}
	} else {
		for _, a := range args[s.prog+1:] {
			rest = append(rest, a.expr)
		}
	}
	if len(rest) > 0 && rest[0].kind == 'l' {
		rest = listElems(rest[0]) // create_subprocess_exec(p, [p, "-c", x])
	}
	for k, el := range rest {
		if el.kind == 's' && (el.str.value == "-c" || el.str.value == "/c") && k+1 < len(rest) {
			if v := f.ev(rest[k+1]); !v.konst {
				f.report(e, "shell-injection", name+" runs a shell with a command built at run time"+from(v))
			}
			return
		}
	}
}

// listElems returns a list's or tuple's elements, or the expression.
func listElems(e *pyExpr) []*pyExpr {
	if e.kind == 'l' && e.name != "comp" {
		return e.args
	}
	return []*pyExpr{e}
}

// sqlSink checks a query: built at run time (from values not constants)
// with SQL in it, or from outside.
func (f *pyFile) sqlSink(e *pyExpr, full, meth string, args []pyVal, kws map[string]pyVal) {
	var q pyVal
	switch {
	case kws["sql"].expr != nil:
		q = kws["sql"]
	case kws["query"].expr != nil:
		q = kws["query"]
	case kws["raw_query"].expr != nil:
		q = kws["raw_query"]
	case len(args) > 0:
		q = args[0]
	default:
		return
	}
	recv := ""
	if e.x.kind == 'a' {
		recv = e.x.x.dotted()
		if i := strings.LastIndexByte(recv, '.'); i >= 0 {
			recv = recv[i+1:]
		}
	}
	if meth == "text" && full != "sqlalchemy.text" && full != "sqlalchemy.sql.text" && !strings.HasSuffix(full, "sql.expression.text") {
		return
	}
	switch {
	case q.built && (q.sql || pyStrongSQL[meth] || pySQLReceivers.MatchString(recv) || meth == "text"):
	case q.taint && (q.sql || pyStrongSQL[meth] || pySQLReceivers.MatchString(recv) || meth == "text"):
	default:
		return
	}
	f.report(e.x, "sql-injection", meth+" runs SQL built at run time"+from(q))
}

// deserSink checks a loader; yaml.load is safe with a safe loader, or
// with a constant.
func (f *pyFile) deserSink(e *pyExpr, full string, args []pyVal, kws map[string]pyVal) {
	_, loader := kws["Loader"]
	if len(args) > 0 && args[0].fixed() &&
		!strings.HasPrefix(full, "yaml.unsafe") && !loader && len(args) < 2 {
		// a literal, or a call of literals: not data from outside
		// (pickle.loads(b"…"), yaml.load("a.yaml"), pickle.load(open("a.pkl")))
		return
	}
	if full == "yaml.load" || full == "yaml.load_all" {
		if l, ok := kws["Loader"]; ok {
			d := l.expr.dotted()
			if pySafeLoaders[d[strings.LastIndexByte(d, '.')+1:]] {
				return
			}
		} else if len(args) > 1 {
			d := args[1].expr.dotted()
			if pySafeLoaders[d[strings.LastIndexByte(d, '.')+1:]] {
				return
			}
		} else if len(args) > 0 && args[0].konst {
			return
		}
	}
	f.report(e, "unsafe-deserialization", strings.TrimSuffix(full, "()")+" builds arbitrary objects (or runs code) from the data it loads")
}

// importsAny reports a module imported under any name.
func (f *pyFile) importsAny(mod string) bool {
	for _, full := range f.imports {
		if full == mod || strings.HasPrefix(full, mod+".") {
			return true
		}
	}
	return false
}

// assigned reports a name given a value (or a def) in the scopes.
func (f *pyFile) assigned(name string) bool {
	for s := f.scope; s != nil; s = s.parent {
		if _, ok := s.vars[name]; ok {
			return true
		}
	}
	return false
}

// shadowed reports a builtin's name bound in the file.
func (f *pyFile) shadowed(name string) bool {
	if _, ok := f.imports[name]; ok {
		return true
	}
	for s := f.scope; s != nil; s = s.parent {
		if _, ok := s.vars[name]; ok {
			return true
		}
	}
	return false
}
