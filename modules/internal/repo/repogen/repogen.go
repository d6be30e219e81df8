// Package repogen generates repositories of mixed languages for the repo
// modules' benchmarks: BenchmarkSAST10k reviews Files(10000) natively,
// `make bench-review` writes Realistic(10000) to a directory (genrepo) and
// reviews it with the repo.code_review workflow.
package repogen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is one generated file: its path in the repository and its bytes.
type File struct {
	Path string
	Data []byte
}

// Exts are the extensions the files get, in turn: Go, Python, JavaScript,
// TypeScript, YAML, Markdown, shell.
var Exts = []string{".go", ".py", ".js", ".ts", ".yaml", ".md", ".sh"}

// body writes file i of extension ext with its content repeated reps
// times (reps = 1: about 60 lines); one Go, Python and JavaScript file in
// 50 has insecure code (SQL built by concatenation, os.system of a built
// command, eval of the request).
func body(ext string, i, reps int) string {
	var b strings.Builder
	switch ext {
	case ".go":
		fmt.Fprintf(&b, "package p%d\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n)\n\n", i)
		for k := 0; k < 8*reps; k++ {
			fmt.Fprintf(&b, "func f%d(db *sql.DB, id string) error {\n\tq := fmt.Sprintf(\"SELECT * FROM t%d WHERE id = $1\")\n\t_, err := db.Query(q, id)\n\treturn err\n}\n\n", k, k)
		}
		if i%50 == 0 {
			b.WriteString("func bad(db *sql.DB, id string) { db.Query(\"SELECT * FROM t WHERE id = \" + id) }\n")
		}
	case ".py":
		b.WriteString("import os\nimport hashlib\n\n")
		for k := 0; k < 8*reps; k++ {
			fmt.Fprintf(&b, "def f%d(cur, name):\n    cur.execute(\"SELECT * FROM t WHERE name = %%s\", (name,))\n    h = hashlib.sha256(name.encode())\n    return h.hexdigest()\n\n\n", k)
		}
		if i%50 == 0 {
			b.WriteString("def bad(cmd):\n    os.system(\"ls \" + cmd)\n")
		}
	case ".js":
		b.WriteString("const db = require(\"./db\");\n\n")
		for k := 0; k < 8*reps; k++ {
			fmt.Fprintf(&b, "async function f%d(req, res) {\n  const rows = await db.query(\"SELECT * FROM t WHERE id = ?\", [req.query.id]);\n  res.json(rows);\n}\n\n", k)
		}
		if i%50 == 0 {
			b.WriteString("function bad(req) { return eval(req.body.code); }\n")
		}
	case ".ts":
		b.WriteString(strings.Repeat("export function add(a: number, b: number): number {\n  return a + b;\n}\n\n", 12*reps))
	case ".yaml":
		b.WriteString(strings.Repeat("service:\n  name: web\n  replicas: 3\n  image: nginx:1.27\n", 12*reps))
	case ".md":
		b.WriteString(strings.Repeat("# Title\n\nSome text about the project, with `code` and a [link](https://example.com).\n\n", 12*reps))
	case ".sh":
		b.WriteString(strings.Repeat("#!/bin/sh\nset -eu\necho \"building $1\"\nmake -C src all\n", 12*reps))
	}
	return b.String()
}

// Files returns n files of the extensions in Exts in turn, about 60 lines
// each, in directories of 100 (src/d<i/100>/f<i><ext>).
func Files(n int) []File {
	files := make([]File, n)
	for i := range files {
		ext := Exts[i%len(Exts)]
		files[i] = File{Path: fmt.Sprintf("src/d%d/f%d%s", i/100, i, ext), Data: []byte(body(ext, i, 1))}
	}
	return files
}

// sizes are the multiples of Files' sizes that Realistic's files get, in
// turn: most files small, one in 16 eight times larger, one in 32 sixteen
// times (1.3–80 KiB; mean about 3.2 times Files', near the mean of the
// source files of a typical repository).
var sizes = []int{1, 1, 2, 1, 1, 3, 1, 8, 1, 2, 1, 1, 4, 1, 2, 16, 1, 1, 2, 1, 1, 3, 1, 8, 1, 2, 1, 1, 4, 1, 2, 1}

// Realistic returns n files like Files' with sizes that vary (sizes) and,
// in one YAML file in 100 and one shell file in 100, a hard-coded secret:
// an AWS access key id and a GitHub token (made up, of their formats).
// Its findings: one per insecure file and one per secret.
func Realistic(n int) []File {
	files := make([]File, n)
	for i := range files {
		ext := Exts[i%len(Exts)]
		text := body(ext, i, sizes[i%len(sizes)])
		switch {
		case ext == ".yaml" && i%100 == 4:
			text += fmt.Sprintf("aws:\n  access_key_id: AKIA%s\n", token(i, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"))
		case ext == ".sh" && i%100 == 6:
			text += fmt.Sprintf("export GITHUB_TOKEN=ghp_%s\n", token(i, 36, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
		}
		if ext == ".go" {
			text = strings.TrimRight(text, "\n") + "\n" // gofmt's form: one final newline
		}
		files[i] = File{Path: fmt.Sprintf("src/d%d/f%d%s", i/100, i, ext), Data: []byte(text)}
	}
	return files
}

// token is n characters of alphabet, made up from seed (a linear
// congruential generator: the same seed, the same token).
func token(seed, n int, alphabet string) string {
	x := uint64(seed)*2862933555777941757 + 3037000493
	b := make([]byte, n)
	for i := range b {
		x = x*6364136223846793005 + 1442695040888963407
		b[i] = alphabet[(x>>33)%uint64(len(alphabet))]
	}
	return string(b)
}

// Write writes files under dir, making the directories they need.
func Write(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
