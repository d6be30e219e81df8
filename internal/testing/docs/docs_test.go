// Package docs checks the repository's documentation against the tree and
// the code: every link resolves inside the repository, no document points
// outside it, and the configuration table names every environment
// variable the code reads.
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

// TestNoPathOutside: no document or Go source names a file beside the
// repository (../shared, the design documents): what a reader needs is
// in the repository.
func TestNoPathOutside(t *testing.T) {
	outside := regexp.MustCompile(`\.\./shared\b|shared/seeds|shared/ARCHITECTURE|shared/STYLE`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || rel == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := outside.FindIndex(data); loc != nil {
			line := 1 + strings.Count(string(data[:loc[0]]), "\n")
			t.Errorf("%s:%d: names a file outside the repository: %q", rel, line, data[loc[0]:loc[1]])
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

// TestEveryVariableDocumented: every environment variable the code reads
// (os.Getenv, os.LookupEnv and the command's lookup helpers, with a name
// of Ward's) is in the Configuration sections of docs/ARCHITECTURE.md and
// README.md.
func TestEveryVariableDocumented(t *testing.T) {
	sections := map[string]string{
		"docs/ARCHITECTURE.md": section(t, "docs/ARCHITECTURE.md", "Configuration"),
		"README.md":            section(t, "README.md", "Configuration"),
	}
	read := map[string]string{} // variable -> where it is read
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
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !readsEnv(call.Fun) {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err == nil && envName.MatchString(name) {
				read[name] = fset.Position(lit.Pos()).String()
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) < 20 {
		t.Fatalf("found %d variables read: the walk missed the code", len(read))
	}
	names := make([]string, 0, len(read))
	for n := range read {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, ok := notConfig[n]; ok {
			continue
		}
		for file, text := range sections {
			if !strings.Contains(text, "`"+n+"`") {
				t.Errorf("%s reads $%s, which %s's Configuration does not list", read[n], n, file)
			}
		}
	}
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
