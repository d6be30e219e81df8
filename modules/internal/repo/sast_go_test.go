package repo_test

import (
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// TestGoShapes: Go the syntax-tree checks meet everywhere (composite
// literals whose type is elided, methods, programs named by a package's
// variable) are read without a panic, and a program named by a
// parameter is reported where one named by a package's variable is not.
func TestGoShapes(t *testing.T) {
	src := `package p

import "os/exec"

var tool = find()

type T struct{ path string }

var table = []struct{ a, b string }{{"x", "y"}, {a: "z"}}
var nested = map[string][]string{"k": {"v"}}

func (t T) run() error { return exec.Command(t.path, "--version").Run() }

func fixed() error { return exec.Command(tool, "check").Run() }

func given(prog string) error { return exec.Command(prog, "x").Run() }
`
	f := &repo.File{Path: "p.go", Language: "Go", Data: []byte(src), Size: int64(len(src))}
	var lines []int
	for _, fd := range repo.SAST(f) {
		if fd.Rule == "shell-injection" {
			lines = append(lines, fd.Line)
		}
	}
	if len(lines) != 1 || lines[0] != 16 {
		t.Errorf("shell-injection on lines %v, want [16] (the parameter's program)", lines)
	}
}

// TestGoSQLWhereBuilt: SQL built from an untrusted value on an earlier
// line (by concatenation, or written to a strings.Builder) is reported
// once, where the value joins it, naming the sink and its line; SQL built
// from values of unknown origin, and SQL built in the call, at the call.
func TestGoSQLWhereBuilt(t *testing.T) {
	src := `package p

import (
	"database/sql"
	"net/http"
	"strings"
)

func h(db *sql.DB, r *http.Request) {
	q := "SELECT * FROM t WHERE a = " + cfgName
	q += " AND b = '" + r.FormValue("b") + "'"
	db.Query(q)
	db.Exec(q)
}

func unknown(db *sql.DB) {
	q := "SELECT * FROM t WHERE a = " + cfgName
	db.Query(q)
	db.Exec("DELETE FROM t WHERE a = " + cfgName)
}

func builder(db *sql.DB, r *http.Request) {
	var sb strings.Builder
	sb.WriteString("SELECT * FROM t WHERE a = ")
	sb.WriteString(r.FormValue("a"))
	q := sb.String()
	db.Query(q)
}

func quoted(db *sql.DB, r *http.Request) {
	name := "'" + r.FormValue("n") + "'"
	q := "SELECT * FROM t WHERE n = " + name
	db.Query(q)
}
`
	f := &repo.File{Path: "p.go", Language: "Go", Data: []byte(src), Size: int64(len(src))}
	got := map[int]string{}
	for _, fd := range repo.SAST(f) {
		if fd.Rule == "sql-injection" {
			got[fd.Line] = fd.Message
		}
	}
	if len(got) != 5 || got[11] == "" || got[18] == "" || got[19] == "" || got[25] == "" || got[32] == "" {
		t.Fatalf("sql-injection on lines %v, want 11 (where the request value joins), 18, 19, 25 (where it is written) and 32 (where the quoted value joins the SQL)", got)
	}
	if want := "is run by db.Query on line 12"; !strings.Contains(got[11], want) {
		t.Errorf("message %q lacks %q", got[11], want)
	}
}
