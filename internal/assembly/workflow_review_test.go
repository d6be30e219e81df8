package assembly_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/modules/sdk"
	"github.com/ward-run/ward/policies"
)

// defaultReposRoot is the directory the default policy data grants the
// repo-* modules (data.modules.<module>.read_only_roots).
const defaultReposRoot = "/srv/ward/repos"

// copyRepoTree copies modules/testdata/repo into dst, file by file. A file
// named *.in is written without that suffix, as repotest.Tree does: the
// tree's Go files with parse and format errors are kept that way in the
// source tree, out of gofmt's sight.
func copyRepoTree(t *testing.T, dst string) {
	t.Helper()
	src := filepath.Join("..", "..", "modules", "testdata", "repo")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, strings.TrimSuffix(rel, ".in"))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reposBundle is the default bundle with the repo-* modules' read-only
// root moved from /srv/ward/repos to root. The bundle's own tests pin the
// grants of the default root, so they are moved with it: push runs them,
// and they hold of the new root as they did of the old.
func reposBundle(t *testing.T, root string) *safety.Bundle {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"data.yaml", "ward_test.rego"} {
		src, err := fs.ReadFile(policies.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), defaultReposRoot) {
			t.Fatalf("policies/%s no longer names %s", name, defaultReposRoot)
		}
		files[name] = strings.ReplaceAll(string(src), defaultReposRoot, root)
	}
	if !strings.Contains(files["data.yaml"], `read_only_roots: ["`+root+`"]`) {
		t.Fatalf("data.yaml does not grant %s:\n%s", root, files["data.yaml"])
	}
	return defaultBundleWith(t, files)
}

// testInventory is the part of repo-tests' result the test reads.
type testInventory struct {
	Tool   string `json:"tool"`
	Totals struct {
		Files    int `json:"files"`
		Packages int `json:"packages"`
	} `json:"totals"`
	Packages []struct {
		Dir      string `json:"dir"`
		Language string `json:"language"`
	} `json:"packages"`
}

