package docs

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write docs/METRICS.md from the code")

// metric is a Prometheus metric Ward's code registers.
type metric struct {
	name, kind, help, file string
	labels                 []string
}

// metricsOf reads every metric the code defines: each composite literal of
// a prometheus *Opts type with a Name of Ward's, the kind its type names,
// and the label names of the vector constructor it is given to.
func metricsOf(t *testing.T) []metric {
	t.Helper()
	var out []metric
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == "bench" || rel == "bin" || rel == "modules" || rel == "internal/loadgen") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		seen := map[*ast.CompositeLit]bool{}
		add := func(lit *ast.CompositeLit, labels []string) {
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") || seen[lit] {
				return
			}
			m := metric{kind: strings.ToLower(strings.TrimSuffix(sel.Sel.Name, "Opts")), labels: labels, file: filepath.ToSlash(rel)}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch key := kv.Key.(*ast.Ident); {
				case key == nil:
				case key.Name == "Name":
					m.name = stringOf(kv.Value)
				case key.Name == "Help":
					m.help = stringOf(kv.Value)
				}
			}
			if strings.HasPrefix(m.name, "ward_") {
				seen[lit] = true
				out = append(out, m)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
				if lit, ok := call.Args[0].(*ast.CompositeLit); ok {
					var labels []string
					if len(call.Args) > 1 {
						if ls, ok := call.Args[1].(*ast.CompositeLit); ok {
							for _, e := range ls.Elts {
								labels = append(labels, stringOf(e))
							}
						}
					}
					add(lit, labels)
				}
			}
			if lit, ok := n.(*ast.CompositeLit); ok {
				add(lit, nil)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b metric) int { return strings.Compare(a.name, b.name) })
	return out
}

// stringOf evaluates a string literal, or a sum of them; "" otherwise.
func stringOf(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(v.Value); err == nil {
			return s
		}
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			return stringOf(v.X) + stringOf(v.Y)
		}
	case *ast.ParenExpr:
		return stringOf(v.X)
	}
	return ""
}

// metricsDoc renders docs/METRICS.md.
func metricsDoc(ms []metric) string {
	var b strings.Builder
	b.WriteString(`# Metrics

Every Prometheus metric Ward's processes export, on ` + "`/metrics`" + ` at
` + "`--metrics`" + ` (the gateway's at its own address). This page is generated
from the code: ` + "`go test ./internal/testing/docs -run TestMetricsDoc -update`" + `
writes it, and the test fails when the code and the page differ. The
prefix names the part: ` + "`ward_scheduler_`, `ward_safety_`, `ward_host_`, `ward_bus_`" + ` (every
process's NATS connection), ` + "`ward_jobstore_`" + ` (the in-memory store and the logged store),
` + "`ward_gateway_`" + `.

| metric | type | labels | help (the code's) | defined in |
|---|---|---|---|---|
`)
	for _, m := range ms {
		labels := "—"
		if len(m.labels) > 0 {
			labels = "`" + strings.Join(m.labels, "`, `") + "`"
		}
		help := strings.ReplaceAll(m.help, "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | `%s` |\n", m.name, m.kind, labels, help, m.file)
	}
	return b.String()
}

// TestMetricsDoc: docs/METRICS.md lists every metric the code defines,
// as the code defines it (its type, labels and help), and nothing else.
func TestMetricsDoc(t *testing.T) {
	ms := metricsOf(t)
	if len(ms) < 40 {
		t.Fatalf("found %d metrics: the walk missed the code", len(ms))
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].name == ms[i-1].name {
			t.Errorf("metric %s is defined twice: %s and %s", ms[i].name, ms[i-1].file, ms[i].file)
		}
	}
	for _, m := range ms {
		if m.help == "" {
			t.Errorf("%s (%s) has no help text the page can show", m.name, m.file)
		}
	}
	want := metricsDoc(ms)
	path := filepath.Join(root, "docs/METRICS.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: go test ./internal/testing/docs -run TestMetricsDoc -update writes it", err)
	}
	if string(got) != want {
		t.Errorf("docs/METRICS.md differs from the metrics the code defines: go test ./internal/testing/docs -run TestMetricsDoc -update writes it anew")
	}
}
