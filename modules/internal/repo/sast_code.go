package repo

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// The insecure-code rules. Each finds a call (or a setting) and reads the
// call's arguments to their closing parenthesis, however many lines they
// span; literals are told apart from code (lex), so "SELECT … ?" with its
// arguments is a parameterised query and "SELECT … " + id is not.

// codeScan is one file under the code rules.
type codeScan struct {
	s       *sastSource
	out     *findings
	seen    map[string]bool
	assigns map[string][]assignment // nil until a rule needs them
	lower   string                  // the text in lower case, once needed
	// parsedEnd: the end of what a syntax-tree analysis checked of a
	// file that did not parse whole; the SQL line rules check after it
	parsedEnd int
}

// assignment is a variable given a value: whether the value was a string
// built at run time (formatting, concatenation with a variable) and
// whether its literals are SQL.
type assignment struct {
	off, line  int
	built, sql bool
	literal    bool // nothing but literals: a constant
	// clean: not user input, a call of a function (not a method) with
	// constant arguments (table = table_name()).
	clean bool
}

func scanCode(s *sastSource, out *findings) {
	c := &codeScan{s: s, out: out, seen: map[string]bool{}}
	parsed := false
	switch s.lang {
	case "Go":
		// the SQL, command and TLS sinks on the syntax tree (sast_go.go);
		// the regular expressions when the file does not parse
		if parsed = c.goAST(); !parsed {
			c.sqlInjection()
		}
		c.weakHash()
	case "Python":
		// on the parse (sast_py.go); the regular expressions when the
		// file does not parse
		if parsed = c.pyAST(); !parsed {
			c.sqlInjection()
			c.codeInjection()
			c.deserialization()
			c.shellInjection()
		}
		c.weakHash()
	case "JavaScript", "TypeScript":
		// the sinks on the syntax tree (sast_javascript.go); the line
		// rules when the file does not parse
		if parsed = c.jsAST(); !parsed {
			c.sqlInjection()
			c.codeInjection()
			c.deserialization()
			c.shellInjection()
		}
		c.weakHash()
	case "Java", "Kotlin", "C#", "Ruby", "PHP":
		c.sqlInjection()
		c.codeInjection()
		c.deserialization()
		c.shellInjection()
		c.weakHash()
	case "Shell":
		c.shellInjection()
	}
	c.tlsDisabled(parsed)
}

func (c *codeScan) report(off int, rule, sev, msg string) {
	if c.s.commentAt(off) {
		return
	}
	line, col := c.s.lineOf(off)
	key := lineRule(line, rule)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.out.addFinding(sdk.Finding{File: c.s.path, Line: line, Column: col, Rule: rule, Severity: sev, Message: msg,
		Excerpt: codeExcerpt(lineAt(c.s.text, c.s.starts[line-1])), Fix: codeFixes[rule]})
}

func lineRule(line int, rule string) string { return fmt.Sprint(line, rule) }

func itoa(n int) string { return fmt.Sprint(n) }

// codeFixes say how to fix a finding of each insecure-code rule.
var codeFixes = map[string]string{
	"sql-injection":          "pass the values as query parameters (placeholders), never by formatting them into the SQL",
	"code-injection":         "do not run code built from data: parse the data (json, ast.literal_eval) or dispatch on a fixed table",
	"unsafe-deserialization": "load untrusted data with a format that builds no objects (JSON, yaml.safe_load), or sign and check it first",
	"shell-injection":        "run the program without a shell, with its arguments as a list; quote any value that must reach a shell",
	"tls-verify-disabled":    "keep certificate and hostname checks on; trust a private CA by adding it to the trust store",
	"weak-hash":              "hash passwords with a password hash (bcrypt, scrypt, Argon2 or PBKDF2) and a salt",
}

// secretLiteral is a quoted value that may be a secret: long, one word,
// letters and digits.
var secretLiteral = regexp.MustCompile(`(["'` + "`" + `])([A-Za-z0-9+/_\-]{4})[A-Za-z0-9+/=_\-]{12,}(["'` + "`" + `])`)

// codeExcerpt is a line of code as a finding shows it: trimmed, at most
// 160 characters, literals that may be secrets masked after their first
// four characters.
func codeExcerpt(line string) string {
	line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
	line = secretLiteral.ReplaceAllStringFunc(line, func(m string) string {
		if !strings.ContainsAny(m, "0123456789") {
			return m
		}
		sm := secretLiteral.FindStringSubmatch(m)
		return sm[1] + sm[2] + "…" + sm[3]
	})
	if r := []rune(line); len(r) > 160 {
		line = string(r[:160]) + "…"
	}
	return strings.ToValidUTF8(line, "")
}

// calls runs fn on each call the regexp finds: re matches up to and
// including the opening parenthesis; its first group, if any, is the name
// reported.
func (c *codeScan) calls(re *regexp.Regexp, fn func(off int, name string, args []piece, end int)) {
	if kws, ok := callKeywords[re]; ok && !c.hasAny(kws...) {
		return // a regular expression over the whole file costs; most files lack the words
	}
	for _, m := range re.FindAllStringSubmatchIndex(c.s.text, -1) {
		off, name := m[0], c.s.text[m[0]:m[1]]
		if len(m) > 2 && m[2] >= 0 {
			off, name = m[2], c.s.text[m[2]:m[3]]
		}
		if c.s.commentAt(off) {
			continue
		}
		args, end, ok := callArgs(c.s.text, m[1]-1, c.s.lang)
		if !ok {
			continue
		}
		fn(off, strings.TrimSpace(name), lex(args, c.s.lang), end)
	}
}

