// Package docs checks the repository's documentation against the tree and
// the code: every link resolves inside the repository, no document points
// outside it, the configuration table names exactly the environment
// variables the code reads, and the reason-code table exactly the codes
// of api/reason.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
const root = "../../.."

// markdown returns the repository's Markdown files, relative to root.
func markdown(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || d.Name() == "testdata" || rel == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files: is root %s the repository?", len(files), root)
	}
	return files
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan and fence are left out: a path in code is an example.
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// TestLinksResolve: every relative link of every Markdown file names a
// file or folder of the repository (an anchor aside), and none leaves it.
func TestLinksResolve(t *testing.T) {
	for _, f := range markdown(t) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		inFence := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if u, err := url.Parse(target); err == nil && (u.Scheme != "" || strings.HasPrefix(target, "#")) {
					continue // a web address or an anchor of this page
				}
				path, _, _ := strings.Cut(target, "#")
				full := filepath.Join(root, filepath.Dir(f), path)
				rel, err := filepath.Rel(root, full)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: link %q leaves the repository", f, i+1, target)
					continue
				}
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s:%d: link %q: no such file in the repository", f, i+1, target)
				}
			}
		}
	}
}

// TestNoPathOutside: no document, Go source or YAML file names a file
// beside the repository (../shared, the design documents), nor cites a
// design document by its number ("seed 003"): what a reader needs is in
// the repository.
func TestNoPathOutside(t *testing.T) {
	outside := regexp.MustCompile(`\.\./shared\b|shared/seeds|shared/ARCHITECTURE|shared/STYLE|(?i)\bseeds? \d{2,3}\b|\bdesign doc(ument)?s? #?\d+`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || rel == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := outside.FindIndex(data); loc != nil {
			line := 1 + strings.Count(string(data[:loc[0]]), "\n")
			t.Errorf("%s:%d: names a file outside the repository, or a design document: %q", rel, line, data[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// envName is what an environment variable of Ward's looks like.
var envName = regexp.MustCompile(`^(WARD|SAFETY|NATS|REDIS|OLLAMA|POOL|TIMEOUT|SCHEDULER|WORKFLOW|METRICS)_[A-Z0-9_]+$`)

// notConfig are the variables the code reads that are not configuration:
// a test's switches, and names that only look like variables.
var notConfig = map[string]string{
	"WARD_FAILPOINT_FILE": "the fault-injection file of the lattice tests (internal/failpoint)",
	"WARD_TEST_LOG":       "the tests' log switch",
	"WARD_TEST_OUTPUT":    "where the browser tests keep screenshots",
}

// section returns the text of file's section "## name", up to the next
// "## " heading.
func section(t *testing.T, file, name string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	start := strings.Index(s, "\n## "+name+"\n")
	if start < 0 {
		t.Fatalf("%s: no section %q", file, name)
	}
	s = s[start+1:]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	return s
}

// configDoc is the one table of variables and flags, and its section.
const configDoc, configSection = "docs/CONFIGURATION.md", "Environment variables and flags"

// readIndirectly are the variables the table names that the code reads by
// no call of its own with the name: what it is read as instead.
var readIndirectly = map[string]string{
	"OLLAMA_MODEL": "a default of --module-env: the host reads the keys it names and gives them to the jobs granted them",
}

// TestEveryVariableDocumented: the variables the code reads (os.Getenv,
// os.LookupEnv and the command's lookup helpers, with a name of Ward's,
// written out or as a constant)
// and those of the first column of docs/CONFIGURATION.md's table are the
// same: every variable read has a row, and every variable a row names is
// read.
func TestEveryVariableDocumented(t *testing.T) {
	documented := map[string]bool{}
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section(t, configDoc, configSection), "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			if envName.MatchString(m[1]) {
				documented[m[1]] = true
			}
		}
	}
	if len(documented) < 20 {
		t.Fatalf("%s: found %d variables in the table of %q: was it read?", configDoc, len(documented), configSection)
	}
	read := map[string]string{}    // variable -> where it is read
	consts := map[string]string{}  // constant -> the variable it names
	byConst := map[string]string{} // constant read -> where
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == "bench" || rel == "bin" || rel == "modules") {
			return filepath.SkipDir // bench/ has its own module; modules/ are guests
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, v := range vs.Values {
					if name, ok := envLiteral(v); ok && i < len(vs.Names) {
						consts[vs.Names[i].Name] = name
					}
				}
				return true
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !readsEnv(call.Fun) {
				return true
			}
			at := fset.Position(call.Args[0].Pos()).String()
			switch arg := call.Args[0].(type) {
			case *ast.BasicLit:
				if name, ok := envLiteral(arg); ok {
					read[name] = at
				}
			case *ast.Ident: // a constant: os.Getenv(EnvPoolConfig)
				byConst[arg.Name] = at
			case *ast.SelectorExpr: // another package's: os.Getenv(config.EnvPoolConfig)
				byConst[arg.Sel.Name] = at
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for c, at := range byConst {
		if name, ok := consts[c]; ok {
			read[name] = at
		}
	}
	if len(read) < 20 {
		t.Fatalf("found %d variables read: the walk missed the code", len(read))
	}
	for _, n := range sortedKeys(read) {
		if _, ok := notConfig[n]; ok {
			if documented[n] {
				t.Errorf("%s lists $%s, which is not configuration: %s", configDoc, n, notConfig[n])
			}
			continue
		}
		if !documented[n] {
			t.Errorf("%s reads $%s, which %s's table does not list", read[n], n, configDoc)
		}
	}
	for _, n := range sortedKeys(documented) {
		if _, ok := read[n]; !ok && readIndirectly[n] == "" {
			t.Errorf("%s lists $%s, which no code reads", configDoc, n)
		}
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// envLiteral returns the variable a string literal names, if it is one
// of Ward's.
func envLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	name, err := strconv.Unquote(lit.Value)
	return name, err == nil && envName.MatchString(name)
}

// readsEnv reports whether fun is a call that reads an environment
// variable by its first argument.
func readsEnv(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name == "Getenv" || f.Sel.Name == "LookupEnv"
	case *ast.Ident:
		return strings.HasPrefix(f.Name, "lookupEnv") || strings.HasPrefix(f.Name, "env")
	}
	return false
}
