package assembly_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// chatModules are chat-advanced, with its manifest, and echo.
func chatModules(t *testing.T) (map[string][]byte, map[string]*sandbox.Manifest) {
	t.Helper()
	src, err := os.ReadFile("../../modules/chat-advanced/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	man, err := sandbox.ParseManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
			"chat-advanced": wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/chat-advanced"),
			"echo":          wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"),
		},
		map[string]*sandbox.Manifest{"chat-advanced": man}
}

// fakeNvidiaSMI puts on PATH an nvidia-smi that reports one H100, 37% busy,
// as the real one does (host/testdata/nvidia-smi/one.csv).
func fakeNvidiaSMI(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 81559, 37'\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// waitCapability waits until the scheduler's registry shows worker id with
// (want) or without capability c.
func (e *env) waitCapability(t *testing.T, id, c string, want bool) {
	t.Helper()
	checkFor(t, 30*time.Second, func() bool {
		w, ok := e.n.Scheduler.Hosts().Get(id)
		return ok && slices.Contains(w.Capabilities, c) == want
	})
}

// TestChatAdvancedStreamsTokens: chat-advanced streams Ollama's answer as
// job progress; the watcher gets every token, in order, as it is produced,
// and the result holds the whole text. The stand-in sends a token only once
// the watcher has the one before: a system that passed the answer on only
// at the end would never finish it.
func TestChatAdvancedStreamsTokens(t *testing.T) {
	tokens := []string{"Ward", " runs", " jobs", " in", " wasm", " sandboxes", ", héllo", " 世界", "."}
	o := ollamatest.New(t, func(ollamatest.Request) []string { return tokens })

	var (
		mu     sync.Mutex // guards the 3 following
		chunks []string
		seqs   []int64
		states []wardv1.JobState
	)
	arrived := make(chan struct{}, len(tokens)+8)
	o.BeforeToken(func(i int, _ string) {
		if i == 0 {
			return
		}
		deadline := time.After(20 * time.Second)
		for {
			mu.Lock()
			n := len(chunks)
			mu.Unlock()
			if n >= i {
				return
			}
			select {
			case <-arrived:
			case <-deadline:
				t.Errorf("token %d was not streamed to the watcher before token %d was produced", i-1, i)
				return
			}
		}
	})

	mods, mans := chatModules(t)
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: mods, Manifests: mans,
		Env: map[string]string{"OLLAMA_MODEL": "llama3"}, Services: map[string]string{"ollama": o.URL},
		Probes: []host.Probe{host.NewOllamaProbe(o.URL, time.Second, nil)}}})
	e.waitCapability(t, e.n.Host.ID(), "ollama", true)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.chat.advanced", TenantId: "acme", Payload: []byte("tell me about ward")}
	w, err := e.client.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	final, err := e.client.Wait(ctx, req.JobId, w, func(ev *wardv1.JobEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch p := ev.GetProgress(); {
		case p.GetKind() == wardv1.JobProgress_KIND_OUTPUT:
			chunks, seqs = append(chunks, string(p.GetOutput())), append(seqs, p.GetSeq())
			arrived <- struct{}{}
		case p == nil:
			states = append(states, ev.GetState())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	if final.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("ended %s/%s: %s", final.GetState(), final.GetReason(), rec.GetErrorMessage())
	}
	mu.Lock()
	defer mu.Unlock()
	// Each token was produced only once the one before had arrived, so
	// each came in a chunk of its own, numbered in order.
	if !slices.Equal(chunks, tokens) {
		t.Errorf("streamed %q, want %q", chunks, tokens)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Errorf("chunks numbered %v", seqs)
			break
		}
	}
	var reply struct {
		Reply    string `json:"reply"`
		Fallback bool   `json:"fallback"`
	}
	if err := json.Unmarshal(rec.GetResult(), &reply); err != nil || reply.Fallback || reply.Reply != strings.Join(tokens, "") {
		t.Errorf("result %s (%v), want the whole text %q", rec.GetResult(), err, strings.Join(tokens, ""))
	}
	if !slices.Contains(states, wardv1.JobState_JOB_STATE_RUNNING) || states[len(states)-1] != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("states %v", states)
	}
	if reqs := o.Requests(); len(reqs) != 1 || !reqs[0].Stream || reqs[0].Prompt != "tell me about ward" {
		t.Errorf("Ollama was asked %+v", reqs)
	}
}