// hasAny reports whether the file holds one of the words (lower case ones
// are looked for in any case).
func (c *codeScan) hasAny(words ...string) bool {
	for _, w := range words {
		if strings.ToLower(w) == w {
			if c.lower == "" {
				c.lower = strings.ToLower(c.s.text)
			}
			if strings.Contains(c.lower, w) {
				return true
			}
		} else if strings.Contains(c.s.text, w) {
			return true
		}
	}
	return false
}

// callKeywords are words a file must hold for a call's regular expression
// to be tried.
var callKeywords map[*regexp.Regexp][]string

func init() {
	callKeywords = map[*regexp.Regexp][]string{
		condSinks:   {"Where", "Having", "Order", "Group", "Joins", "Raw"},
		evalPython:  {"eval", "exec"},
		evalJS:      {"eval", "Function", "vm."},
		timerJS:     {"setTimeout", "setInterval", "setImmediate"},
		evalJava:    {"eval"},
		evalRuby:    {"eval"},
		evalPHP:     {"eval", "assert"},
		pickleRe:    {"pickle", "marshal", "Pickle"},
		yamlLoadRe:  {"yaml."},
		unserialJS:  {"unserialize"},
		marshalRb:   {"Marshal"},
		unserialPH:  {"unserialize"},
		osSystem:    {"os.system", "os.popen", "popen2", "getoutput", "getstatusoutput"},
		subprocRe:   {"subprocess"},
		childProcRe: {"exec", "spawn"},
		javaExec:    {"exec"},
		procBuilder: {"ProcessBuilder"},
		weakHashAny: {"md5", "sha1"},
	}
	for _, re := range weakHashCalls {
		callKeywords[re] = []string{"md5", "sha1", "sha-1", "sha"}
	}
	for _, re := range sqlSinks {
		callKeywords[re] = []string{"select", "insert", "update", "delete", "where", "order by", "drop", "create", "alter", "truncate", "group by"}
	}
}

var (
	// assignRe: NAME = / NAME := / NAME += at the start of a statement,
	// after declarations (var, let, const, final, a type).
	assignRe = regexp.MustCompile(`(?m)^[ \t]*(?:(?:var|let|const|final|val|static|private|public|protected|auto)\s+)*(?:[A-Za-z_][\w<>\[\],.]*\s+)?\$?([A-Za-z_]\w*)\s*(?::\s*[\w<>\[\]|.]+\s*)?(\+=|\.=|:=|=)`)
	identRe  = regexp.MustCompile(`[A-Za-z_$][\w$]*`)
	bareRe   = regexp.MustCompile(`^\$?[A-Za-z_]\w*$`)
	numberRe = regexp.MustCompile(`^\s*-?\d[\d_.]*[lLuUfF]?\s*;?\s*$`)
)

// trackAssignments records the variables given strings built at run time.
func (c *codeScan) trackAssignments() {
	c.assigns = map[string][]assignment{"": nil}
	text := c.s.text
	for _, m := range assignRe.FindAllStringSubmatchIndex(text, -1) {
		if m[1] < len(text) && (text[m[1]] == '=' || text[m[1]] == '>') {
			continue
		}
		name, op := text[m[2]:m[3]], text[m[4]:m[5]]
		stmt := c.statement(m[1])
		ps := lex(stmt, c.s.lang)
		a := assignment{off: m[2], built: isBuilt(ps, c.s.lang), sql: isSQL(literals(ps))}
		a.line, _ = c.s.lineOf(m[2])
		a.literal = !a.built && !nonLiteral(ps) && (strings.Contains(skeleton(ps), "§") || numberRe.MatchString(skeleton(ps)))
		for _, id := range identRe.FindAllString(codeOf(ps), -1) {
			if prev, ok := c.lookup(id, m[2]); ok && prev.built {
				a.built = true
				a.sql = a.sql || prev.sql
			}
		}
		if op == "+=" || op == ".=" {
			prev, _ := c.lookup(name, m[2])
			a.built = a.built || prev.built || nonLiteral(ps)
			a.sql = a.sql || prev.sql
			a.literal = false
		}
		a.clean = !a.built && !a.literal && op != "+=" && op != ".=" && c.cleanCall(ps, m[2])
		c.assigns[name] = append(c.assigns[name], a)
	}
}

// statement returns the text from off to the end of its statement: the
// line, and the lines after it while brackets are open or the line ends
// with an operator.
func (c *codeScan) statement(off int) string {
	text := c.s.text
	end := off
	for k := 0; k < 12; k++ {
		nl := strings.IndexByte(text[end:], '\n')
		if nl < 0 {
			return text[off:]
		}
		end += nl + 1
		stmt := text[off:end]
		sk := skeleton(lex(stmt, c.s.lang))
		open := strings.Count(sk, "(") + strings.Count(sk, "[") + strings.Count(sk, "{") -
			strings.Count(sk, ")") - strings.Count(sk, "]") - strings.Count(sk, "}")
		t := strings.TrimSpace(sk)
		cont := strings.HasSuffix(t, "+") || strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "%") ||
			strings.HasSuffix(t, ".") || strings.HasSuffix(t, ",") && open > 0
		if next := strings.TrimSpace(lineAt(text, end)); strings.HasPrefix(next, "+") || strings.HasPrefix(next, ".") || strings.HasPrefix(next, "%") {
			cont = true
		}
		if open <= 0 && !cont {
			return stmt
		}
	}
	return text[off:end]
}

