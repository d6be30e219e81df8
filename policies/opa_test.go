package policies_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// regoFiles reads every .rego file of the bundle directory (this one), by
// name.
func regoFiles(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob("*.rego")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no .rego file in policies/")
	}
	files := map[string][]byte{}
	for _, name := range names {
		bs, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = bs
	}
	return files
}

// TestOPAFormat: every .rego file is as `opa fmt` writes it, so that
// `opa fmt -l policies/` lists nothing. The failure says how to fix it:
// `go run github.com/open-policy-agent/opa@<version in go.mod> fmt -w policies/`.
func TestOPAFormat(t *testing.T) {
	for name, src := range regoFiles(t) {
		// opa fmt's defaults: Rego v1, the capabilities of this version.
		out, err := format.SourceWithOpts(name, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(out, src) {
			t.Errorf("%s is not formatted as `opa fmt` writes it (first difference at line %d); run `go run github.com/open-policy-agent/opa@%s fmt -w policies/`",
				name, firstDiffLine(src, out), opaVersion())
		}
	}
}

// opaVersion is the version of OPA that go.mod requires.
func opaVersion() string {
	mod, _ := os.ReadFile("../go.mod")
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/open-policy-agent/opa" {
			return f[1]
		}
	}
	return "latest"
}

// firstDiffLine returns the 1-based line where a and b first differ.
func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestOPACheckStrict: the bundle, tests included, compiles in OPA's strict
// mode (no unused variables, imports or arguments, no deprecated
// built-ins...), as `opa check --strict policies/` compiles it.
func TestOPACheckStrict(t *testing.T) {
	mods := map[string]*ast.Module{}
	for name, src := range regoFiles(t) {
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			t.Fatal(err)
		}
		mods[name] = m
	}
	c := ast.NewCompiler().
		WithDefaultRegoVersion(ast.RegoV1).
		WithEnablePrintStatements(true).
		WithUseTypeCheckAnnotations(true).
		WithStrict(true)
	if c.Compile(mods); c.Failed() {
		t.Fatalf("opa check --strict: %v", c.Errors)
	}
}

// TestOPATest runs the Rego tests with OPA's own test runner and loader, as
// `opa test policies/` does: data.yaml is the data document.
func TestOPATest(t *testing.T) {
	res, err := loader.NewFileLoader().WithRegoVersion(ast.RegoV1).WithProcessAnnotation(true).All([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]*ast.Module{}
	for _, f := range res.Modules {
		mods[f.Name] = f.Parsed
	}
	ch, err := tester.NewRunner().
		SetStore(inmem.NewFromObject(res.Documents)).
		SetDefaultRegoVersion(ast.RegoV1).
		CapturePrintOutput(true).
		SetModules(mods).
		RunTests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for r := range ch {
		names = append(names, r.Name)
		if !r.Pass() {
			t.Errorf("%s.%s: %s%s", r.Package, r.Name, r, r.Output)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "test_") }) {
		t.Fatal("opa test found no test")
	}
	t.Logf("%d Rego tests", len(names))
}
