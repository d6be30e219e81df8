package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ward-run/ward/api/reason"
)

// reasonsDoc holds the one table of reason codes.
const reasonsDoc = "docs/REASONS.md"

// declaredCodes returns the codes api/reason declares, from its source: the
// constants of type Code, each with where it is declared.
func declaredCodes(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join(root, "api/reason")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Code" {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", fset.Position(v.Pos()), vs.Names[i].Name)
					}
					code, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					if prev, ok := codes[code]; ok {
						t.Errorf("%s: code %s is declared twice (first at %s)", fset.Position(lit.Pos()), code, prev)
					}
					codes[code] = fset.Position(lit.Pos()).String()
				}
			}
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found %d codes declared in api/reason: was its source read?", len(codes))
	}
	return codes
}

// TestReasonCodesDocumented: docs/REASONS.md's table has a row for every
// code api/reason declares and no other, and reason.All lists each of
// them once.
func TestReasonCodesDocumented(t *testing.T) {
	declared := declaredCodes(t)
	doc, err := os.ReadFile(filepath.Join(root, reasonsDoc))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{} // code -> rows
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]]++
	}
	for _, c := range sortedKeys(declared) {
		if rows[c] == 0 {
			t.Errorf("%s declares %s, which %s's table does not list", declared[c], c, reasonsDoc)
		}
	}
	for _, r := range sortedKeys(rows) {
		if _, ok := declared[r]; !ok {
			t.Errorf("%s lists %s, which api/reason does not declare", reasonsDoc, r)
		}
		if rows[r] > 1 {
			t.Errorf("%s lists %s %d times", reasonsDoc, r, rows[r])
		}
	}
	all := map[string]bool{}
	for _, c := range reason.All() {
		if all[string(c)] {
			t.Errorf("reason.All lists %s twice", c)
		}
		all[string(c)] = true
		if _, ok := declared[string(c)]; !ok {
			t.Errorf("reason.All lists %s, which api/reason does not declare as a Code constant", c)
		}
	}
	for _, c := range sortedKeys(declared) {
		if !all[c] {
			t.Errorf("%s declares %s, which reason.All does not list", declared[c], c)
		}
	}
}