func lineAt(text string, off int) string {
	if off >= len(text) {
		return ""
	}
	if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
		return text[off : off+nl]
	}
	return text[off:]
}

// lookup returns the last assignment of name before off.
func (c *codeScan) lookup(name string, off int) (assignment, bool) {
	if c.assigns == nil {
		c.trackAssignments()
	}
	var last assignment
	found := false
	for _, a := range c.assigns[strings.TrimPrefix(name, "$")] {
		if a.off < off {
			last, found = a, true
		}
	}
	return last, found
}

var (
	concatRe  = regexp.MustCompile(`§\s*\+\s*[^\s§+=]|[\w)\]]\s*\+\s*§`)
	concatPHP = regexp.MustCompile(`§\s*\.\s*[^\s§.=]|[\w)\]]\s*\.\s*§`)
	percentRe = regexp.MustCompile(`§\s*%\s*[\w(\[{]`)
	formatRe  = regexp.MustCompile(`§\s*\.\s*(?:format|formatted)\s*\(`)
	fmtFuncRe = regexp.MustCompile(`(?:Sprintf|Sprint|Fprintf|String\.format|util\.format|\bformat|\bsprintf)\s*\(\s*$`)
	verbRe    = regexp.MustCompile(`%[-+# 0-9.]*[sSvq]|\{\}|\{\d\}`)
	sqlRe     = regexp.MustCompile(`(?is)\b(?:select\b.{0,300}?\bfrom\b|insert\s+into\b|update\b.{0,100}?\bset\b|delete\s+from\b|drop\s+(?:table|database|index)\b|create\s+(?:table|index|database)\b|alter\s+table\b|truncate\s+table\b|where\b.{0,200}?(?:[=<>]|\blike\b|\bin\b)|order\s+by\b|group\s+by\b)`)
)

// isBuilt reports a string built at run time: an f-string or template with
// values, a literal concatenated with code, %-formatting, .format,
// Sprintf/String.format with %s.
func isBuilt(ps []piece, lang string) bool {
	for i, p := range ps {
		if p.lit && p.interp && !p.tagged {
			return true
		}
		if !p.lit && fmtFuncRe.MatchString(p.text) && i+1 < len(ps) && ps[i+1].lit && verbRe.MatchString(ps[i+1].text) {
			return true
		}
	}
	sk := skeleton(ps)
	if lang == "PHP" && concatPHP.MatchString(sk) {
		return true
	}
	return concatRe.MatchString(sk) || percentRe.MatchString(sk) || formatRe.MatchString(sk)
}

func isSQL(lits string) bool { return sqlRe.MatchString(lits) }

// nonLiteral reports code that is more than literals: a variable, a call,
// an interpolation.
func nonLiteral(ps []piece) bool {
	for _, p := range ps {
		if p.lit && p.interp && !p.tagged {
			return true
		}
		if !p.lit && identRe.MatchString(strings.NewReplacer("None", "", "null", "", "nil", "", "true", "", "false", "", "True", "", "False", "").Replace(p.text)) {
			return true
		}
	}
	return false
}

// builtArg reports an argument built at run time, or a variable assigned
// one (and SQL, when sql).
func (c *codeScan) builtArg(arg []piece, off int, sql bool) (string, bool) {
	if !sql && shellQuoted.MatchString(codeOf(arg)) {
		return "", false // the values are quoted for the shell
	}
	if callback.MatchString(codeOf(arg)) {
		return "", false // a callback (app.get("/", (req, res) => …)): its body is checked on its own
	}
	if isBuilt(arg, c.s.lang) && (!sql || isSQL(literals(arg))) && !c.onlyConstants(arg, off) {
		return "", true
	}
	sk := strings.TrimSpace(skeleton(arg))
	if bareRe.MatchString(sk) {
		if a, ok := c.lookup(sk, off); ok && a.built && (!sql || a.sql) {
			return fmt.Sprintf(" (%s, built on line %d)", sk, a.line), true
		}
	}
	return "", false
}

// callback is an argument that is a function.
var callback = regexp.MustCompile(`^\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>|lambda\b)`)

// shellQuoted are the functions that quote a value for a shell.
var shellQuoted = regexp.MustCompile(`\b(?:shlex\.quote|pipes\.quote|shellescape|escapeshellarg|shellQuote|shell-quote)\b`)

// onlyConstants reports code whose values are all variables assigned a
// literal (fmt.Sprintf("… %s", table) with const table = "users").
func (c *codeScan) onlyConstants(arg []piece, off int) bool {
	n := 0
	code := codeOf(arg)
	for _, m := range identRe.FindAllStringIndex(code, -1) {
		if m[0] > 0 && (code[m[0]-1] == '.' || code[m[0]-1] == '$') {
			continue // a member
		}
		if rest := strings.TrimLeft(code[m[1]:], " \t\n"); strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, ".") {
			continue // a call, or an object whose member is taken
		}
		a, ok := c.lookup(code[m[0]:m[1]], off)
		if !ok || !a.literal && !a.clean {
			return false
		}
		n++
	}
	return n > 0
}

