package assembly_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// seedDiff is the fake Ollama's patch for demo's main.py: a real unified
// diff that adds a docstring to add.
const seedDiff = `--- a/main.py
+++ b/main.py
@@ -1,2 +1,3 @@
 def add(a, b):
+    """Return the sum of a and b."""
     return a + b
`

// seedModules are code-llm and chat-simple, as ward dev runs them:
// reactors, with their manifests.
func seedModules(t *testing.T) (map[string][]byte, map[string]*sandbox.Manifest) {
	t.Helper()
	mods, mans := map[string][]byte{}, map[string]*sandbox.Manifest{}
	for _, name := range []string{"code-llm", "chat-simple"} {
		src, err := os.ReadFile("../../modules/" + name + "/manifest.yaml")
		if err != nil {
			t.Fatal(err)
		}
		man, err := sandbox.ParseManifest(src)
		if err != nil {
			t.Fatal(err)
		}
		mods[name] = wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/"+name)
		mans[name] = man
	}
	return mods, mans
}

// generateRequest is what the fake Ollama reads of a /api/generate body.
type generateRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	System string `json:"system"`
	Format string `json:"format"`
	Stream bool   `json:"stream"`
}

// TestSeedDemoWorkflow runs the seed workflow demo by name, as a tenant,
// through a real system: code-llm asks the host's Ollama (a fake, granted
// as the "ollama" service) for a patch, chat-simple answers about it, and
// the run's outputs gather both. With Ollama down, the run still
// succeeds, with code-llm's fallback patch, as the demo says.
func TestSeedDemoWorkflow(t *testing.T) {
	const model = "codellama:7b"
	var (
		mu   sync.Mutex // guards asks
		asks []generateRequest
	)
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"version": "0.5.7"})
			return
		case "/api/generate":
		default:
			http.NotFound(w, r)
			return
		}
		var req generateRequest
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		asks = append(asks, req)
		mu.Unlock()
		patch, _ := json.Marshal(map[string]string{"type": "unified_diff", "content": seedDiff})
		_ = json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "response": string(patch), "done": true})
	}))
	defer ollama.Close()

	mods, mans := seedModules(t)
	e := start(t, assembly.Options{Store: memoryStore(t),
		Host: assembly.HostConfig{
			Modules:      mods,
			Manifests:    mans,
			Capabilities: []string{"ollama"},
			Env:          map[string]string{"OLLAMA_MODEL": model},
			Services:     map[string]string{"ollama": ollama.URL},
		},
	})
	acme := e.tenantClient(t, "acme")
	seed, err := os.ReadFile("../config/workflows/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The instruction overrides the demo's default ("add a docstring"); the
	// file and its code are the defaults.
	const instruction = "add a docstring saying it returns the sum"
	const code = "def add(a, b):\n    return a + b\n"

	// demo runs the seed workflow as acme and checks what every run of it
	// must be, whatever Ollama did: it returns its outputs.
	demo := func(t *testing.T, runID string) (out struct {
		Patch struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"patch"`
		Fallback bool   `json:"fallback"`
		Review   string `json:"review"`
	}) {
		t.Helper()
		seen, run := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: runID, Name: "demo", Input: []byte(`{"instruction": "` + instruction + `"}`)})
		if run.GetState() != "SUCCEEDED" {
			t.Fatalf("run %s: %s", run.GetState(), run.GetReason())
		}
		if run.GetWorkflow() != "demo" || run.GetTenantId() != "acme" || !bytes.Equal(run.GetDefinition(), seed) {
			t.Errorf("run of workflow %q, tenant %q, definition:\n%s", run.GetWorkflow(), run.GetTenantId(), run.GetDefinition())
		}
		if err := json.Unmarshal(run.GetOutputs(), &out); err != nil {
			t.Fatalf("outputs %s: %v", run.GetOutputs(), err)
		}
		if out.Patch.Type != "unified_diff" || !strings.Contains(out.Patch.Content, "@@") {
			t.Errorf("outputs' patch is no unified diff: %s", run.GetOutputs())
		}
		// chat-simple's reply: the review of the very patch the run
		// outputs.
		if want := "Echo: Review this change to main.py:\n" + out.Patch.Content; out.Review != want {
			t.Errorf("review %q, want %q", out.Review, want)
		}
		// Both steps ran as ordinary jobs of acme, labelled with the run.
		ctx := context.Background()
		topics := map[string]string{"code": "job.code.llm", "chat": "job.chat.simple"}
		if len(run.GetTasks()) != len(topics) {
			t.Fatalf("tasks %v", run.GetTasks())
		}
		for _, task := range run.GetTasks() {
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
		// The code step's output is code-llm's suggestion for the input,
		// defaults merged under the override.
		for _, task := range run.GetTasks() {
			if task.GetStep() != "code" {
				continue
			}
			var sug struct {
				FilePath     string `json:"file_path"`
				OriginalCode string `json:"original_code"`
				Instruction  string `json:"instruction"`
				Model        string `json:"model"`
			}
			if err := json.Unmarshal(task.GetOutput(), &sug); err != nil || sug.FilePath != "main.py" || sug.OriginalCode != code ||
				sug.Instruction != instruction || sug.Model != model {
				t.Errorf("the code step's output %s (%v)", task.GetOutput(), err)
			}
		}
		// The log is the one the follower saw, verifies, and replays.
		checkRunLog(t, seen, run)
		return out
	}

	t.Run("ollama", func(t *testing.T) {
		out := demo(t, "run-demo-ollama")
		if out.Fallback || out.Patch.Content != seedDiff {
			t.Fatalf("outputs: fallback %v, patch %q; want the fake Ollama's patch", out.Fallback, out.Patch.Content)
		}
		if !strings.Contains(out.Review, `"""Return the sum of a and b."""`) {
			t.Errorf("the review does not hold the patch: %q", out.Review)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asks) != 1 {
			t.Fatalf("Ollama was asked %d times, want once", len(asks))
		}
		a := asks[0]
		if a.Model != model || a.Format != "json" || a.Stream || !strings.Contains(a.System, "unified_diff") {
			t.Errorf("Ollama asked for model %q, format %q, stream %v, system %q", a.Model, a.Format, a.Stream, a.System)
		}
		for _, want := range []string{"File: main.py", "Instruction: " + instruction, code} {
			if !strings.Contains(a.Prompt, want) {
				t.Errorf("the prompt lacks %q:\n%s", want, a.Prompt)
			}
		}
	})

	t.Run("ollama down", func(t *testing.T) {
		ollama.Close()
		mu.Lock()
		before := len(asks)
		mu.Unlock()
		out := demo(t, "run-demo-down")
		if !out.Fallback {
			t.Fatalf("outputs: fallback false with Ollama down; patch %q", out.Patch.Content)
		}
		// code-llm's fallback: the instruction as a TODO at the top of
		// main.py, as a unified diff.
		want := "--- a/main.py\n+++ b/main.py\n@@ -1,2 +1,3 @@\n+# TODO(ward): " + instruction + "\n def add(a, b):\n     return a + b\n"
		if out.Patch.Content != want {
			t.Errorf("fallback patch %q, want %q", out.Patch.Content, want)
		}
		if !strings.Contains(out.Review, "# TODO(ward): "+instruction) {
			t.Errorf("the review does not hold the fallback patch: %q", out.Review)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asks) != before {
			t.Errorf("a closed Ollama was asked: %d asks", len(asks)-before)
		}
	})
}