// TestSeedCodeReviewWorkflow runs the seed workflow repo.code_review by
// name, as a tenant, through a real system, over the demo repository as a
// directory the host mounts and the policy grants: scan, partition, lint
// and sast fanned out over the batches, the test inventory, and the report
// that merges the findings of both tools, which are the tree's known ones
// and those a direct repo-report job of the same tree finds.
func TestSeedCodeReviewWorkflow(t *testing.T) {
	root := filepath.Join(t.TempDir(), "repos")
	dir := filepath.Join(root, "demo")
	copyRepoTree(t, dir)

	names := []string{"repo-scan", "repo-partition", "repo-lint", "repo-sast", "repo-tests", "repo-report"}
	mods, mans := builtModules(t, names...)
	e := start(t, assembly.Options{Store: memoryStore(t), Host: assembly.HostConfig{Modules: mods, Manifests: mans, MountRoots: []string{root}}})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := safety.Push(ctx, e.client.Bus().NATS(), "", reposBundle(t, root), safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })

	acme := e.tenantClient(t, "acme")
	seed, err := os.ReadFile("../config/workflows/repo.code_review.yaml")
	if err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]any{"dir": dir, "batch_size": 5})
	seen, run := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: "run-review", Name: "repo.code_review", Input: input})
	if run.GetState() != "SUCCEEDED" {
		for _, task := range run.GetTasks() {
			t.Logf("task %s: %s %s", task.GetId(), task.GetState(), task.GetError())
		}
		t.Fatalf("run %s: %s", run.GetState(), run.GetReason())
	}
	if run.GetWorkflow() != "repo.code_review" || run.GetTenantId() != "acme" || string(run.GetDefinition()) != string(seed) {
		t.Errorf("run of workflow %q, tenant %q, definition:\n%s", run.GetWorkflow(), run.GetTenantId(), run.GetDefinition())
	}

	// Every step ran as an ordinary job of acme, labelled with the run, on
	// its step's topic; lint and sast once per batch of the partition.
	topics := map[string]string{"scan": "job.repo.scan", "partition": "job.repo.partition", "lint": "job.repo.lint",
		"sast": "job.repo.sast", "tests": "job.repo.tests", "report": "job.repo.report"}
	perStep := map[string]int{}
	outputs := map[string][]byte{} // of the steps outside for_each
	for _, task := range run.GetTasks() {
		perStep[task.GetStep()]++
		if task.GetIndex() < 0 {
			outputs[task.GetStep()] = task.GetOutput()
		}
		if task.GetState() != "SUCCEEDED" {
			t.Errorf("task %s: %s %s", task.GetId(), task.GetState(), task.GetError())
		}
		job, err := acme.Get(ctx, task.GetJobId(), false)
		if err != nil {
			t.Fatalf("task %s's job %s: %v", task.GetId(), task.GetJobId(), err)
		}
		if job.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || job.GetTenantId() != "acme" || job.GetTopic() != topics[task.GetStep()] ||
			job.GetLabels()[scheduler.LabelRun] != run.GetRunId() || job.GetSafety().GetDecisionId() == "" {
			t.Errorf("task %s's job: %s tenant %s topic %s labels %v", task.GetId(), job.GetState(), job.GetTenantId(), job.GetTopic(), job.GetLabels())
		}
	}
	var part sdk.PartitionResult
	if err := json.Unmarshal(outputs["partition"], &part); err != nil {
		t.Fatalf("partition's output %s: %v", outputs["partition"], err)
	}
	batches := len(part.Batches)
	if batches <= 1 || part.TotalFiles != repotest.Files || len(part.Batches[0].Files) != 5 {
		t.Fatalf("partition: %d batches of %d files: %+v", batches, part.TotalFiles, part)
	}
	for step, want := range map[string]int{"scan": 1, "partition": 1, "lint": batches, "sast": batches, "tests": 1, "report": 1} {
		if perStep[step] != want {
			t.Errorf("step %s ran %d tasks, want %d (%v)", step, perStep[step], want, perStep)
		}
	}
	if len(run.GetTasks()) != 4+2*batches {
		t.Errorf("%d tasks, want %d", len(run.GetTasks()), 4+2*batches)
	}

	var out struct {
		Summary      sdk.ReportSummary `json:"summary"`
		Findings     []sdk.Finding     `json:"findings"`
		Markdown     string            `json:"markdown"`
		Tests        testInventory     `json:"tests"`
		SkippedFiles []string          `json:"skipped_files"`
	}
	if err := json.Unmarshal(run.GetOutputs(), &out); err != nil {
		t.Fatalf("outputs %s: %v", run.GetOutputs(), err)
	}
	// The report merges both tools' findings over every batch: the tree's
	// known ones, counted in the summary, none showing a secret whole.
	want := slices.Concat(repotest.LintFindings, repotest.SASTFindings)
	slices.Sort(want)
	got := repotest.Keys(out.Findings)
	if !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for _, k := range []string{"config/aws.env:2 aws-secret-access-key", "config/settings.yaml:3 stripe-key", "keys/id_rsa:1 private-key"} {
		if !slices.Contains(got, k) {
			t.Errorf("findings lack %s", k)
		}
	}
	if !slices.Contains(out.Summary.Tools, "repo-lint") || !slices.Contains(out.Summary.Tools, "repo-sast") ||
		out.Summary.Findings != len(want) || out.Summary.Findings != len(out.Findings) {
		t.Errorf("summary %+v, want %d findings of repo-lint and repo-sast", out.Summary, len(want))
	}
	sum := 0
	for _, n := range out.Summary.BySeverity {
		sum += n
	}
	if sum != out.Summary.Findings || out.Summary.ByRule["aws-secret-access-key"] != 1 || out.Summary.ByRule["stripe-key"] != 1 {
		t.Errorf("summary counts %+v", out.Summary)
	}
	for _, f := range out.Findings {
		for _, s := range repotest.Secrets {
			if strings.Contains(f.Message, s) {
				t.Errorf("finding %s:%d %s shows a secret: %q", f.File, f.Line, f.Rule, f.Message)
			}
		}
	}
	if strings.TrimSpace(out.Markdown) == "" || !strings.Contains(out.Markdown, fmt.Sprintf("**%d findings**", len(want))) {
		t.Errorf("markdown does not name the %d findings:\n%s", len(want), out.Markdown)
	}
	if len(out.SkippedFiles) != 0 {
		t.Errorf("skipped files %v", out.SkippedFiles)
	}

	// The test inventory: the tree's Go and Python packages.
	inv := out.Tests
	pkgs := map[string]bool{}
	for _, p := range inv.Packages {
		pkgs[p.Dir+" "+p.Language] = true
	}
	if inv.Tool != "repo-tests" || inv.Totals.Files != repotest.Files || !pkgs["cmd/demo Go"] || !pkgs["tools Python"] ||
		inv.Totals.Packages != len(inv.Packages) {
		t.Errorf("tests output: %+v", inv)
	}

	// A direct repo-report job of the same tree finds the same.
	_, direct := e.run(t, &wardv1.JobRequest{Topic: "job.repo.report", TenantId: "acme", Payload: []byte(`{"dir": "` + dir + `"}`)})
	if direct.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("direct repo-report: %s %s %s", direct.GetState(), direct.GetErrorCode(), direct.GetErrorMessage())
	}
	var rep sdk.Report
	if err := json.Unmarshal(direct.GetResult(), &rep); err != nil {
		t.Fatalf("direct report %s: %v", direct.GetResult(), err)
	}
	if d := repotest.Keys(rep.Findings); !slices.Equal(d, got) || rep.Summary.Findings != out.Summary.Findings ||
		!slices.Equal(rep.Summary.Tools, out.Summary.Tools) {
		t.Errorf("direct report: %v %+v; the run's: %v %+v", d, rep.Summary, got, out.Summary)
	}

	// The log is the one the follower saw, verifies, and replays.
	checkRunLog(t, seen, run)
}