// cleanCall reports a value that is a call of a function by a bare name
// (not a method, not a source) whose arguments are constants.
func (c *codeScan) cleanCall(ps []piece, off int) bool {
	code := strings.TrimSpace(codeOf(ps))
	if src := sources[c.s.lang]; src != nil && src.MatchString(code) {
		return false
	}
	called := 0
	for _, m := range identRe.FindAllStringIndex(code, -1) {
		if m[0] > 0 && (code[m[0]-1] == '.' || code[m[0]-1] == '$') {
			return false
		}
		rest := strings.TrimLeft(code[m[1]:], " \t\n")
		switch {
		case strings.HasPrefix(rest, "("):
			called++
		case strings.HasPrefix(rest, "."):
			return false
		default:
			if a, ok := c.lookup(code[m[0]:m[1]], off); !ok || !a.literal {
				return false
			}
		}
	}
	return called > 0
}

// argPieces splits a call's arguments at top-level commas.
func argPieces(ps []piece) [][]piece {
	var out [][]piece
	var cur []piece
	depth := 0
	for _, p := range ps {
		if p.lit {
			cur = append(cur, p)
			continue
		}
		start := 0
		for i := 0; i < len(p.text); i++ {
			switch p.text[i] {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
			case ',':
				if depth == 0 {
					cur = append(cur, piece{text: p.text[start:i]})
					out = append(out, cur)
					cur = nil
					start = i + 1
				}
			}
		}
		cur = append(cur, piece{text: p.text[start:]})
	}
	return append(out, cur)
}

// trimPieces drops the blank code around literals.
func trimPieces(ps []piece) []piece {
	var out []piece
	for _, p := range ps {
		if p.lit || strings.TrimSpace(p.text) != "" {
			out = append(out, p)
		}
	}
	return out
}

var sqlSinks = map[string]*regexp.Regexp{
	"Go":         regexp.MustCompile(`\.(Query|QueryRow|QueryContext|QueryRowContext|Exec|ExecContext|Prepare|PrepareContext|Raw|Select|Get|NamedExec|NamedQuery|MustExec|Queryx|QueryRowx)\s*\(`),
	"Python":     regexp.MustCompile(`(?:\.(execute|executemany|executescript|raw|extra|mogrify|read_sql|read_sql_query|fetch|fetchrow|fetchval|cursor|copy_from_query|prepare)|(?:^|[^\w.])(text|RawSQL))\s*\(`),
	"JavaScript": regexp.MustCompile(`\.(query|execute|raw|unsafe|whereRaw|orderByRaw|havingRaw|joinRaw|\$queryRawUnsafe|\$executeRawUnsafe|exec|run|all|get|prepare)\s*\(`),
	"Java":       regexp.MustCompile(`\.(executeQuery|executeUpdate|executeLargeUpdate|execute|prepareStatement|prepareCall|addBatch|createQuery|createNativeQuery|createSQLQuery|queryForList|queryForObject|queryForMap|queryForRowSet|query|update|batchUpdate)\s*\(`),
	"C#":         regexp.MustCompile(`(?:new\s+(SqlCommand)|\.(ExecuteSqlRaw|FromSqlRaw|ExecuteSqlCommand|SqlQuery))\s*\(`),
	"PHP":        regexp.MustCompile(`(?:->(query|exec|prepare)|\b(mysql_query|mysqli_query|pg_query))\s*\(`),
}

func init() {
	sqlSinks["TypeScript"] = sqlSinks["JavaScript"]
	sqlSinks["Kotlin"] = sqlSinks["Java"]
}

// condSinks take a condition, a fragment of SQL (gorm's Where).
var condSinks = regexp.MustCompile(`\.(Where|Having|Order|Group|Joins|whereRaw|andWhereRaw|orWhereRaw)\s*\(`)

var condRe = regexp.MustCompile(`(?i)[=<>]|\blike\b|\bin\s*\(`)

// sqlInjection: SQL built by formatting or concatenation, passed to a
// query or exec call.
func (c *codeScan) sqlInjection() {
	re := sqlSinks[c.s.lang]
	if re == nil {
		return
	}
	if c.s.lang == "Go" || c.s.lang == "JavaScript" || c.s.lang == "TypeScript" {
		c.calls(condSinks, func(off int, name string, args []piece, _ int) {
			if off < c.parsedEnd {
				return
			}
			first := argPieces(args)[0]
			if isBuilt(first, c.s.lang) && condRe.MatchString(literals(first)) && !c.onlyConstants(first, off) {
				c.report(off, "sql-injection", sdk.SeverityError,
					"SQL condition built by string formatting or concatenation is passed to "+name+": use parameters")
			}
		})
	}
	c.calls(re, func(off int, name string, args []piece, _ int) {
		if off < c.parsedEnd {
			return // checked on the syntax tree
		}
		for _, arg := range argPieces(args) {
			if how, ok := c.builtArg(arg, off, true); ok {
				c.report(off, "sql-injection", sdk.SeverityError,
					"SQL built by string formatting or concatenation"+how+" is run by "+strings.TrimLeft(name, ".>-")+": use parameters")
				return
			}
		}
	})
}

var (
	evalPython = regexp.MustCompile(`(?:^|[^\w.])(eval|exec)\s*\(`)
	// evalAsValue: eval or exec passed as a function
	// (loop.run_in_executor(None, exec, code), map(eval, xs)).
	evalAsValue = regexp.MustCompile(`[(,]\s*\b(eval|exec)\s*[,)]`)
	evalJS      = regexp.MustCompile(`(?:^|[^\w.$])(eval|new\s+Function|vm\.(?:runInNewContext|runInThisContext|runInContext)|new\s+vm\.Script)\s*\(`)
	timerJS     = regexp.MustCompile(`(?:^|[^\w.$])((?:window\.)?(?:setTimeout|setInterval|setImmediate))\s*\(`)
	evalJava    = regexp.MustCompile(`\.(eval)\s*\(`)
	evalRuby    = regexp.MustCompile(`(?:^|[^\w.])(eval|instance_eval|class_eval)\s*\(`)
	evalPHP     = regexp.MustCompile(`(?:^|[^\w>$])(eval|assert)\s*\(`)
)

