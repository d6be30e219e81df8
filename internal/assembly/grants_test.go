package assembly_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestServiceGrantsFollowThePolicy: the policy grants chat-advanced the
// host's "ollama" service, by name; the host resolves it to its own Ollama
// (here on a random port, not the usual one) and the job reaches it. A
// policy without the grant leaves the module unable to reach it: it
// answers with its fallback, and the job's last event says so. Policy,
// scheduler, host and sandbox are all real.
func TestServiceGrantsFollowThePolicy(t *testing.T) {
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model, Prompt string
		}
		if r.URL.Path != "/api/generate" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "response": "ollama says hi to " + req.Prompt, "done": true})
	}))
	defer ollama.Close()

	src, err := os.ReadFile("../../modules/chat-advanced/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := sandbox.ParseManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Host: assembly.HostConfig{
		Modules:      map[string][]byte{"chat-advanced": wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/chat-advanced")},
		Manifests:    map[string]*sandbox.Manifest{"chat-advanced": manifest},
		Capabilities: []string{"ollama"},
		Env:          map[string]string{"OLLAMA_MODEL": "llama3"},
		Services:     map[string]string{"ollama": ollama.URL},
	}})
	chat := func() (*wardv1.JobRecord, map[string]any) {
		t.Helper()
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.chat.advanced", TenantId: "acme", Payload: []byte(`{"message": "ward"}`)})
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("chat job ended %s/%s: %s", rec.GetState(), rec.GetReason(), rec.GetErrorMessage())
		}
		var reply map[string]any
		if err := json.Unmarshal(rec.GetResult(), &reply); err != nil {
			t.Fatalf("reply %q: %v", rec.GetResult(), err)
		}
		return rec, reply
	}

	// The default policy grants the service, whatever port it is on.
	rec, reply := chat()
	if reply["fallback"] == true || reply["reply"] != "ollama says hi to ward" {
		t.Fatalf("the host's Ollama was not reached: %v", reply)
	}
	g := rec.GetSafety().GetConstraints().GetGrants()
	if strings.Join(g.GetServices(), ",") != "ollama" || len(g.GetHttpHosts()) != 0 {
		t.Fatalf("grants %v, want the ollama service and no address", g)
	}
	last := rec.GetEvents()[len(rec.GetEvents())-1]
	if strings.Contains(last.GetMessage(), "warned") {
		t.Errorf("a real answer's last event: %q", last.GetMessage())
	}

	// A policy that does not grant it: the module cannot reach it, answers
	// with its fallback, and the job's last event says so.
	b := defaultBundleWith(t, nil)
	data := strings.Replace(string(b.Files["data.yaml"]), `services: [ollama]`, `services: []`, 1)
	b.Files["data.yaml"] = []byte(data)
	// The default tests check the default grants; these data take one
	// away, so they go, as a user's copy would change them.
	delete(b.Files, "ward_test.rego")
	res, err := safety.Push(context.Background(), e.client.Bus().NATS(), "", b, safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })
	rec, reply = chat()
	if reply["fallback"] != true {
		t.Fatalf("an ungranted service was reached: %v", reply)
	}
	last = rec.GetEvents()[len(rec.GetEvents())-1]
	if !strings.Contains(last.GetMessage(), "the module warned") || !strings.Contains(last.GetMessage(), "fallback") {
		t.Errorf("the fallback answer's last event does not say so: %q", last.GetMessage())
	}
}
