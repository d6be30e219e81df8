package repo

import (
	"regexp"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// Tables of the insecure-code rules that are easy to extend: sources of
// untrusted values per language, and Python's dangerous callables by their
// full name (imports resolved: import pickle as pk; from pickle import
// loads).

// sources are values that come from outside, per language: request
// parameters, the command line, the environment.
var sources = map[string]*regexp.Regexp{
	"Python":     regexp.MustCompile(`\b(?:request\.(?:args|form|values|data|json|files|cookies|headers|GET|POST|body|query_params|get_json)|sys\.argv|os\.environ|os\.getenv|input\s*\()`),
	"JavaScript": regexp.MustCompile(`\b(?:req|request|ctx\.request)\.(?:query|params|body|cookies|headers|url)\b|\bprocess\.(?:argv|env)\b|\blocation\.(?:search|hash)\b`),
	"Go":         regexp.MustCompile(`\.URL\.Query\(\)|\.(?:FormValue|PostFormValue|Param|Query|PathValue)\(|\bos\.Args\b|\bos\.Getenv\(`),
}

func init() { sources["TypeScript"] = sources["JavaScript"] }

// pyDeserializer is a Python callable that builds objects (or runs code)
// from the data it loads; unless is an argument that makes it safe, when
// needs is an argument without which it is safe.
type pyDeserializer struct {
	unless, needs *regexp.Regexp
	msg           string
}

var pickleMsg = "can run code from the data it loads"

// pyDeserializers are Python's unsafe loaders by full name.
var pyDeserializers = map[string]pyDeserializer{
	"pickle.load": {msg: pickleMsg}, "pickle.loads": {msg: pickleMsg}, "pickle.Unpickler": {msg: pickleMsg},
	"_pickle.load": {msg: pickleMsg}, "_pickle.loads": {msg: pickleMsg}, "_pickle.Unpickler": {msg: pickleMsg},
	"cPickle.load": {msg: pickleMsg}, "cPickle.loads": {msg: pickleMsg}, "cPickle.Unpickler": {msg: pickleMsg},
	"dill.load": {msg: pickleMsg}, "dill.loads": {msg: pickleMsg}, "cloudpickle.load": {msg: pickleMsg}, "cloudpickle.loads": {msg: pickleMsg},
	"marshal.load": {msg: pickleMsg}, "marshal.loads": {msg: pickleMsg},
	"jsonpickle.decode":    {msg: "builds arbitrary objects from the data it decodes"},
	"shelve.open":          {msg: "unpickles the values of the shelf it opens"},
	"joblib.load":          {msg: "unpickles the file it loads"},
	"pandas.read_pickle":   {msg: pickleMsg},
	"torch.load":           {unless: regexp.MustCompile(`\bweights_only\s*=\s*True\b`), msg: "unpickles the file it loads (pass weights_only=True)"},
	"numpy.load":           {needs: regexp.MustCompile(`\ballow_pickle\s*=\s*True\b`), msg: "with allow_pickle=True unpickles the file it loads"},
	"yaml.load":            {unless: safeLoader, msg: "without a safe loader builds arbitrary objects (use yaml.safe_load)"},
	"yaml.load_all":        {unless: safeLoader, msg: "without a safe loader builds arbitrary objects (use yaml.safe_load_all)"},
	"yaml.unsafe_load":     {msg: "builds arbitrary objects (use yaml.safe_load)"},
	"yaml.unsafe_load_all": {msg: "builds arbitrary objects (use yaml.safe_load_all)"},
	"yaml.full_load":       {msg: "builds Python objects (use yaml.safe_load)"},
}

var (
	pyImport     = regexp.MustCompile(`(?m)^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)`)
	pyFromImport = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?([\w, \t]+(?:[ \t]+as[ \t]+\w+)?[\w, \t]*)`)
	pyCall       = regexp.MustCompile(`(?:^|[^\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\s*\(`)
)

// pyImports maps the names a Python file binds by import to what they
// are: pk → pickle, loads → pickle.loads, np → numpy.
func pyImports(text string) map[string]string {
	names := map[string]string{}
	for _, m := range pyImport.FindAllStringSubmatch(text, -1) {
		for _, part := range strings.Split(m[1], ",") {
			f := strings.Fields(part)
			switch {
			case len(f) == 3 && f[1] == "as":
				names[f[2]] = f[0]
			case len(f) == 1:
				names[f[0]] = f[0]
			}
		}
	}
	for _, m := range pyFromImport.FindAllStringSubmatch(text, -1) {
		for _, part := range strings.Split(m[2], ",") {
			f := strings.Fields(part)
			switch {
			case len(f) == 3 && f[1] == "as":
				names[f[2]] = m[1] + "." + f[0]
			case len(f) == 1:
				names[f[0]] = m[1] + "." + f[0]
			}
		}
	}
	names["np"] = cmpOr(names["np"], "numpy")
	names["pd"] = cmpOr(names["pd"], "pandas")
	return names
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pyResolve is a dotted name with its first part resolved by imports.
func pyResolve(name string, imports map[string]string) string {
	head, rest, dotted := strings.Cut(name, ".")
	if full, ok := imports[head]; ok {
		head = full
	}
	if dotted {
		return head + "." + rest
	}
	return head
}

// pyDeserialization reports Python's unsafe loaders, imports resolved, of
// data that is not a constant.
func (c *codeScan) pyDeserialization() {
	if !c.hasAny("pickle", "marshal", "yaml", "shelve", "joblib", "torch", "numpy", "dill", "pandas", "read_pickle") {
		return
	}
	imports := pyImports(c.s.text)
	c.calls(pyCall, func(off int, name string, args []piece, _ int) {
		full := pyResolve(name, imports)
		d, ok := pyDeserializers[full]
		if !ok {
			return
		}
		sk := skeleton(args)
		if d.unless != nil && d.unless.MatchString(sk) || d.needs != nil && !d.needs.MatchString(sk) {
			return
		}
		if first := trimPieces(argPieces(args)[0]); len(first) == 1 && first[0].lit && !first[0].interp {
			return // a constant: yaml.load("a: 1"), pickle.loads(b"…")
		}
		c.report(off, "unsafe-deserialization", sdk.SeverityError, full+" "+d.msg)
	})
}

var (
	// weakHashValue is a weak hash's call, in any language.
	weakHashValue = regexp.MustCompile(`(?i)\b(?:hashlib\.(?:md5|sha1)|(?:md5|sha1)\.(?:Sum|New)|hashes\.(?:MD5|SHA1)|DigestUtils\.(?:md5|sha1)\w*|createHash\(\s*["'](?:md5|sha1)["'])\s*\(?|\bhashlib\.new\(\s*["'](?:md5|sha1)["']`)
	// passwordSink is a call whose name says it takes a password.
	passwordSink = regexp.MustCompile(`(?:^|[^\w$])((?:[\w$]+\.)*[\w$]*(?i:pass(?:word|wd))[\w$]*)\s*\(`)
)

// weakHashToPassword: a weak hash's value passed to a call that takes a
// password (user.set_password(md5(text).hexdigest()), or a variable
// assigned one).
func (c *codeScan) weakHashToPassword() {
	if !c.hasAny("md5", "sha1") {
		return
	}
	c.calls(passwordSink, func(off int, name string, args []piece, _ int) {
		code := codeOf(args)
		if weakHashValue.MatchString(code) {
			c.report(off, "weak-hash", sdk.SeverityWarning, name+" is given an MD5 or SHA-1 hash (use bcrypt, scrypt or Argon2)")
			return
		}
		for _, id := range identRe.FindAllString(code, -1) {
			a, ok := c.lookup(id, off)
			if !ok || !weakHashValue.MatchString(c.statement(a.off)) {
				continue
			}
			if !c.seen[lineRule(a.line, "weak-hash")] {
				c.report(off, "weak-hash", sdk.SeverityWarning, name+" is given an MD5 or SHA-1 hash ("+id+", line "+itoa(a.line)+"; use bcrypt, scrypt or Argon2)")
			}
			return
		}
	})
}