// codeInjection: eval and its kin on code built at run time.
func (c *codeScan) codeInjection() {
	dynamic := func(off int, name string, args []piece, _ int) {
		if nonLiteral(args) && !c.onlyConstants(args, off) {
			c.report(off, "code-injection", sdk.SeverityError, name+" runs code built at run time")
		}
	}
	switch c.s.lang {
	case "Python":
		c.calls(evalPython, dynamic)
		if c.hasAny("eval", "exec") {
			for _, m := range evalAsValue.FindAllStringSubmatchIndex(c.s.text, -1) {
				c.report(m[2], "code-injection", sdk.SeverityError, c.s.text[m[2]:m[3]]+" is passed as a function: it will run code given to it")
			}
		}
	case "JavaScript", "TypeScript":
		c.calls(evalJS, dynamic)
		c.calls(timerJS, func(off int, name string, args []piece, _ int) {
			if first := argPieces(args)[0]; len(first) > 0 && strings.HasPrefix(strings.TrimSpace(skeleton(first)), "§") {
				c.report(off, "code-injection", sdk.SeverityError, name+" with a string runs it as code")
			}
		})
	case "Java", "Kotlin":
		if strings.Contains(c.s.text, "ScriptEngine") {
			c.calls(evalJava, dynamic)
		}
	case "Ruby":
		c.calls(evalRuby, dynamic)
	case "PHP":
		c.calls(evalPHP, func(off int, name string, args []piece, end int) {
			if strings.Contains(skeleton(args), "$") {
				c.report(off, "code-injection", sdk.SeverityError, name+" runs code built at run time")
			}
		})
	}
}

var (
	pickleRe   = regexp.MustCompile(`\b((?:pickle|cPickle|_pickle|dill|cloudpickle)\.(?:loads?|Unpickler)|marshal\.loads?|jsonpickle\.decode|(?:pd|pandas)\.read_pickle)\s*\(`)
	yamlLoadRe = regexp.MustCompile(`\b(yaml\.(?:load|load_all|unsafe_load|unsafe_load_all))\s*\(`)
	safeLoader = regexp.MustCompile(`\b(?:SafeLoader|CSafeLoader|BaseLoader)\b`)
	readObject = regexp.MustCompile(`\.(readObject|readUnshared)\s*\(\s*\)`)
	unserialJS = regexp.MustCompile(`\b(unserialize)\s*\(`)
	marshalRb  = regexp.MustCompile(`\b(Marshal\.load)\s*\(`)
	unserialPH = regexp.MustCompile(`(?:^|[^\w>])(unserialize)\s*\(`)
)

// deserialization: formats that run code or build arbitrary objects as
// they load.
func (c *codeScan) deserialization() {
	rule, sev := "unsafe-deserialization", sdk.SeverityError
	switch c.s.lang {
	case "Python":
		c.pyDeserialization()
	case "Java", "Kotlin":
		t := c.s.text
		if (strings.Contains(t, "ObjectInputStream") || strings.Contains(t, "XMLDecoder")) &&
			!strings.Contains(t, "ObjectInputFilter") && !strings.Contains(t, "ValidatingObjectInputStream") {
			for _, m := range readObject.FindAllStringSubmatchIndex(t, -1) {
				c.report(m[2], rule, sev, "ObjectInputStream."+t[m[2]:m[3]]+" without a filter deserializes any class")
			}
		}
	case "JavaScript", "TypeScript":
		if strings.Contains(c.s.text, "node-serialize") {
			c.calls(unserialJS, func(off int, name string, _ []piece, _ int) {
				c.report(off, rule, sev, "node-serialize's unserialize runs functions in the data")
			})
		}
	case "Ruby":
		c.calls(marshalRb, func(off int, name string, _ []piece, _ int) {
			c.report(off, rule, sev, name+" builds arbitrary objects")
		})
	case "PHP":
		c.calls(unserialPH, func(off int, name string, args []piece, _ int) {
			if strings.Contains(skeleton(args), "$_") {
				c.report(off, rule, sev, "unserialize of request data")
			}
		})
	}
}

var (
	osSystem    = regexp.MustCompile(`\b(os\.(?:system|popen[234]?)|popen2\.popen[234]|subprocess\.(?:getoutput|getstatusoutput)|commands\.getoutput)\s*\(`)
	subprocRe   = regexp.MustCompile(`\b(subprocess\.(?:run|call|check_call|check_output|Popen))\s*\(`)
	shellTrue   = regexp.MustCompile(`\bshell\s*[=:]\s*(?:True|true)\b`)
	childProcRe = regexp.MustCompile(`\b(exec|execSync|spawn|spawnSync|execFile|execFileSync)\s*\(`)
	javaExec    = regexp.MustCompile(`\.(exec)\s*\(`)
	procBuilder = regexp.MustCompile(`\bnew\s+(ProcessBuilder)\s*\(`)
	shellEval   = regexp.MustCompile(`(?m)^[ \t]*(eval)\s+.*\$`)
	fixedSubst  = regexp.MustCompile(`^[ \t]*eval\s+"?\$\([^)$` + "`" + `]*\)"?\s*(?:#.*)?$`)
	shellArgs   = regexp.MustCompile(`(?:^|\s)(?:sh|bash|zsh|cmd|cmd\.exe|/bin/sh|/bin/bash|powershell)\s+(?:-c|/c)\b`)
)

