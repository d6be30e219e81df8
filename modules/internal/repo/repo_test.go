package repo_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"go/format"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

// inputs are the two ways a repository reaches a module.
func inputs(t *testing.T, extra string) map[string]struct {
	in   []byte
	opts []sdk.LocalOption
} {
	tree := repotest.Tree(t)
	req := `{"dir": "` + tree + `"` + extra + `}`
	head := "{}"
	if extra != "" {
		head = "{" + strings.TrimPrefix(extra, ",") + "}"
	}
	return map[string]struct {
		in   []byte
		opts []sdk.LocalOption
	}{
		"archive":      {in: repotest.Archive(t, tree)},
		"json+archive": {in: append([]byte(head+"\n"), repotest.Archive(t, tree)...)},
		"mounted dir":  {in: []byte(req), opts: []sdk.LocalOption{sdk.WithInfo(sdk.Info{Mounts: []string{tree}})}},
	}
}

func run(t *testing.T, h sdk.Handler, in []byte, opts []sdk.LocalOption, v any) {
	t.Helper()
	out, err := sdk.RunLocal(h, in, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func check(tool string, fn func(*sdk.RepoRequest, *repo.File) []sdk.Finding) sdk.Handler {
	return func(j *sdk.Job) error {
		set, err := repo.Check(j, tool, fn)
		if err != nil {
			return err
		}
		return j.WriteJSON(set)
	}
}

func TestLintAndSAST(t *testing.T) {
	lint := check("repo-lint", func(r *sdk.RepoRequest, f *repo.File) []sdk.Finding { return repo.Lint(f, r.MaxLineLength) })
	sast := check("repo-sast", func(_ *sdk.RepoRequest, f *repo.File) []sdk.Finding { return repo.SAST(f) })
	for name, in := range inputs(t, "") {
		t.Run(name, func(t *testing.T) {
			var set sdk.FindingSet
			run(t, lint, in.in, in.opts, &set)
			if got := repotest.Keys(set.Findings); !slices.Equal(got, repotest.LintFindings) {
				t.Errorf("lint findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(repotest.LintFindings, "\n"))
			}
			if set.FilesChecked != 11 { // every file but the binary one
				t.Errorf("lint checked %d files", set.FilesChecked)
			}
			run(t, sast, in.in, in.opts, &set)
			if got := repotest.Keys(set.Findings); !slices.Equal(got, repotest.SASTFindings) {
				t.Errorf("sast findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(repotest.SASTFindings, "\n"))
			}
			for _, f := range set.Findings {
				for _, secret := range repotest.Secrets {
					if strings.Contains(f.Message, secret) || strings.Contains(f.Excerpt, secret) {
						t.Errorf("a finding shows the secret: %q, %q", f.Message, f.Excerpt)
					}
				}
			}
		})
	}
}

func TestFilesOption(t *testing.T) {
	lint := check("repo-lint", func(r *sdk.RepoRequest, f *repo.File) []sdk.Finding { return repo.Lint(f, r.MaxLineLength) })
	var set sdk.FindingSet
	in := []byte(`{"files": ["docs/long.txt", "README.md"], "max_line_length": 200}` + "\n")
	run(t, lint, append(in, repotest.Archive(t, repotest.Tree(t))...), nil, &set)
	if got := repotest.Keys(set.Findings); !slices.Equal(got, []string{"README.md:3 trailing-whitespace"}) || set.FilesChecked != 2 {
		t.Fatalf("%v, %d files", got, set.FilesChecked)
	}
}

func TestScanAndPartition(t *testing.T) {
	for name, in := range inputs(t, "") {
		t.Run(name, func(t *testing.T) {
			var scan sdk.ScanResult
			run(t, func(j *sdk.Job) error {
				_, src, err := repo.Open(j)
				if err != nil {
					return err
				}
				var s repo.Scanner
				if err := src.Walk(func(f *repo.File) error { s.Add(f); return nil }); err != nil {
					return err
				}
				return j.WriteJSON(s.Result(src.Skipped()))
			}, in.in, in.opts, &scan)
			if scan.TotalFiles != 12 || len(scan.Files) != 12 {
				t.Fatalf("%d files: %+v", scan.TotalFiles, scan.Files)
			}
			if g := scan.Languages["Go"]; g.Files != 3 || g.Lines == 0 {
				t.Errorf("Go: %+v", g)
			}
			for _, f := range scan.Files {
				if (f.Path == "assets/logo.bin") != f.Binary {
					t.Errorf("%s: binary %v", f.Path, f.Binary)
				}
			}
			p := repo.Partition(scan.Files, 4, 0)
			if len(p.Batches) != 3 || len(p.Batches[0].Files) != 4 || len(p.Batches[2].Files) != 4 || p.TotalFiles != 12 {
				t.Fatalf("partition %+v", p)
			}
		})
	}
}

func TestReport(t *testing.T) {
	lint := sdk.FindingSet{Tool: "repo-lint", FilesChecked: 3, Findings: []sdk.Finding{
		{File: "b.go", Line: 2, Rule: "gofmt", Severity: sdk.SeverityWarning, Message: "not | formatted"},
		{File: "a.go", Line: 9, Rule: "go-parse", Severity: sdk.SeverityError, Message: "expected ')'"},
	}}
	sast := sdk.FindingSet{Tool: "repo-sast", FilesChecked: 3, Findings: []sdk.Finding{
		{File: "a.go", Line: 1, Rule: "weak-hash", Severity: sdk.SeverityWarning, Message: "weak hash"},
		{File: "a.go", Line: 9, Rule: "go-parse", Severity: sdk.SeverityError, Message: "expected ')'"}, // a duplicate
	}}
	rep := repo.NewReport(0, []sdk.FindingSet{lint, sast})
	if got := repotest.Keys(rep.Findings); len(got) != 3 || rep.Findings[0].Rule != "go-parse" {
		t.Fatalf("findings %v", got)
	}
	s := rep.Summary
	if s.Findings != 3 || s.Files != 3 || s.BySeverity["warning"] != 2 || s.ByRule["gofmt"] != 1 || !slices.Equal(s.Tools, []string{"repo-lint", "repo-sast"}) {
		t.Fatalf("summary %+v", s)
	}
	for _, want := range []string{"**3 findings** in 3 files", "| error | 1 |", "| error | `a.go:9` | go-parse | expected ')' |", `not \| formatted`} {
		if !strings.Contains(rep.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, rep.Markdown)
		}
	}
}

// TestReportOfBatches checks that a report merged from a workflow's
// batches counts the files every batch of a tool checked, not one batch's.
func TestReportOfBatches(t *testing.T) {
	var sets []sdk.FindingSet
	for range 3 {
		sets = append(sets, sdk.FindingSet{Tool: "repo-lint", FilesChecked: 50}, sdk.FindingSet{Tool: "repo-sast", FilesChecked: 50})
	}
	sets = append(sets, sdk.FindingSet{Tool: "repo-lint", FilesChecked: 7}, sdk.FindingSet{Tool: "repo-sast", FilesChecked: 7})
	if rep := repo.NewReport(0, sets); rep.Summary.Files != 157 || !strings.Contains(rep.Markdown, "in 157 files") {
		t.Fatalf("summary %+v, markdown:\n%s", rep.Summary, rep.Markdown)
	}
}

func TestOpenErrors(t *testing.T) {
	open := func(j *sdk.Job) error {
		_, src, err := repo.Open(j)
		if err == nil && src != nil {
			err = src.Walk(func(*repo.File) error { return nil })
		}
		if err == nil && src == nil {
			err = repo.ErrNoRepository
		}
		return err
	}
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"empty":       {"", "empty input"},
		"bad JSON":    {"{nope", "repo request"},
		"no repo":     {"{}", "no repository"},
		"not mounted": {`{"dir": "/etc"}`, "is not mounted"},
		"not tar":     {"hello", "archive"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sdk.RunLocal(open, []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
			// An input no attempt can read is refused (input_refused, not
			// retried); a request with no repository is the module's own
			// error, for repo-report may merge results alone.
			if refused := name != "no repo"; sdk.IsRefused(err) != refused {
				t.Errorf("refused: %v, want %v (%v)", sdk.IsRefused(err), refused, err)
			}
		})
	}
}

// TestArchiveNames: names that leave the repository, links and .git are
// skipped; the rest is read.
func TestArchiveNames(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "../escape.txt", Typeflag: tar.TypeReg, Size: 1},
		{Name: "/abs/ok.txt", Typeflag: tar.TypeReg, Size: 1},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		{Name: ".git/config", Typeflag: tar.TypeReg, Size: 1},
		{Name: "dir/", Typeflag: tar.TypeDir},
	} {
		h.Mode = 0o644
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write([]byte("x"))
		}
	}
	_ = tw.Close()
	var seen []string
	var skipped []string
	_, err := sdk.RunLocal(func(j *sdk.Job) error {
		_, src, err := repo.Open(j)
		if err != nil {
			return err
		}
		err = src.Walk(func(f *repo.File) error { seen = append(seen, f.Path); return nil })
		skipped = src.Skipped()
		return err
	}, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"abs/ok.txt"}) || len(skipped) != 2 {
		t.Fatalf("seen %v, skipped %v", seen, skipped)
	}
}

