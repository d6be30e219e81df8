package repo_test

import (
	"os"
	"path/filepath"
	"strconv"
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

// TestPythonBashOperatorWhereBuilt: a BashOperator's command formatted on
// an earlier line is reported there, once, naming the operator's line; a
// query is reported at the call that runs it.
func TestPythonBashOperatorWhereBuilt(t *testing.T) {
	src := `import requests
from airflow.operators.bash import BashOperator

howlong = requests.get("https://example.com/howlong").text
command = "sleep {}".format(howlong)
t2 = BashOperator(
    task_id="sleep",
    bash_command=command,
)

def q(cur, name):
    sql = "SELECT * FROM t WHERE a = '%s'" % name
    cur.execute(sql)
`
	f := &repo.File{Path: "dag.py", Language: "Python", Data: []byte(src), Size: int64(len(src))}
	got := map[string]string{}
	for _, fd := range repo.SAST(f) {
		got[fd.Rule+":"+strconv.Itoa(fd.Line)] = fd.Message
	}
	if len(got) != 2 || !strings.Contains(got["shell-injection:5"], "BashOperator on line 6") || got["sql-injection:13"] == "" {
		t.Errorf("findings %v, want shell-injection on line 5 (naming line 6) and sql-injection on line 13", got)
	}
}
