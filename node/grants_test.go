package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/testing/wasmtest"
	"github.com/ward-run/ward/node"
	"github.com/ward-run/ward/safety"
	"github.com/ward-run/ward/sandbox"
)

// TestHTTPGrantsFollowThePolicy: chat-advanced's manifest asks for any
// host; the policy grants only the ones data.modules lists. An Ollama the
// policy does not grant cannot be reached (the module answers with its
// fallback, and says why); once a pushed policy grants its host, the next
// job reaches it. Policy, scheduler, host and sandbox are all real.
func TestHTTPGrantsFollowThePolicy(t *testing.T) {
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
	u, err := url.Parse(ollama.URL)
	if err != nil {
		t.Fatal(err)
	}

	src, err := os.ReadFile("../modules/chat-advanced/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := sandbox.ParseManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, node.Options{
		Modules:      map[string][]byte{"chat-advanced": wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/chat-advanced")},
		Manifests:    map[string]*sandbox.Manifest{"chat-advanced": manifest},
		Capabilities: []string{"ollama"},
		Env:          map[string]string{"OLLAMA_URL": ollama.URL, "OLLAMA_MODEL": "llama3"},
	})
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

	// The default policy grants chat-advanced the Ollama on its usual
	// port only: not this one.
	rec, reply := chat()
	if reply["fallback"] != true || !strings.Contains(reply["error"].(string), "not granted") {
		t.Fatalf("an ungranted host was reached: %v", reply)
	}
	if g := rec.GetSafety().GetConstraints().GetGrants(); strings.Contains(strings.Join(g.GetHttpHosts(), ","), u.Host) {
		t.Fatalf("grants %v", g)
	}

	// A policy that grants this host: the next job reaches it.
	b := defaultBundleWith(t, nil)
	data := strings.Replace(string(b.Files["data.yaml"]), `http_hosts: ["localhost:11434", "127.0.0.1:11434"]`,
		`http_hosts: ["`+u.Host+`"]`, 1)
	b.Files["data.yaml"] = []byte(data)
	// The default tests check the default Ollama host; these data grant
	// another, so they go, as a user's copy would change them.
	delete(b.Files, "ward_test.rego")
	res, err := safety.Push(context.Background(), e.client.Bus().NATS(), "", b, safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })
	rec, reply = chat()
	if reply["fallback"] == true || reply["reply"] != "ollama says hi to ward" {
		t.Fatalf("the granted host was not reached: %v", reply)
	}
	if g := rec.GetSafety().GetConstraints().GetGrants(); strings.Join(g.GetHttpHosts(), ",") != u.Host {
		t.Errorf("grants %v, want only %s", g, u.Host)
	}
}
