package repo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/modules/internal/repo"
)

// TestJavaScriptDeep: deep nesting and long chains neither crash nor
// stall the JavaScript analysis, and a sink after them is still reported:
// on the syntax tree when the nesting is one a parser follows, by the
// line rules past it.
func TestJavaScriptDeep(t *testing.T) {
	sink := "function h(cmd) { cp.exec('ls ' + cmd); }\n"
	long := "const cp = require('child_process');\n" +
		"let x = " + strings.Repeat("(", 400) + "a" + strings.Repeat(")", 400) + ";\n" +
		"let z = " + strings.Repeat("a + ", 200000) + "a;\n" +
		"let w = `" + strings.Repeat("${a}", 10000) + "`;\n" +
		"let v = " + strings.Repeat("[a, ", 400) + strings.Repeat("]", 400) + ";\n" +
		"let u = " + strings.Repeat("f(a).", 20000) + "g;\n" + sink
	deep := "const cp = require('child_process');\n" +
		"let x = " + strings.Repeat("(", 100000) + "a" + strings.Repeat(")", 100000) + ";\n" +
		"let y = " + strings.Repeat("-", 100000) + "a;\n" +
		"let v = " + strings.Repeat("[", 50000) + strings.Repeat("]", 50000) + ";\n" +
		"let n = 1;\nlet m = 2;\n" + sink
	for k, src := range []string{long, deep} {
		for _, name := range []string{"deep.js", "deep.ts"} {
			f := &repo.File{Path: name, Language: repo.Language(name), Data: []byte(src), Size: int64(len(src))}
			start := time.Now()
			found := false
			for _, fd := range repo.SAST(f) {
				// the long one on the syntax tree (its message names the parameter)
				found = found || fd.Rule == "shell-injection" && fd.Line == 7 && (k == 1 || strings.Contains(fd.Message, "parameter"))
			}
			if !found {
				t.Errorf("%s: exec after the deep expressions not reported", name)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("%s: %v", name, d)
			}
		}
	}
}

// FuzzSASTJavaScript runs the JavaScript and TypeScript analyses on
// anything: they must not panic or hang.
func FuzzSASTJavaScript(f *testing.F) {
	for _, glob := range []string{"testdata/code/*_js.*", "testdata/code/*.ts", "testdata/semgrep/javascript/*/security/*.js"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(string(data))
			}
		}
	}
	f.Add("class A<T> { @d() x?: T; m(a: T): void; m(a) { return `${a}` as any!; } }")
	f.Fuzz(func(t *testing.T, src string) {
		for _, name := range []string{"f.js", "f.ts"} {
			repo.SAST(&repo.File{Path: name, Language: repo.Language(name), Data: []byte(src), Size: int64(len(src))})
		}
	})
}