// TestFilesOptionBatches checks that batches of a mounted directory (its
// files read alone, without walking the tree) find what batches of the
// archive find, and together what the whole repository has; and that a
// batch naming what the whole walk passes over (a symbolic link, a file
// under one, version-control metadata, a name out of the repository, a
// directory, a missing file) reads none of it.
func TestFilesOptionBatches(t *testing.T) {
	tree := repotest.Tree(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "leak.go"), []byte("package leak\n\nvar password = \"hunter2hunter2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, link := range []struct{ name, to string }{{"linked.go", filepath.Join(outside, "leak.go")}, {"linkdir", outside}} {
		if err := os.Symlink(link.to, filepath.Join(tree, link.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(tree, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, ".git", "config"), []byte("token = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lint := check("repo-lint", func(r *sdk.RepoRequest, f *repo.File) []sdk.Finding { return repo.Lint(f, r.MaxLineLength) })
	sast := check("repo-sast", func(_ *sdk.RepoRequest, f *repo.File) []sdk.Finding { return repo.SAST(f) })
	mounted := []sdk.LocalOption{sdk.WithInfo(sdk.Info{Mounts: []string{tree}})}
	var scan sdk.ScanResult
	run(t, func(j *sdk.Job) error {
		_, src, err := repo.Open(j)
		if err != nil {
			return err
		}
		var s repo.Scanner
		if err := src.Walk(func(f *repo.File) error { s.Add(f); return nil }); err != nil {
			return err
		}
		return j.WriteJSON(s.Result(src.Skipped()))
	}, []byte(`{"dir": "`+tree+`"}`), mounted, &scan)
	batches := repo.Partition(scan.Files, 3, 0).Batches
	batches = append(batches, sdk.Batch{Files: []string{"linked.go", "linkdir/leak.go", ".git/config", "../repo/README.md", "/README.md", "src", "missing.go"}})
	archive := repotest.Archive(t, tree)
	for _, tool := range []struct {
		name string
		h    sdk.Handler
		want []string
	}{{"lint", lint, repotest.LintFindings}, {"sast", sast, repotest.SASTFindings}} {
		var fromDir []string
		checked := 0
		for _, b := range batches {
			files, err := json.Marshal(b.Files)
			if err != nil {
				t.Fatal(err)
			}
			var d, a sdk.FindingSet
			run(t, tool.h, []byte(`{"dir": "`+tree+`", "files": `+string(files)+`}`), mounted, &d)
			run(t, tool.h, append([]byte(`{"files": `+string(files)+"}\n"), archive...), nil, &a)
			if !slices.Equal(repotest.Keys(d.Findings), repotest.Keys(a.Findings)) || d.FilesChecked != a.FilesChecked {
				t.Errorf("%s %v: dir %v (%d files), archive %v (%d files)", tool.name, b.Files, repotest.Keys(d.Findings), d.FilesChecked, repotest.Keys(a.Findings), a.FilesChecked)
			}
			fromDir = append(fromDir, repotest.Keys(d.Findings)...)
			checked += d.FilesChecked
		}
		slices.Sort(fromDir)
		want := slices.Sorted(slices.Values(tool.want))
		if !slices.Equal(fromDir, want) {
			t.Errorf("%s: the batches found\n%s\nwant\n%s", tool.name, strings.Join(fromDir, "\n"), strings.Join(want, "\n"))
		}
		if checked != 11 { // every file but the binary one
			t.Errorf("%s: the batches checked %d files", tool.name, checked)
		}
	}
}

// TestLintGofmtIsFormatSource checks that repo-lint's gofmt finding is
// there exactly when go/format.Source changes the file: number literals it
// normalizes, imports it sorts, comments, spacing.
func TestLintGofmtIsFormatSource(t *testing.T) {
	for _, src := range []string{
		"package p\n",
		"package p\n\nconst x = 0XFF\n",
		"package p\n\nconst x = 0xff + 1E5 + 0O7 + 0B1 + 1_000\n",
		"package p\n\nconst x = 0xFF + 1e5i + 0x1P-2\n",
		"package p\n\nimport (\n\t\"os\"\n\t\"fmt\"\n)\n\nvar _ = fmt.Sprint(os.Args)\n",
		"package p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nvar _ = fmt.Sprint(os.Args)\n",
		"package p\n\nimport (\n\t\"os\" // the args\n\n\t\"fmt\"\n\t\"fmt\"\n)\n\nvar _ = fmt.Sprint(os.Args)\n",
		"package p\n\n// F does it.\nfunc F(a int,b int) int { return a+b }\n",
		"package p\n\n// F does it.\nfunc F(a, b int) int { return a + b }\n",
		"package p\n\ntype T struct {\n\tA int // a\n\tBB string\n}\n",
		"package p\n\ntype T struct {\n\tA  int // a\n\tBB string\n}\n",
		"package p\nfunc f() {\n  x := 1\n\t_ = x\n}\n",
		"package p\r\n\r\nvar x = 1\r\n",
		"package p\n\nvar x = []int{\n1,\n2}\n",
		"package p\n\n/* a\n   b */\nvar x = 1\n\n\n\nvar y = 2\n",
	} {
		formatted, err := format.Source([]byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want := !bytes.Equal(formatted, []byte(src))
		got := false
		for _, f := range repo.Lint(&repo.File{Path: "p.go", Language: "Go", Data: []byte(src)}, 0) {
			got = got || f.Rule == "gofmt"
		}
		if got != want {
			t.Errorf("%q: gofmt finding %v, format.Source changes it: %v", src, got, want)
		}
	}
}
