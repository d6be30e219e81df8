package repo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// TestPythonDeep: nesting and chains far past what code holds neither
// exhaust the stack nor hide the sink after them.
func TestPythonDeep(t *testing.T) {
	src := "import os\n" +
		"x = " + strings.Repeat("(", 100000) + "a" + strings.Repeat(")", 100000) + "\n" +
		"y = " + strings.Repeat("-", 100000) + "a\n" +
		"z = " + strings.Repeat("a + ", 200000) + "a\n" +
		"w = f\"" + strings.Repeat("{a}", 10000) + "\"\n" +
		"def h(cmd):\n    os.system(\"ls \" + cmd)\n"
	f := &repo.File{Path: "deep.py", Language: "Python", Data: []byte(src), Size: int64(len(src))}
	found := false
	for _, fd := range repo.SAST(f) {
		found = found || fd.Rule == "shell-injection" && fd.Line == 7
	}
	if !found {
		t.Error("os.system after the deep expressions not reported")
	}
}

// FuzzSASTPython runs the Python analysis on anything: it must not
// panic or hang.
func FuzzSASTPython(f *testing.F) {
	for _, dir := range []string{"testdata/code", "testdata/semgrep/python/lang/security"} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.py"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(string(data))
			}
		}
	}
	f.Add("f'{a!r:>{w}}' + b'x' rb'''y''' \\\n x = [i for i in y if i] ; del x")
	f.Fuzz(func(t *testing.T, src string) {
		repo.SAST(&repo.File{Path: "f.py", Language: "Python", Data: []byte(src), Size: int64(len(src))})
	})
}
