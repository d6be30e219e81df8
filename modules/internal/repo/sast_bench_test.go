package repo_test

import (
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/internal/repo/repogen"
)

// benchRepo is repogen's repository of n files of mixed languages (Go,
// Python, JavaScript, TypeScript, YAML, Markdown, shell), about 60 lines
// each, one Go, Python and JavaScript file in 50 with insecure code.
func benchRepo(n int) []*repo.File {
	files := make([]*repo.File, n)
	for i, g := range repogen.Files(n) {
		files[i] = &repo.File{Path: g.Path, Size: int64(len(g.Data)), Language: repo.Language(g.Path), Data: g.Data}
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