// runAll submits every request, then waits for each to end, so that they
// run at once; it returns the stored jobs, results included.
func (e *env) runAll(t *testing.T, reqs []*wardv1.JobRequest) []*wardv1.JobRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	watchers := make([]*client.Watcher, len(reqs))
	for i, req := range reqs {
		req.JobId = uuid.NewString()
		w, err := e.client.Watch(req.JobId)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		watchers[i] = w
		if _, err := e.client.Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	recs := make([]*wardv1.JobRecord, len(reqs))
	for i, req := range reqs {
		if _, err := e.client.Wait(ctx, req.JobId, watchers[i], nil); err != nil {
			t.Fatal(err)
		}
		rec, err := e.client.Get(ctx, req.JobId, true)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	return recs
}

// TestGPUHostTakesTheChatJobs: two hosts, one with a GPU (a fake
// nvidia-smi) beside Ollama (the stand-in), one plain. chat-advanced jobs
// land only on the first; echo jobs on both. When Ollama stops, capability
// ollama leaves the first host's heartbeats (and `ward workers`), and a new
// chat-advanced job ends FAILED no_workers.
func TestGPUHostTakesTheChatJobs(t *testing.T) {
	fakeNvidiaSMI(t)
	o := ollamatest.New(t, func(r ollamatest.Request) []string { return []string{"answer ", "to ", r.Prompt} })
	mods, mans := chatModules(t)
	gpuProbe := host.NewGPUProbe(nil)
	defer gpuProbe.Close()
	env := map[string]string{"OLLAMA_MODEL": "llama3"}
	services := map[string]string{"ollama": o.URL}
	e := start(t, assembly.Options{Host: assembly.HostConfig{ID: "gpu-1", Modules: mods, Manifests: mans, MaxParallel: 2, Env: env, Services: services,
		Probes: []host.Probe{gpuProbe, host.NewOllamaProbe(o.URL, time.Second, nil)}}})

	// The plain host: the same modules, and Ollama's address too, but no
	// Ollama probe and no GPU probe.
	e.addHost(t, assembly.HostConfig{ID: "cpu-1", Env: env, Services: services}, mods, mans, false)
	e.waitCapability(t, "gpu-1", "ollama", true)
	e.waitCapability(t, "gpu-1", "gpu", true)
	e.waitWorkers(t, 2)

	ctx := context.Background()
	hbs, err := e.client.Workers(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	caps := map[string][]string{}
	for _, hb := range hbs {
		caps[hb.GetWorkerId()] = hb.GetCapabilities()
		if hb.GetWorkerId() == "gpu-1" && (hb.GetGpuUtilization() != 37 || hb.GetLabels()["gpu.model"] != "NVIDIA H100 80GB HBM3" || hb.GetType() != "gpu") {
			t.Errorf("gpu-1's heartbeat %v", hb)
		}
	}
	for _, c := range []string{"gpu", "gpu:nvidia", "ollama"} {
		if !slices.Contains(caps["gpu-1"], c) || slices.Contains(caps["cpu-1"], c) {
			t.Fatalf("capabilities %v: want %s on gpu-1 only", caps, c)
		}
	}

	// chat-advanced: only the GPU host beside Ollama.
	var chats []*wardv1.JobRequest
	for range 4 {
		chats = append(chats, &wardv1.JobRequest{Topic: "job.chat.advanced", TenantId: "acme", Payload: []byte("hi")})
	}
	for _, rec := range e.runAll(t, chats) {
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || rec.GetWorkerId() != "gpu-1" ||
			!strings.Contains(string(rec.GetResult()), `"reply":"answer to hi"`) {
			t.Errorf("chat job %s on %s: %s/%s %s", rec.GetState(), rec.GetWorkerId(), rec.GetReason(), rec.GetErrorMessage(), rec.GetResult())
		}
	}

	// echo: both hosts. Placement spreads jobs that run at once over the
	// least loaded; a batch that happened to land on one host is run again.
	seen := map[string]int{}
	for batch := 0; batch < 10 && len(seen) < 2; batch++ {
		var echoes []*wardv1.JobRequest
		for range 8 {
			echoes = append(echoes, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("ping")})
		}
		for _, rec := range e.runAll(t, echoes) {
			if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != "ping" {
				t.Fatalf("echo job %s/%s on %s", rec.GetState(), rec.GetReason(), rec.GetWorkerId())
			}
			seen[rec.GetWorkerId()]++
		}
	}
	if seen["gpu-1"] == 0 || seen["cpu-1"] == 0 {
		t.Fatalf("echo jobs ran on %v, want both hosts", seen)
	}

	// Ollama stops: the capability leaves the heartbeats, `ward workers` …
	o.Close()
	checkFor(t, 30*time.Second, func() bool {
		hbs, err := e.client.Workers(ctx, 500*time.Millisecond)
		if err != nil {
			return false
		}
		for _, hb := range hbs {
			if hb.GetWorkerId() == "gpu-1" {
				return !slices.Contains(hb.GetCapabilities(), "ollama") && slices.Contains(hb.GetCapabilities(), "gpu")
			}
		}
		return false
	})
	e.waitCapability(t, "gpu-1", "ollama", false)

	// … and a new chat-advanced job ends FAILED no_workers. Both hosts
	// hold the module, so both are live in pool chat-advanced, but neither
	// meets its requires [ollama]: placement finds no eligible worker
	// (missing_capability), which is not "busy", so admission fails the job
	// at once rather than queue it — a capability that is gone may never
	// come back, and the client learns now. (A scheduler started less than
	// min(5 s, worker TTL) ago would queue it first, in case a heartbeat
	// it has not heard yet brings a host; its pump then ends it the same
	// way.) The test waits for the end, whichever way it comes.
	rec := e.runAll(t, []*wardv1.JobRequest{{Topic: "job.chat.advanced", TenantId: "acme", Payload: []byte("anyone?")}})[0]
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetReason() != "no_workers" {
		t.Fatalf("with Ollama gone, a chat job ended %s/%s on %q, want FAILED/no_workers", rec.GetState(), rec.GetReason(), rec.GetWorkerId())
	}
	last := rec.GetEvents()[len(rec.GetEvents())-1]
	if !strings.Contains(last.GetMessage(), "missing_capability") || !strings.Contains(last.GetMessage(), "chat-advanced") {
		t.Errorf("the no_workers message %q does not say why", last.GetMessage())
	}
	// Echo still runs.
	if rec := e.runAll(t, []*wardv1.JobRequest{{Topic: "job.echo", TenantId: "acme", Payload: []byte("still")}})[0]; rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("echo after Ollama stopped: %s/%s", rec.GetState(), rec.GetReason())
	}
}
