package modules_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/modules/internal/repo"
)

// TestRepoTests runs repo-tests in the sandbox on testdata/repo-tests (Go,
// Python, JavaScript, Java, Rust and Ruby), given as an archive and as a
// mounted directory: the two give the same bytes.
func TestRepoTests(t *testing.T) {
	m := load(t, "repo-tests")
	tree, err := filepath.Abs(filepath.Join("testdata", "repo-tests"))
	if err != nil {
		t.Fatal(err)
	}
	archive := run(t, m, sandbox.Input{Payload: repotest.Archive(t, tree)})
	mount := run(t, m, sandbox.Input{Payload: []byte(`{"dir": "` + tree + `"}`), Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: tree}}}})
	if !bytes.Equal(archive, mount) {
		t.Errorf("archive and mount differ:\n%s\n%s", archive, mount)
	}
	inv := decode[repo.TestInventory](t, archive)

	tot := inv.Totals
	if inv.Tool != "repo-tests" || tot.Files != 26 || tot.Tests != 15 || tot.TestFiles != 5 || tot.Benchmarks != 1 || tot.Fuzz != 1 ||
		tot.Examples != 1 || tot.Packages != 8 || tot.TestedPackages != 6 || tot.UntestedPackages != 2 {
		t.Errorf("totals %+v", tot)
	}
	type row struct {
		tests, testFiles int
		coverage         string
	}
	want := map[string]row{
		"app Python":                   {0, 0, repo.CoverageElsewhere},
		"calc Go":                      {2, 1, repo.CoverageOwn},
		"crate/src Rust":               {2, 0, repo.CoverageInline},
		"lib Ruby":                     {0, 0, repo.CoverageElsewhere},
		"spec Ruby":                    {2, 1, repo.CoverageTestsOnly},
		"src/main/java/com/acme Java":  {0, 0, repo.CoverageElsewhere},
		"src/test/java/com/acme Java":  {2, 1, repo.CoverageTestsOnly},
		"store Go":                     {0, 0, repo.CoverageNone},
		"tests Python":                 {4, 1, repo.CoverageTestsOnly},
		"web/lib JavaScript":           {0, 0, repo.CoverageNone},
		"web/src JavaScript":           {0, 0, repo.CoverageElsewhere},
		"web/src/__tests__ JavaScript": {3, 1, repo.CoverageTestsOnly},
	}
	got := map[string]row{}
	for _, p := range inv.Packages {
		got[p.Dir+" "+p.Language] = row{p.Tests, p.TestFiles, p.Coverage}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("package %s: %+v, want %+v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("packages %v", got)
	}

	var untested []string
	for _, u := range inv.Untested {
		untested = append(untested, u.Dir)
	}
	if !slices.Equal(untested, []string{"store", "web/lib"}) || inv.Untested[0].ExportedTotal != 3 || inv.Untested[0].Exported[0].Name != "New" {
		t.Errorf("untested %+v", inv.Untested)
	}

	var names []string
	for _, f := range inv.Frameworks {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"Go testing", "JUnit 5", "Jest", "RSpec", "Rust #[test]", "pytest", "testify", "tokio::test"}) {
		t.Errorf("frameworks %v", names)
	}
	wantSkipped := []string{"assets/logo.png: binary", "store/kind_string.go: generated", "vendor/: vendored code (1 files)"}
	if !slices.Equal(inv.Skipped, wantSkipped) {
		t.Errorf("skipped %v", inv.Skipped)
	}

	// The lint fixture, whose Go files do not all parse: every file read,
	// none of them a test.
	lintTree := decode[repo.TestInventory](t, run(t, m, sandbox.Input{Payload: repotest.Archive(t, repotest.Tree(t))}))
	if lintTree.Totals.Files != repotest.Files || lintTree.Totals.SourceFiles == 0 || lintTree.Totals.TestFiles != 0 || len(lintTree.Untested) == 0 {
		t.Errorf("the lint fixture: %+v, untested %+v", lintTree.Totals, lintTree.Untested)
	}
}
