package repo_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// benchRepo generates a repository of n files of mixed languages (Go,
// Python, JavaScript, TypeScript, YAML, Markdown, shell), about 60 lines
// each, a few with insecure code or a secret-like assignment.
func benchRepo(n int) []*repo.File {
	bodies := map[string]func(i int) string{
		".go": func(i int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "package p%d\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n)\n\n", i)
			for k := 0; k < 8; k++ {
				fmt.Fprintf(&b, "func f%d(db *sql.DB, id string) error {\n\tq := fmt.Sprintf(\"SELECT * FROM t%d WHERE id = $1\")\n\t_, err := db.Query(q, id)\n\treturn err\n}\n\n", k, k)
			}
			if i%50 == 0 {
				b.WriteString("func bad(db *sql.DB, id string) { db.Query(\"SELECT * FROM t WHERE id = \" + id) }\n")
			}
			return b.String()
		},
		".py": func(i int) string {
			var b strings.Builder
			b.WriteString("import os\nimport hashlib\n\n")
			for k := 0; k < 8; k++ {
				fmt.Fprintf(&b, "def f%d(cur, name):\n    cur.execute(\"SELECT * FROM t WHERE name = %%s\", (name,))\n    h = hashlib.sha256(name.encode())\n    return h.hexdigest()\n\n\n", k)
			}
			if i%50 == 0 {
				b.WriteString("def bad(cmd):\n    os.system(\"ls \" + cmd)\n")
			}
			return b.String()
		},
		".js": func(i int) string {
			var b strings.Builder
			b.WriteString("const db = require(\"./db\");\n\n")
			for k := 0; k < 8; k++ {
				fmt.Fprintf(&b, "async function f%d(req, res) {\n  const rows = await db.query(\"SELECT * FROM t WHERE id = ?\", [req.query.id]);\n  res.json(rows);\n}\n\n", k)
			}
			if i%50 == 0 {
				b.WriteString("function bad(req) { return eval(req.body.code); }\n")
			}
			return b.String()
		},
		".ts": func(i int) string {
			return strings.Repeat("export function add(a: number, b: number): number {\n  return a + b;\n}\n\n", 12)
		},
		".yaml": func(i int) string {
			return strings.Repeat("service:\n  name: web\n  replicas: 3\n  image: nginx:1.27\n", 12)
		},
		".md": func(i int) string {
			return strings.Repeat("# Title\n\nSome text about the project, with `code` and a [link](https://example.com).\n\n", 12)
		},
		".sh": func(i int) string {
			return strings.Repeat("#!/bin/sh\nset -eu\necho \"building $1\"\nmake -C src all\n", 12)
		},
	}
	exts := []string{".go", ".py", ".js", ".ts", ".yaml", ".md", ".sh"}
	files := make([]*repo.File, n)
	for i := range files {
		ext := exts[i%len(exts)]
		p := fmt.Sprintf("src/d%d/f%d%s", i/100, i, ext)
		data := []byte(bodies[ext](i))
		files[i] = &repo.File{Path: p, Size: int64(len(data)), Language: repo.Language(p), Data: data}
	}
	return files
}

// BenchmarkSAST10k reviews a generated repository of 10,000 files with
// repo-sast's analysis (secrets and insecure code), natively:
// `go test -run ^$ -bench SAST10k -benchtime 3x ./modules/internal/repo/`.
func BenchmarkSAST10k(b *testing.B) {
	files := benchRepo(10000)
	var bytes int64
	for _, f := range files {
		bytes += f.Size
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	findings := 0
	for b.Loop() {
		findings = 0
		for _, f := range files {
			findings += len(repo.SAST(f))
		}
	}
	b.ReportMetric(float64(findings), "findings")
	b.ReportMetric(float64(len(files))*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}
