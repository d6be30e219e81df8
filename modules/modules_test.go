// Package modules_test runs every built-in module, built as the reactor
// `make modules` builds, in the sandbox on real input.
package modules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ward-run/ward/api/reason"

	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
	"github.com/ward-run/ward/modules/sdk"
)

var (
	rtOnce sync.Once
	rt     *sandbox.Runtime
	rtErr  error
)

// sandbox is one Runtime for the package's tests, on the shared cache.
func newRuntime(t *testing.T) *sandbox.Runtime {
	t.Helper()
	rtOnce.Do(func() {
		rt, rtErr = sandbox.New(context.Background(), sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	})
	if rtErr != nil {
		t.Fatal(rtErr)
	}
	return rt
}

func TestMain(m *testing.M) {
	code := m.Run()
	if rt != nil {
		_ = rt.Close(context.Background())
	}
	os.Exit(code)
}

// load builds modules/<name> as a reactor and loads it with its manifest.
func load(t *testing.T, name string) *sandbox.Module {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(name, "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	man, err := sandbox.ParseManifest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if man.Name != name || man.ABI != sandbox.ABIReactor {
		t.Fatalf("manifest of %s: %+v", name, man)
	}
	m, err := newRuntime(t).Load(context.Background(), wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/"+name), man)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run(t *testing.T, m *sandbox.Module, in sandbox.Input) []byte {
	t.Helper()
	if in.Tenant == "" {
		in.Tenant = "acme"
	}
	out, err := newRuntime(t).Run(context.Background(), m, in)
	if err != nil {
		var log []byte
		if out != nil {
			log = out.Log
		}
		t.Fatalf("%s: %v\nlog:\n%s", m.Name(), err, log)
	}
	return out.Data
}

func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return v
}

func TestEcho(t *testing.T) {
	m := load(t, "echo")
	if got := run(t, m, sandbox.Input{Payload: []byte(`{"hello":"world"}`)}); string(got) != `{"hello":"world"}` {
		t.Fatalf("%q", got)
	}
}

func TestChatSimple(t *testing.T) {
	m := load(t, "chat-simple")
	for _, in := range []string{`{"message": "hi there"}`, "hi there"} {
		if got := decode[sdk.ChatResponse](t, run(t, m, sandbox.Input{Payload: []byte(in)})); got.Reply != "Echo: hi there" {
			t.Fatalf("%q: %+v", in, got)
		}
	}
	if _, err := newRuntime(t).Run(context.Background(), m, sandbox.Input{Payload: []byte("{}")}); sandbox.ErrorCode(err) != reason.ModuleError {
		t.Fatalf("no message: %v", err)
	}
}

// grants lets a job reach the stand-in, as the policy grants Ollama.
func grants(o *ollamatest.Server, model string) sandbox.Grants {
	return sandbox.Grants{HTTPHosts: []string{o.Host()}, Env: map[string]string{"OLLAMA_URL": o.URL, "OLLAMA_MODEL": model}}
}

func TestChatAdvanced(t *testing.T) {
	m := load(t, "chat-advanced")
	o := ollamatest.New(t, func(req ollamatest.Request) []string {
		return []string{"Hello! ", "You ", "said: ", req.Prompt}
	})
	var (
		mu     sync.Mutex // guards the 2 following
		seqs   []int
		stream []byte
	)
	in := sandbox.Input{Payload: []byte(`{"message": "how are you?"}`), Grants: grants(o, "mistral"),
		Stream: func(seq int, chunk []byte) {
			mu.Lock()
			seqs, stream = append(seqs, seq), append(stream, chunk...)
			mu.Unlock()
		}}

	got := decode[sdk.ChatResponse](t, run(t, m, in))
	if got.Reply != "Hello! You said: how are you?" || got.Model != "mistral" || got.Fallback {
		t.Fatalf("%+v", got)
	}
	if reqs := o.Requests(); len(reqs) != 1 || reqs[0].Model != "mistral" || !reqs[0].Stream {
		t.Fatalf("Ollama was asked %+v", reqs)
	}
	// Every token streamed, in order: the chunks, numbered from 1, make the reply.
	mu.Lock()
	if string(stream) != got.Reply || len(seqs) == 0 || seqs[0] != 1 || !slices.IsSorted(seqs) {
		t.Errorf("streamed %q in chunks %v", stream, seqs)
	}
	mu.Unlock()

	// Not granted the host: the fallback, with the refusal as the reason.
	noHTTP := in
	noHTTP.Grants.HTTPHosts = nil
	noHTTP.Stream = nil
	got = decode[sdk.ChatResponse](t, run(t, m, noHTTP))
	if !strings.HasPrefix(got.Reply, "[fallback] ") || !got.Fallback || !strings.Contains(got.Error, "not granted") {
		t.Fatalf("without the grant: %+v", got)
	}
	// Ollama gone: the fallback too.
	o.Close()
	in.Stream = nil
	got = decode[sdk.ChatResponse](t, run(t, m, in))
	if got.Reply != "[fallback] Echo: how are you?" || !got.Fallback {
		t.Fatalf("with Ollama down: %+v", got)
	}
	// No OLLAMA_MODEL: llama3.
	in.Grants.Env = map[string]string{"OLLAMA_URL": o.URL}
	if got := decode[sdk.ChatResponse](t, run(t, m, in)); got.Model != "llama3" {
		t.Fatalf("default model %q", got.Model)
	}
}

// TestChatAdvancedStreamBreaks: Ollama answers an error in the middle of
// the stream; the job fails rather than pass off half an answer.
func TestChatAdvancedStreamBreaks(t *testing.T) {
	m := load(t, "chat-advanced")
	o := ollamatest.New(t, func(ollamatest.Request) []string { return []string{"Half ", "an "} })
	o.BeforeToken(func(i int, _ string) {
		if i == 1 {
			o.CloseClientConnections()
		}
	})
	out, err := newRuntime(t).Run(context.Background(), m, sandbox.Input{Tenant: "acme", Payload: []byte("hi"), Grants: grants(o, "llama3")})
	if sandbox.ErrorCode(err) != reason.ModuleError {
		t.Fatalf("a broken stream: %v, %q", err, out.Data)
	}
}

func TestCodeLLM(t *testing.T) {
	m := load(t, "code-llm")
	diff := "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package app\n"
	o := ollamatest.New(t, func(req ollamatest.Request) []string {
		if strings.Contains(req.Prompt, "nonsense") {
			return []string{"I'd rather not."}
		}
		b, _ := json.Marshal(sdk.Patch{Type: sdk.PatchUnifiedDiff, Content: diff})
		return []string{string(b)}
	})
	req := sdk.CodeRequest{FilePath: "main.go", OriginalCode: "package main\n", Instruction: "rename the package to app"}
	payload, _ := json.Marshal(req)
	in := sandbox.Input{Payload: payload, Grants: grants(o, "codellama")}

	got := decode[sdk.CodeSuggestion](t, run(t, m, in))
	if got.Patch.Type != sdk.PatchUnifiedDiff || got.Patch.Content != diff || got.Fallback ||
		got.FilePath != "main.go" || got.OriginalCode != req.OriginalCode || got.Instruction != req.Instruction {
		t.Fatalf("%+v", got)
	}
	if reqs := o.Requests(); reqs[0].Format != "json" || reqs[0].Stream {
		t.Fatalf("Ollama asked without format json, or for a stream: %+v", reqs[0])
	}
	// An answer that is no patch, and no Ollama at all: a valid fallback.
	req.Instruction = "nonsense"
	payload, _ = json.Marshal(req)
	in.Payload = payload
	for name, in := range map[string]sandbox.Input{"bad answer": in, "no grant": {Payload: payload}} {
		got := decode[sdk.CodeSuggestion](t, run(t, m, in))
		want := "--- a/main.go\n+++ b/main.go\n@@ -1,1 +1,2 @@\n+// TODO(ward): nonsense\n package main\n"
		if !got.Fallback || got.Patch.Type != sdk.PatchUnifiedDiff || got.Patch.Content != want {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

// repoInputs are the two ways a repository reaches a repo module: a
// gzipped tar in the payload, and a mounted directory.
func repoInputs(t *testing.T, opts string) map[string]sandbox.Input {
	tree := repotest.Tree(t)
	head := "{" + opts + "}\n"
	dir := `{"dir": "` + tree + `"`
	if opts != "" {
		dir += ", " + opts
	}
	return map[string]sandbox.Input{
		"archive": {Payload: append([]byte(head), repotest.Archive(t, tree)...)},
		"mount":   {Payload: []byte(dir + "}"), Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: tree}}}},
	}
}

func TestRepoModules(t *testing.T) {
	scan, partition, lint, sast, report := load(t, "repo-scan"), load(t, "repo-partition"), load(t, "repo-lint"), load(t, "repo-sast"), load(t, "repo-report")
	for name, in := range repoInputs(t, `"batch_size": 5`) {
		t.Run(name, func(t *testing.T) {
			s := decode[sdk.ScanResult](t, run(t, scan, in))
			if s.TotalFiles != repotest.Files || s.Languages["Go"].Files != 3 || s.Languages["Python"].Files != 1 {
				t.Errorf("scan: %d files, languages %v", s.TotalFiles, s.Languages)
			}
			p := decode[sdk.PartitionResult](t, run(t, partition, in))
			if len(p.Batches) != 3 || len(p.Batches[0].Files) != 5 || p.TotalFiles != repotest.Files {
				t.Errorf("partition: %+v", p)
			}
			l := decode[sdk.FindingSet](t, run(t, lint, in))
			if got := repotest.Keys(l.Findings); !slices.Equal(got, repotest.LintFindings) || l.FilesChecked != repotest.TextFiles {
				t.Errorf("lint: %v (%d files), want %v", got, l.FilesChecked, repotest.LintFindings)
			}
			s2 := decode[sdk.FindingSet](t, run(t, sast, in))
			if got := repotest.Keys(s2.Findings); !slices.Equal(got, repotest.SASTFindings) {
				t.Errorf("sast: %v, want %v", got, repotest.SASTFindings)
			}
			r := decode[sdk.Report](t, run(t, report, in))
			if r.Summary.Findings != len(repotest.LintFindings)+len(repotest.SASTFindings) || r.Summary.Files != repotest.Files {
				t.Errorf("report summary %+v", r.Summary)
			}
			if !strings.Contains(r.Markdown, "| error | `keys/id_rsa:1:1` | private-key |") {
				t.Errorf("report markdown:\n%s", r.Markdown)
			}
		})
	}

	// repo-report merges the results of lint and sast jobs, and partition's
	// batches feed lint.
	in := repoInputs(t, "")["archive"]
	l := run(t, lint, in)
	s := run(t, sast, in)
	merge, _ := json.Marshal(map[string]any{"results": []json.RawMessage{l, s}, "format": "markdown"})
	md := run(t, report, sandbox.Input{Payload: merge})
	if !bytes.HasPrefix(md, []byte("# Repository report")) || !bytes.Contains(md, []byte("**15 findings**")) {
		t.Fatalf("merged report:\n%s", md)
	}
	merge, _ = json.Marshal(map[string]any{"results": []json.RawMessage{l, s}, "format": "sarif"})
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(run(t, report, sandbox.Input{Payload: merge}), &log); err != nil || log.Version != "2.1.0" ||
		len(log.Runs) != 1 || len(log.Runs[0].Results) != 15 {
		t.Fatalf("SARIF report: %v %+v", err, log)
	}
	batch := repoInputs(t, `"files": ["README.md", "docs/long.txt"]`)["archive"]
	if got := repotest.Keys(decode[sdk.FindingSet](t, run(t, lint, batch)).Findings); len(got) != 2 {
		t.Fatalf("lint of a batch: %v", got)
	}
}

// TestRepoMountEscape: a repository with a symbolic link out of it is read
// without what the link points to.
func TestRepoMountEscape(t *testing.T) {
	scan := load(t, "repo-scan")
	tree := repotest.Tree(t)
	if err := os.WriteFile(filepath.Join(filepath.Dir(tree), "secret"), []byte("AWS_ACCESS_KEY_ID=AKIA3U55XTPLPFT7V4SE"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(tree, "up")); err != nil {
		t.Fatal(err)
	}
	s := decode[sdk.ScanResult](t, run(t, scan, sandbox.Input{Payload: []byte(`{"dir": "` + tree + `"}`),
		Grants: sandbox.Grants{Mounts: []sandbox.Mount{{Dir: tree}}}}))
	if s.TotalFiles != repotest.Files || len(s.Skipped) != 1 || !strings.HasPrefix(s.Skipped[0], "up") {
		t.Fatalf("%d files, skipped %v", s.TotalFiles, s.Skipped)
	}
}