// childProcReceivers are the names child_process goes by.
var childProcReceivers = map[string]bool{"child_process": true, "childProcess": true, "cp": true, "proc": true, "shell": true, "execa": true}

// shellInjection: shell commands built at run time.
func (c *codeScan) shellInjection() {
	rule, sev := "shell-injection", sdk.SeverityError
	msg := func(name, how string) string { return name + " runs a shell command built at run time" + how }
	switch c.s.lang {
	case "Python":
		c.calls(osSystem, func(off int, name string, args []piece, _ int) {
			first := argPieces(args)[0]
			if how, ok := c.builtArg(first, off, false); ok {
				c.report(off, rule, sev, msg(name, how))
			} else if m := sources[c.s.lang]; m != nil && m.MatchString(codeOf(first)) {
				c.report(off, rule, sev, msg(name, how))
			} else if sk := strings.TrimSpace(skeleton(first)); bareRe.MatchString(sk) {
				if _, known := c.lookup(sk, off); !known {
					c.report(off, rule, sev, msg(name, " ("+sk+")"))
				}
			}
		})
		c.calls(subprocRe, func(off int, name string, args []piece, _ int) {
			if !shellTrue.MatchString(skeleton(args)) {
				return
			}
			first := argPieces(args)[0]
			if how, ok := c.builtArg(first, off, false); ok {
				c.report(off, rule, sev, msg(name+" with shell=True", how))
			} else if sk := strings.TrimSpace(skeleton(first)); bareRe.MatchString(sk) {
				if _, known := c.lookup(sk, off); !known {
					c.report(off, rule, sev, msg(name+" with shell=True", " ("+sk+")"))
				}
			}
		})
	case "JavaScript", "TypeScript":
		if !strings.Contains(c.s.text, "child_process") && !strings.Contains(c.s.text, "execa") {
			return
		}
		c.calls(childProcRe, func(off int, name string, args []piece, _ int) {
			if off > 0 && c.s.text[off-1] == '.' {
				recv := identRe.FindAllString(c.s.text[max(0, off-40):off-1], -1)
				if len(recv) == 0 || !childProcReceivers[recv[len(recv)-1]] {
					return
				}
			}
			parts := argPieces(args)
			if strings.HasPrefix(name, "spawn") || strings.HasPrefix(name, "execFile") {
				// a shell, by shell: true or by running sh -c
				if first := trimPieces(parts[0]); len(first) == 1 && first[0].lit && shells[first[0].text] && len(parts) > 1 &&
					strings.Contains(literals(parts[1]), "-c") {
					for _, p := range parts[1] {
						if p.lit && p.interp || !p.lit && strings.Contains(p.text, "+") {
							c.report(off, rule, sev, msg(name+" of a shell", ""))
							return
						}
					}
				}
				if !shellTrue.MatchString(skeleton(args)) {
					return
				}
			}
			if how, ok := c.builtArg(parts[0], off, false); ok {
				c.report(off, rule, sev, msg(name, how))
			} else if sk := strings.TrimSpace(skeleton(parts[0])); bareRe.MatchString(sk) && !strings.HasPrefix(name, "spawn") && !strings.HasPrefix(name, "execFile") {
				if _, known := c.lookup(sk, off); !known {
					c.report(off, rule, sev, msg(name, " ("+sk+", a parameter)"))
				}
			}
		})
	case "Java", "Kotlin":
		if strings.Contains(c.s.text, "Runtime") {
			c.calls(javaExec, func(off int, name string, args []piece, _ int) {
				if how, ok := c.builtArg(argPieces(args)[0], off, false); ok {
					c.report(off, rule, sev, msg("Runtime.exec", how))
				}
			})
		}
		c.calls(procBuilder, func(off int, name string, args []piece, _ int) {
			if !shellArgs.MatchString(" " + strings.Join(strings.Fields(literals(args)), " ")) {
				return
			}
			for _, a := range argPieces(args) {
				if how, ok := c.builtArg(a, off, false); ok || (len(a) > 0 && !a[0].lit && nonLiteral(a)) {
					c.report(off, rule, sev, msg("ProcessBuilder with a shell", how))
					return
				}
			}
		})
	case "Shell":
		for _, m := range shellEval.FindAllStringSubmatchIndex(c.s.text, -1) {
			if fixedSubst.MatchString(strings.TrimSuffix(lineAt(c.s.text, m[0]), "\r")) {
				continue // eval "$(ssh-agent -s)": a fixed command's output
			}
			c.report(m[2], rule, sdk.SeverityWarning, "eval of a variable")
		}
	}
}

// tlsRule is a setting that turns off certificate or hostname checks.
type tlsRule struct {
	langs map[string]bool // nil: every file
	re    *regexp.Regexp  // group 1 is reported
	msg   string
	kw    string // a word the file must hold (its case as written)
}

func langSet(s string) map[string]bool { return wordSet(s) }

