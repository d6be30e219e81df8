package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestDevGateway: ward dev's gateway deploys a module and pushes a policy
// signed as the CLI's are (its hosts and kernel refuse unsigned ones), and
// serves the dashboard's login page.
func TestDevGateway(t *testing.T) {
	dev, _ := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t))
	defer dev.stop(t)
	key := dashboardKey(t, dev)
	var base string
	for _, line := range strings.Split(dev.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "dashboard:"); ok {
			base = strings.TrimSuffix(strings.Fields(rest)[0], "/ui/")
		}
	}
	call := func(method, path, ct string, body []byte) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("module", "hi.wasm")
	_, _ = fw.Write(wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"))
	fw, _ = mw.CreateFormFile("manifest", "hi.yaml")
	_, _ = fw.Write([]byte("name: hi\nversion: \"1\"\ntopic: job.hi\npool: hi\n"))
	_ = mw.Close()
	st, a := call("POST", "/v1/modules", mw.FormDataContentType(), form.Bytes())
	if st != http.StatusCreated || a["signed"] != true {
		t.Fatalf("deploy through the API: %d %v", st, a)
	}
	submit := func(topic string) map[string]any {
		t.Helper()
		st, rep := call("POST", "/v1/jobs", "application/json", []byte(`{"topic":"`+topic+`","payload":"hi"}`))
		if st != http.StatusAccepted {
			t.Fatalf("submit %s: %d %v", topic, st, rep)
		}
		var job map[string]any
		poll.Until(t, time.Minute, "the job ends", func() bool {
			_, job = call("GET", "/v1/jobs/"+rep["job_id"].(string), "", nil)
			switch job["state"] {
			case "SUCCEEDED", "FAILED", "DENIED", "TIMEOUT", "CANCELLED":
				return true
			}
			return false
		})
		return job
	}
	poll.Until(t, 2*time.Minute, "the signed module serves job.hi", func() bool { return submit("job.hi")["state"] == "SUCCEEDED" })

	_, pol := call("GET", "/v1/policies?files=true", "", nil)
	files := pol["files"].(map[string]any)
	files["closed.rego"] = "package ward.safety\n\ndeny contains \"job.hi is closed\" if input.topic == \"job.hi\"\n"
	body, _ := json.Marshal(map[string]any{"files": files})
	if st, res := call("PUT", "/v1/policies", "application/json", body); st != http.StatusOK || res["signed"] != true {
		t.Fatalf("push through the API: %d %v", st, res)
	}
	poll.Until(t, time.Minute, "the kernel enforces the pushed rule", func() bool { return submit("job.hi")["state"] == "DENIED" })

	resp, err := http.Get(base + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<form") {
		t.Errorf("the dashboard's login page: %d\n%.300s", resp.StatusCode, b)
	}
}
