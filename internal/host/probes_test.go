package host

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

func TestParseSMI(t *testing.T) {
	for _, tc := range []struct {
		file    string
		count   int
		model   string
		memMB   string
		busiest float64
	}{
		{file: "one.csv", count: 1, model: "NVIDIA H100 80GB HBM3", memMB: "81559", busiest: 37},
		{file: "four.csv", count: 4, model: "NVIDIA A100-SXM4-40GB", memMB: "40960", busiest: 93},
		{file: "na.csv", count: 2, model: "NVIDIA GeForce GTX 1080", memMB: "8192", busiest: 20},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, err := os.ReadFile("testdata/nvidia-smi/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			gpus, err := parseSMI(out)
			if err != nil {
				t.Fatal(err)
			}
			hb := &wardv1.Heartbeat{Type: "cpu", Capabilities: []string{"x"}}
			applyGPUs(hb, gpus)
			if hb.GetLabels()["gpu.count"] != strconv.Itoa(tc.count) || hb.GetLabels()["gpu.model"] != tc.model ||
				hb.GetLabels()["gpu.memory_mb"] != tc.memMB || hb.GetGpuUtilization() != tc.busiest || hb.GetType() != "gpu" {
				t.Errorf("heartbeat %v", hb)
			}
			if !slices.Equal(hb.GetCapabilities(), []string{"x", "gpu", "gpu:nvidia"}) {
				t.Errorf("capabilities %v", hb.GetCapabilities())
			}
		})
	}
	if _, err := parseSMI([]byte("just one field\n")); err == nil {
		t.Error("a line with one field parsed")
	}
	gpus, err := parseSMI(nil)
	if err != nil || len(gpus) != 0 {
		t.Fatalf("empty output: %v %v", gpus, err)
	}
	hb := &wardv1.Heartbeat{Type: "cpu"}
	applyGPUs(hb, gpus)
	if hb.GetType() != "cpu" || len(hb.GetCapabilities()) != 0 || hb.GetGpuUtilization() != 0 {
		t.Errorf("no GPU changed the heartbeat: %v", hb)
	}
}

// TestNVML runs the real NVML path where a GPU exists.
func TestNVML(t *testing.T) {
	src, err := openNVML()
	if err != nil {
		t.Skipf("no NVML on this machine (%v): the nvidia-smi parser is tested from recorded output", err)
	}
	defer func() {
		if err := src.close(); err != nil {
			t.Error(err)
		}
	}()
	gpus, err := src.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) == 0 || gpus[0].Model == "" || gpus[0].MemoryMB == 0 {
		t.Fatalf("NVML read %+v", gpus)
	}
	t.Logf("NVML: %+v", gpus)
}

func TestGPUProbeWithoutGPU(t *testing.T) {
	p := &GPUProbe{} // what NewGPUProbe returns where there is no source
	hb := &wardv1.Heartbeat{}
	p.Observe(context.Background(), hb)
	if len(hb.GetCapabilities()) != 0 || hb.GetGpuUtilization() != 0 {
		t.Fatalf("%v", hb)
	}
}

// ollamaStandIn answers /api/version and /api/tags while up is true.
func ollamaStandIn(t *testing.T, up *atomic.Bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		switch r.URL.Path {
		case "/api/version":
			w.Write([]byte(`{"version":"0.5.7"}`))
		case "/api/tags":
			w.Write([]byte(`{"models":[{"name":"llama3:latest"},{"name":"codellama:7b"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOllamaProbeFollowsTheServer(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	srv := ollamaStandIn(t, &up)
	p := NewOllamaProbe(srv.URL, 0, nil)
	ctx := context.Background()

	p.probe(ctx)
	hb := &wardv1.Heartbeat{}
	p.Observe(ctx, hb)
	if !slices.Contains(hb.GetCapabilities(), "ollama") || hb.GetLabels()["ollama.version"] != "0.5.7" ||
		hb.GetLabels()["ollama.model.llama3:latest"] != "true" || hb.GetLabels()["ollama.models"] != "codellama:7b,llama3:latest" {
		t.Fatalf("up: %v", hb)
	}

	up.Store(false)
	p.probe(ctx)
	hb = &wardv1.Heartbeat{}
	p.Observe(ctx, hb)
	if len(hb.GetCapabilities()) != 0 || len(hb.GetLabels()) != 0 {
		t.Fatalf("down: %v", hb)
	}

	up.Store(true)
	p.probe(ctx)
	if !p.reachable() {
		t.Fatal("did not come back")
	}

	srv.Close()
	p.probe(ctx)
	if p.reachable() {
		t.Fatal("a closed server counts as up")
	}
}

// TestOllamaProbeToleratesLateAnswers: an Ollama that answers late (a
// machine under load) stays up for slowDown-1 probes in a row, then
// counts as gone; an answer in time resets the count.
func TestOllamaProbeToleratesLateAnswers(t *testing.T) {
	var up, slow atomic.Bool
	up.Store(true)
	fast := ollamaStandIn(t, &up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			time.Sleep(300 * time.Millisecond)
		}
		resp, err := http.Get(fast.URL + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		// A late answer's copy fails when the probe (100 ms) has given
		// up on it: that is the case under test, not an error.
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	p := NewOllamaProbe(srv.URL, 0, nil)
	p.client.Timeout = 100 * time.Millisecond
	ctx := context.Background()
	p.probe(ctx)
	if !p.reachable() {
		t.Fatal("not up at first")
	}
	slow.Store(true)
	for i := range slowDown - 1 {
		p.probe(ctx)
		if !p.reachable() {
			t.Fatalf("gone after %d late answers, want %d", i+1, slowDown)
		}
	}
	slow.Store(false)
	p.probe(ctx) // in time: the count starts again
	slow.Store(true)
	for range slowDown - 1 {
		p.probe(ctx)
	}
	if !p.reachable() {
		t.Fatal("gone: an answer in time did not reset the count")
	}
	p.probe(ctx)
	if p.reachable() {
		t.Fatalf("still up after %d late answers in a row", slowDown)
	}
	hb := &wardv1.Heartbeat{}
	p.Observe(ctx, hb)
	if slices.Contains(hb.GetCapabilities(), "ollama") {
		t.Errorf("a gone Ollama still advertised: %v", hb.GetCapabilities())
	}
}