var tlsRules = []tlsRule{
	{langSet("Go"), regexp.MustCompile(`\b(InsecureSkipVerify)\s*[:=]\s*true\b`), "InsecureSkipVerify: true turns off certificate checks", "InsecureSkipVerify"},
	{langSet("Python"), regexp.MustCompile(`\b(verify)\s*=\s*False\b`), "verify=False turns off certificate checks", "verify"},
	{langSet("Python"), regexp.MustCompile(`\b(ssl\._create_unverified_context)\b`), "an unverified SSL context accepts any certificate", "_create_unverified_context"},
	{langSet("Python"), regexp.MustCompile(`\b(check_hostname)\s*=\s*False\b`), "check_hostname = False accepts any host's certificate", "check_hostname"},
	{langSet("Python"), regexp.MustCompile(`\b((?:cert_reqs|verify_mode))\s*=\s*(?:ssl\.)?CERT_NONE\b`), "CERT_NONE turns off certificate checks", "CERT_NONE"},
	{langSet("JavaScript TypeScript"), regexp.MustCompile(`\b(rejectUnauthorized)["']?\s*:\s*false\b`), "rejectUnauthorized: false turns off certificate checks", "rejectUnauthorized"},
	{langSet("JavaScript TypeScript"), regexp.MustCompile(`\b(strictSSL)["']?\s*:\s*false\b`), "strictSSL: false turns off certificate checks", "strictSSL"},
	{langSet("JavaScript TypeScript"), regexp.MustCompile(`\b(checkServerIdentity)\s*:\s*\(\s*\)\s*=>\s*(?:undefined|null|\{\s*\})`), "checkServerIdentity that accepts any host", "checkServerIdentity"},
	{nil, regexp.MustCompile(`\b(NODE_TLS_REJECT_UNAUTHORIZED)["'\]]*\s*[=:]\s*["']?0\b`), "NODE_TLS_REJECT_UNAUTHORIZED=0 turns off certificate checks", "NODE_TLS_REJECT_UNAUTHORIZED"},
	{langSet("Java Kotlin"), regexp.MustCompile(`\b(checkServerTrusted)\s*\([^)]*\)\s*(?::\s*\w+\s*)?(?:throws\s+[\w.,\s]+?)?\{\s*(?:(?://[^\n]*|/\*[\s\S]*?\*/)\s*)*\}`), "a TrustManager that trusts every certificate", "checkServerTrusted"},
	{langSet("Java Kotlin"), regexp.MustCompile(`\b(verify)\s*\(\s*(?:final\s+)?String\s+\w+\s*,\s*(?:final\s+)?SSLSession\s+\w+\s*\)\s*\{\s*return\s+true\s*;?\s*\}`), "a HostnameVerifier that accepts any host", "SSLSession"},
	{langSet("Java Kotlin"), regexp.MustCompile(`\b((?:set(?:Default)?HostnameVerifier|hostnameVerifier))\s*\(\s*(?:\(\s*\w*\s*,\s*\w*\s*\)\s*->|\{\s*_\s*,\s*_\s*->)\s*true`), "a HostnameVerifier that accepts any host", "hostnameverifier"},
	{langSet("Java Kotlin"), regexp.MustCompile(`\b(NoopHostnameVerifier|ALLOW_ALL_HOSTNAME_VERIFIER|AllowAllHostnameVerifier|TrustAllStrategy)\b`), "a verifier that accepts any host or certificate", ""},
	{langSet("C#"), regexp.MustCompile(`\b(ServerCertificate(?:Custom)?ValidationCallback)\s*\+?=[^;\n]*=>\s*true`), "a certificate callback that accepts any certificate", "ValidationCallback"},
	{langSet("PHP"), regexp.MustCompile(`\b(CURLOPT_SSL_VERIFY(?:PEER|HOST))\s*,\s*(?:0|false)\b`), "cURL certificate checks turned off", "CURLOPT_SSL_VERIFY"},
	{langSet("Shell Dockerfile Makefile YAML"), regexp.MustCompile(`\b(curl)\b[^\n|;&]*?\s(?:-[A-Za-z]{0,4}k[A-Za-z]{0,4}|--insecure)(?:\s|$)`), "curl -k accepts any certificate", "curl"},
	{langSet("Shell Dockerfile Makefile YAML"), regexp.MustCompile(`\b(wget)\b[^\n|;&]*?\s--no-check-certificate\b`), "wget --no-check-certificate accepts any certificate", "wget"},
	{nil, regexp.MustCompile(`(?i)\b(http\.sslVerify)\s*(?:=\s*|\s+)["']?false\b`), "git's certificate checks turned off", "sslverify"},
	{nil, regexp.MustCompile(`\b(GIT_SSL_NO_VERIFY)["']?\s*[=:]\s*["']?(?:1|true)\b`), "GIT_SSL_NO_VERIFY turns off git's certificate checks", "GIT_SSL_NO_VERIFY"},
	{nil, regexp.MustCompile(`\b(PYTHONHTTPSVERIFY)["']?\s*[=:]\s*["']?0\b`), "PYTHONHTTPSVERIFY=0 turns off Python's certificate checks", "PYTHONHTTPSVERIFY"},
	{nil, regexp.MustCompile(`\b(strict-ssl)\s*(?:=\s*|\s+)false\b`), "npm's certificate checks turned off", "strict-ssl"},
	{langSet("YAML TOML JSON INI Terraform"), regexp.MustCompile(`(?i)\b(insecure[_\-]?skip[_\-]?(?:tls[_\-]?)?verify)["']?\s*[:=]\s*["']?true\b`), "certificate checks turned off", "insecure"},
}

