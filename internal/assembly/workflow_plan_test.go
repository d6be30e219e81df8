package assembly_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// planModules builds the modules the seed workflow plan uses, with their
// manifests.
func planModules(t *testing.T) (map[string][]byte, map[string]*sandbox.Manifest) {
	t.Helper()
	mods, mans := map[string][]byte{}, map[string]*sandbox.Manifest{}
	for _, name := range []string{"chat-advanced", "chat-simple", "echo"} {
		src, err := os.ReadFile("../../modules/" + name + "/manifest.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if mans[name], err = sandbox.ParseManifest(src); err != nil {
			t.Fatal(err)
		}
		mods[name] = wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/"+name)
	}
	return mods, mans
}

// TestSeedPlanWorkflow runs the seed workflow plan: a planner (chat-advanced
// asking a fake Ollama) writes a plan, the scheduler checks it and runs it
// as a child run whose steps are ordinary jobs. A plan that uses a topic
// off the allow-list, and a planner without Ollama, give way to the
// deterministic plan, and the outputs say so.
func TestSeedPlanWorkflow(t *testing.T) {
	var answer atomic.Value // the plan the fake Ollama answers with
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"version": "0.5.7"})
		case "/api/generate":
			var req struct{ Prompt, System string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			if !strings.Contains(req.Prompt, "Goal: ") || !strings.Contains(req.System, "JSON only") {
				http.Error(w, "not a planner's request", http.StatusBadRequest)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"response": answer.Load().(string), "done": true})
		default:
			http.NotFound(w, r)
		}
	}))
	defer ollama.Close()
	mods, mans := planModules(t)
	e := start(t, assembly.Options{Store: memoryStore(t),
		Host: assembly.HostConfig{Modules: mods, Manifests: mans, Capabilities: []string{"ollama"}, Services: map[string]string{"ollama": ollama.URL}},
	})
	acme := e.tenantClient(t, "acme")

	type outputs struct {
		Plan struct {
			Source, Why, Definition string
		} `json:"plan"`
		Run     string                    `json:"run"`
		Results map[string]map[string]any `json:"results"`
	}
	run := func(t *testing.T, id, plan string) outputs {
		t.Helper()
		answer.Store(plan)
		_, r := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: id, Name: "plan",
			Input: []byte(`{"goal": "greet the team"}`)})
		if r.GetState() != "SUCCEEDED" {
			t.Fatalf("run %s: %s", r.GetState(), r.GetReason())
		}
		var out outputs
		if err := json.Unmarshal(r.GetOutputs(), &out); err != nil {
			t.Fatal(err)
		}
		// The plan ran as a run of its own, of the same tenant, whose steps
		// are jobs.
		child, err := acme.Workflow(t.Context(), out.Run, false)
		if err != nil || child.GetState() != "SUCCEEDED" || out.Run != id+"-run" {
			t.Fatalf("the child run %q: %v %v", out.Run, child.GetState(), err)
		}
		for _, task := range child.GetTasks() {
			if _, err := acme.Get(t.Context(), task.GetJobId(), false); err != nil {
				t.Errorf("the child's %s: %v", task.GetId(), err)
			}
		}
		return out
	}

	t.Run("planned", func(t *testing.T) {
		out := run(t, "run-planned", "Here is the plan:\n"+`{"steps": [
			{"id": "hello", "topic": "job.echo", "payload": {"msg": "hi team"}},
			{"id": "sum", "topic": "job.chat.simple", "depends_on": ["hello"], "payload": {"message": "greeted"}}]}`)
		if out.Plan.Source != "planner" || out.Results["hello"]["msg"] != "hi team" || out.Results["sum"]["reply"] != "Echo: greeted" {
			t.Fatalf("outputs %+v", out)
		}
	})
	t.Run("off the allow-list", func(t *testing.T) {
		out := run(t, "run-offlist", `{"steps": [{"id": "x", "topic": "job.code.llm", "payload": {}}]}`)
		if out.Plan.Source != "fallback" || !strings.Contains(out.Plan.Why, "not on the allow-list") ||
			out.Results["answer"]["reply"] != "Echo: greet the team" {
			t.Fatalf("outputs %+v", out)
		}
	})
	t.Run("a cycle", func(t *testing.T) {
		out := run(t, "run-cycle", `{"steps": [{"id": "a", "topic": "job.echo", "depends_on": ["b"]}, {"id": "b", "topic": "job.echo", "depends_on": ["a"]}]}`)
		if out.Plan.Source != "fallback" || !strings.Contains(out.Plan.Why, "cycle") {
			t.Fatalf("outputs %+v", out)
		}
	})
	t.Run("no ollama", func(t *testing.T) {
		ollama.Close()
		out := run(t, "run-noollama", "")
		if out.Plan.Source != "fallback" || !strings.Contains(out.Plan.Why, "fell back") || out.Results["answer"]["reply"] != "Echo: greet the team" {
			t.Fatalf("outputs %+v", out)
		}
	})
}

// TestSeedPlanWithoutOllamaHost: with no host that has Ollama (ward dev on
// a machine without it), the planner step cannot be placed (no_workers),
// and the run goes on to the deterministic plan, saying why, as the README
// says, instead of failing.
func TestSeedPlanWithoutOllamaHost(t *testing.T) {
	mods, mans := planModules(t)
	e := start(t, assembly.Options{Store: memoryStore(t), Host: assembly.HostConfig{Modules: mods, Manifests: mans}})
	acme := e.tenantClient(t, "acme")
	_, r := runWorkflow(t, acme, &wardv1.WorkflowRunRequest{RunId: "run-nohost", Name: "plan",
		Input: []byte(`{"goal": "greet the team"}`)})
	if r.GetState() != "SUCCEEDED" {
		t.Fatalf("run %s: %s", r.GetState(), r.GetReason())
	}
	var out struct {
		Plan    struct{ Source, Why string } `json:"plan"`
		Results map[string]map[string]any    `json:"results"`
	}
	if err := json.Unmarshal(r.GetOutputs(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Plan.Source != "fallback" || !strings.Contains(out.Plan.Why, "planner step ended FAILED") ||
		out.Results["answer"]["reply"] != "Echo: greet the team" {
		t.Fatalf("outputs %+v", out)
	}
	for _, task := range r.GetTasks() {
		if task.GetId() == "plan" && task.GetState() != "FAILED" {
			t.Errorf("the planner step: %s, want FAILED (no host serves job.chat.advanced)", task.GetState())
		}
	}
}
