package repo_test

import (
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