// astTLSKeys are the TLS settings the syntax-tree analyses check.
var astTLSKeys = map[string]map[string]bool{
	"Go":         {"InsecureSkipVerify": true},
	"JavaScript": {"rejectUnauthorized": true, "NODE_TLS_REJECT_UNAUTHORIZED": true},
	"TypeScript": {"rejectUnauthorized": true, "NODE_TLS_REJECT_UNAUTHORIZED": true},
}

// tlsDisabled: settings that turn off certificate or hostname checks.
// A parsed file's settings were checked on its syntax tree (Go's
// InsecureSkipVerify, JavaScript's rejectUnauthorized, all of Python's).
func (c *codeScan) tlsDisabled(parsed bool) {
	for _, r := range tlsRules {
		if r.langs != nil && !r.langs[c.s.lang] || !c.hasAny(r.kw) || parsed && astTLSKeys[c.s.lang][r.kw] ||
			parsed && c.s.lang == "Python" && r.langs != nil {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(c.s.text, -1) {
			c.report(m[2], "tls-verify-disabled", sdk.SeverityError, r.msg)
		}
	}
}

var (
	weakHashCalls = map[string]*regexp.Regexp{
		"Python":     regexp.MustCompile(`\b(hashlib\.(?:md5|sha1|new)|hashes\.(?:MD5|SHA1))\s*\(`),
		"Go":         regexp.MustCompile(`\b((?:md5|sha1)\.(?:Sum|New))\s*\(`),
		"JavaScript": regexp.MustCompile(`\b(createHash)\s*\(`),
		"Java":       regexp.MustCompile(`\b(MessageDigest\.getInstance|DigestUtils\.(?:md5|sha1|sha|md5Hex|sha1Hex|shaHex)|Hashing\.(?:md5|sha1))\s*\(`),
	}
	weakHashAny  = regexp.MustCompile(`(?:^|[^\w.>$])(md5|sha1|MD5|SHA1)\s*\(`)
	weakAlgo     = regexp.MustCompile(`(?i)^\s*(?:md5|sha-?1)\s*$`)
	hashFeedCall = regexp.MustCompile(`\b(?:update|Write|WriteString|digest|Sum|hash)\s*\(`)
)

func init() {
	weakHashCalls["TypeScript"] = weakHashCalls["JavaScript"]
	weakHashCalls["Kotlin"] = weakHashCalls["Java"]
}

// passwordWords name a password in code.
var passwordWords = wordSet(`password passwords passwd pwd pw passphrase pass`)

// mentionsPassword reports code (not its literals or comments) that names
// a password.
func (c *codeScan) mentionsPassword(ps []piece) bool {
	for _, id := range identRe.FindAllString(codeOf(ps), -1) {
		if id == "pass" && c.s.lang == "Python" {
			continue // the statement
		}
		for _, w := range identWords(id) {
			if passwordWords[w] {
				return true
			}
		}
	}
	return false
}

// weakHash: MD5 or SHA-1 applied to a password, in the call, or fed to the
// hash in the lines after it (h := md5.New(); h.Write([]byte(password))),
// or in a function whose name says password.
func (c *codeScan) weakHash() {
	check := func(off int, name string, args []piece, end int) {
		data := args
		if strings.HasSuffix(name, ".new") || strings.HasSuffix(name, "createHash") || strings.HasSuffix(name, "getInstance") {
			// hashlib.new, createHash, MessageDigest.getInstance: weak
			// only with md5 or sha1; the data, if any, follows
			parts := argPieces(args)
			first := trimPieces(parts[0])
			if len(first) != 1 || !first[0].lit || !weakAlgo.MatchString(first[0].text) {
				return
			}
			data = nil
			for _, p := range parts[1:] {
				data = append(data, p...)
			}
		}
		var hit bool
		if len(trimPieces(data)) > 0 {
			// md5.Sum(x), hashlib.md5(x), md5(x): x is what is hashed
			hit = c.mentionsPassword(data)
		} else {
			// md5.New(), hashlib.md5(), createHash("md5"): what is fed to
			// the hash in the few lines after, or the function's name
			line, _ := c.s.lineOf(off)
			after := c.s.text[end:min(len(c.s.text), c.lineEnd(line+5))]
			if strings.HasPrefix(strings.TrimSpace(after), ".") {
				after = lineAt(after, 0) // createHash("md5").update(x): the chain only
			}
			for _, m := range hashFeedCall.FindAllStringIndex(after, -1) {
				if a, _, ok := callArgs(after, m[1]-1, c.s.lang); ok && c.mentionsPassword(lex(a, c.s.lang)) {
					hit = true
					break
				}
			}
			if !hit {
				before := c.s.text[c.s.starts[max(0, line-4)]:off]
				hit = passwordFunc.MatchString(before)
			}
		}
		if hit {
			c.report(off, "weak-hash", sdk.SeverityWarning, name+": MD5 or SHA-1 for a password (use bcrypt, scrypt or Argon2)")
		}
	}
	if re := weakHashCalls[c.s.lang]; re != nil {
		c.calls(re, check)
	}
	c.calls(weakHashAny, check)
	c.weakHashToPassword()
}

// passwordFunc is a function or method whose name says password.
var passwordFunc = regexp.MustCompile(`(?i)(?:def|func|function|fun|public|private|protected|static)\s[^\n(]*pass(?:word|wd)?\w*\s*\(`)

// lineEnd returns the offset of the end of line n (from 1).
func (c *codeScan) lineEnd(n int) int {
	if n >= len(c.s.starts) {
		return len(c.s.text)
	}
	return c.s.starts[n]
}
