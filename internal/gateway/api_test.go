package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/gateway"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// spec is the OpenAPI document, loaded and validated.
func spec(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(gateway.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, r
}

// TestOpenAPIDescribesEveryRoute: every endpoint the gateway serves is in
// the document, and every operation of the document is served.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc, _ := spec(t)
	gw, err := gateway.New(gateway.Config{Client: adminClientStub(t), Auth: gateway.AuthFunc(nil)})
	if err != nil {
		t.Fatal(err)
	}
	served := gw.Routes()
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("%s is in openapi.yaml but not served", d)
		}
	}
}

// checked records a request and its response and checks both against the
// document.
type checked struct {
	t      *testing.T
	s      *system
	router routers.Router
}

func (c checked) call(key, method, path string, body any, hdr ...string) (int, []byte) {
	c.t.Helper()
	var raw []byte
	if body != nil {
		switch b := body.(type) {
		case string:
			raw = []byte(b)
		default:
			raw, _ = json.Marshal(b)
		}
	}
	status, out := c.s.call(c.t, key, method, path, raw, hdr...)
	c.validate(key, method, path, raw, status, out, hdr...)
	return status, out
}

func (c checked) validate(key, method, path string, raw []byte, status int, out []byte, hdr ...string) {
	c.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Errorf("%s %s: not in the document: %v", method, path, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if status < 400 {
		// A request the gateway accepted must be one the document allows.
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("%s %s: the request is not what the document describes: %v", method, path, err)
		}
	}
	hdrs := http.Header{"Content-Type": []string{"application/json"}}
	if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: hdrs, Body: io.NopCloser(bytes.NewReader(out)),
	}); err != nil {
		c.t.Errorf("%s %s → %d: the response is not what the document describes: %v\n%s", method, path, status, err, out)
	}
}

// TestAPI drives every endpoint with the keys a user would, each answer
// checked against the OpenAPI document.
func TestAPI(t *testing.T) {
	s := start(t, sysOptions{})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}

	// Submit and read back: the result that is JSON is JSON.
	st, b := c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": map[string]any{"hello": "world"}})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	job := s.waitJob(t, s.Acme, id)
	if job["state"] != "SUCCEEDED" || job["tenant_id"] != "acme" {
		t.Fatalf("job: %v", job)
	}
	st, b = c.call(s.Acme, "GET", "/v1/jobs/"+id, nil)
	if st != http.StatusOK {
		t.Fatalf("GET /v1/jobs/{id}: %d %s", st, b)
	}
	job = object(t, b)
	if res, ok := job["result"].(map[string]any); !ok || res["hello"] != "world" {
		t.Errorf("the echo's result is not the JSON sent: %s", b)
	}
	if _, ok := job["created_at_unix_ms"].(float64); !ok {
		t.Errorf("a time is not a number: %s", b)
	}
	evs, _ := job["events"].([]any)
	var states []string
	for _, e := range evs {
		states = append(states, e.(map[string]any)["state"].(string))
	}
	// (A job submitted before the scheduler saw the host waits: PENDING twice.)
	if !slices.Equal(slices.Compact(states), []string{"PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED"}) {
		t.Errorf("events: %v", states)
	}
	if sf, _ := job["safety"].(map[string]any); sf["decision"] == nil {
		t.Errorf("no safety decision: %s", b)
	}

	// A result as text.
	st, b = c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload_text": "plain words"})
	if st != http.StatusAccepted {
		t.Fatalf("submit text: %d %s", st, b)
	}
	if j := s.waitJob(t, s.Acme, object(t, b)["job_id"].(string)); j["result_text"] != "plain words" {
		t.Errorf("text result: %v", j)
	}

	// The idempotency key: the same request is the same job; another is a conflict.
	body := map[string]any{"topic": "job.echo", "payload": 1}
	st, b = c.call(s.Acme, "POST", "/v1/jobs", body, "Idempotency-Key", "k-1")
	first := object(t, b)["job_id"]
	st2, b2 := c.call(s.Acme, "POST", "/v1/jobs", body, "Idempotency-Key", "k-1")
	if st != http.StatusAccepted || st2 != http.StatusOK || object(t, b2)["job_id"] != first || object(t, b2)["duplicate"] != true {
		t.Errorf("idempotent resubmit: %d %s, then %d %s", st, b, st2, b2)
	}
	st, b = c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": 2}, "Idempotency-Key", "k-1")
	if st != http.StatusConflict || errCode(t, b) != "idempotency_conflict" {
		t.Errorf("a reused key with another payload: %d %s, want 409 idempotency_conflict", st, b)
	}

	// Lists: the tenant's own, filters, paging.
	for range 5 {
		c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "x"})
	}
	c.call(s.Other, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "other's"})
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		path := "/v1/jobs?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		st, b = c.call(s.Acme, "GET", path, nil)
		if st != http.StatusOK {
			t.Fatalf("list: %d %s", st, b)
		}
		var l struct {
			Jobs []map[string]any `json:"jobs"`
			Next string           `json:"next_cursor"`
		}
		_ = json.Unmarshal(b, &l)
		for _, j := range l.Jobs {
			if j["tenant_id"] != "acme" {
				t.Errorf("acme's list holds %v", j)
			}
			if seen[j["job_id"].(string)] {
				t.Errorf("job %v twice in the pages", j["job_id"])
			}
			seen[j["job_id"].(string)] = true
		}
		if l.Next == "" {
			break
		}
		cursor = l.Next
		if page > 20 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 8 { // the JSON, the text, the idempotent one, 5 more
		t.Errorf("acme's pages hold %d jobs, want 8", len(seen))
	}
	st, b = c.call(s.Admin, "GET", "/v1/jobs?tenant=other&limit=100", nil)
	if st != http.StatusOK || !strings.Contains(string(b), "other") || strings.Contains(string(b), `"acme"`) {
		t.Errorf("admin's list of tenant other: %d %s", st, b)
	}
	st, b = c.call(s.Acme, "GET", "/v1/jobs?state=SUCCEEDED&topic=job.echo", nil)
	if st != http.StatusOK || strings.Contains(string(b), `"state":"PENDING"`) {
		t.Errorf("filtered list: %d %s", st, b)
	}
	// The payload as submitted, asked for; not without the asking.
	st, b = c.call(s.Acme, "GET", "/v1/jobs/"+id+"?context=true&result=false", nil)
	if ctx, _ := object(t, b)["context"].(map[string]any); st != http.StatusOK || ctx == nil || ctx["hello"] == nil {
		t.Errorf("the job with its context: %d %s", st, b)
	}
	if st, b = c.call(s.Acme, "GET", "/v1/jobs/"+id, nil); strings.Contains(string(b), `"context"`) {
		t.Errorf("the job without asking for its context carries it: %d %s", st, b)
	}
	// since and until as the CLI writes them (README: since=1h): the
	// last hour holds the job, the time before it none.
	st, b = c.call(s.Acme, "GET", "/v1/jobs?since=1h&limit=100", nil)
	if st != http.StatusOK || !strings.Contains(string(b), id) {
		t.Errorf("jobs since 1h: %d %s", st, b)
	}
	st, b = c.call(s.Acme, "GET", "/v1/jobs?until=1h&limit=100", nil)
	if st != http.StatusOK || strings.Contains(string(b), id) {
		t.Errorf("jobs until 1h ago: %d %s", st, b)
	}

	// Cancel: an ended job is a conflict.
	st, b = c.call(s.Acme, "POST", "/v1/jobs/"+id+"/cancel", map[string]any{"reason": "test"})
	if st != http.StatusConflict {
		t.Errorf("cancel of an ended job: %d %s", st, b)
	}
	st, b = c.call(s.Acme, "POST", "/v1/jobs/cancel", map[string]any{"ids": []string{id}})
	if st != http.StatusOK || object(t, b)["failed"].(map[string]any)[id] == nil {
		t.Errorf("bulk cancel of an ended job: %d %s", st, b)
	}

	// A job nothing can run goes to the DLQ, and is retried from it.
	st, b = c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": 1})
	var dlqID string
	if st == http.StatusAccepted {
		dlqID = object(t, b)["job_id"].(string)
		s.waitJob(t, s.Acme, dlqID)
	} else {
		t.Fatalf("submit to an unrouted topic: %d %s", st, b)
	}
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "GET", "/v1/dlq", nil)
		return strings.Contains(string(b), dlqID)
	})
	if _, b := c.call(s.Other, "GET", "/v1/dlq", nil); strings.Contains(string(b), dlqID) {
		t.Errorf("tenant other sees acme's DLQ entry: %s", b)
	}
	if st, b := c.call(s.Other, "POST", "/v1/dlq/"+dlqID+"/retry", nil); st != http.StatusNotFound {
		t.Errorf("tenant other retries acme's DLQ entry: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "POST", "/v1/dlq/"+dlqID+"/retry", nil); st != http.StatusAccepted {
		t.Errorf("retry: %d %s", st, b)
	}
	// Another one is dropped: it leaves the DLQ, the job stays.
	_, b = c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": 2})
	dropID := object(t, b)["job_id"].(string)
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "GET", "/v1/dlq", nil)
		return strings.Contains(string(b), dropID)
	})
	if st, b := c.call(s.Other, "DELETE", "/v1/dlq/"+dropID, nil); st != http.StatusNotFound {
		t.Errorf("tenant other drops acme's DLQ entry: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "DELETE", "/v1/dlq/"+dropID, nil); st != http.StatusOK {
		t.Errorf("drop: %d %s", st, b)
	}
	if _, b := c.call(s.Acme, "GET", "/v1/dlq", nil); strings.Contains(string(b), dropID) {
		t.Errorf("a dropped entry is still listed: %s", b)
	}
	if st, b := c.call(s.Acme, "DELETE", "/v1/dlq/"+dropID, nil); st != http.StatusNotFound {
		t.Errorf("a second drop: %d %s", st, b)
	}
	if st, _ := c.call(s.Acme, "GET", "/v1/jobs/"+dropID, nil); st != http.StatusOK {
		t.Errorf("the dropped job is gone: %d", st)
	}

	// Hosts: capacity, capabilities, modules; credentials for admins only.
	st, b = c.call(s.Acme, "GET", "/v1/hosts", nil)
	if st != http.StatusOK || !strings.Contains(string(b), "gw-host") || !strings.Contains(string(b), "max_parallel_jobs") || strings.Contains(string(b), "credential") {
		t.Errorf("hosts for a tenant: %d %s", st, b)
	}

	// Modules: deploy two versions, roll back through the API.
	wasm := wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := s.Reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: v, Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, wasm); err != nil {
			t.Fatal(err)
		}
	}
	st, b = c.call(s.Acme, "GET", "/v1/modules", nil)
	if st != http.StatusOK || !strings.Contains(string(b), `"hello"`) {
		t.Errorf("modules: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "POST", "/v1/modules/hello/rollback", nil); st != http.StatusForbidden || errCode(t, b) != "forbidden" {
		t.Errorf("a tenant key rolls back: %d %s", st, b)
	}
	if st, b := c.call(s.Admin, "POST", "/v1/modules/nope/rollback", nil); st != http.StatusNotFound {
		t.Errorf("rollback of an unknown module: %d %s", st, b)
	}
	st, b = c.call(s.Admin, "POST", "/v1/modules/hello/rollback", nil)
	if st != http.StatusOK || object(t, b)["version"] != "1.0.0" {
		t.Errorf("rollback: %d %s", st, b)
	}
	st, b = c.call(s.Admin, "GET", "/v1/modules/hello", nil)
	if st != http.StatusOK || object(t, b)["active"].(map[string]any)["version"] != "1.0.0" {
		t.Errorf("module after rollback: %d %s", st, b)
	}

	// The modules hosts serve of their own (the harness's host serves
	// echo from its --modules): listed beside the registry's, source host,
	// with their digests and how many hosts serve each; no rollback
	// (issue 30).
	var listed map[string]map[string]any // source -> name -> module
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/modules", nil)
		var l struct{ Modules []map[string]any }
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("modules: %v: %s", err, b)
		}
		listed = map[string]map[string]any{}
		for _, m := range l.Modules {
			src, _ := m["source"].(string)
			if listed[src] == nil {
				listed[src] = map[string]any{}
			}
			listed[src][m["name"].(string)] = m
		}
		return listed["host"]["echo"] != nil
	})
	if listed["registry"]["hello"] == nil || listed["host"]["hello"] != nil || listed["registry"]["echo"] != nil {
		t.Errorf("modules by source: %v", listed)
	}
	digests, _ := listed["host"]["echo"].(map[string]any)["digests"].([]any)
	if len(digests) != 1 || digests[0].(map[string]any)["hosts"] != float64(1) || !strings.HasPrefix(digests[0].(map[string]any)["digest"].(string), "sha256:") {
		t.Errorf("the host module echo's digests: %v", listed["host"]["echo"])
	}
	if st, b := c.call(s.Acme, "GET", "/v1/modules", nil); st != http.StatusOK || !strings.Contains(string(b), `"source":"host"`) || !strings.Contains(string(b), `"source":"registry"`) {
		t.Errorf("modules: %d %s", st, b)
	}
	st, b = c.call(s.Acme, "GET", "/v1/modules/echo", nil)
	if m := object(t, b); st != http.StatusOK || m["source"] != "host" || m["digests"] == nil || m["active"] != nil {
		t.Errorf("the host module echo: %d %s", st, b)
	}
	st, b = c.call(s.Admin, "POST", "/v1/modules/echo/rollback", nil)
	if st != http.StatusConflict || errCode(t, b) != "conflict" || !strings.Contains(string(b), "serve their own echo") || !strings.Contains(string(b), "ward module deploy echo.wasm") {
		t.Errorf("rollback of a module hosts serve of their own: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "GET", "/v1/modules/nope", nil); st != http.StatusNotFound || errCode(t, b) != "not_found" {
		t.Errorf("an unknown module: %d %s", st, b)
	}

	// Policies: what is in force, an evaluation that denies and says why, the tests.
	st, b = c.call(s.Acme, "GET", "/v1/policies", nil)
	if st != http.StatusOK || object(t, b)["revision"] == "" {
		t.Errorf("policies: %d %s", st, b)
	}
	st, b = c.call(s.Acme, "POST", "/v1/policies/eval", `{"job_id":"x","topic":"sys.destroy","tenant_id":"acme"}`)
	if res, _ := object(t, b)["result"].(map[string]any); st != http.StatusOK || res["decision"] != "DENY" || !strings.Contains(string(b), "topic sys.destroy is forbidden") {
		t.Errorf("eval of a denied input: %d %s", st, b)
	}
	st, b = c.call(s.Admin, "POST", "/v1/policies/test", nil)
	if st != http.StatusOK || object(t, b)["passed"] != true {
		t.Errorf("policy tests: %d %s", st, b)
	}

	// The audit log holds the rollback, by the key.
	st, b = c.call(s.Admin, "GET", "/v1/audit?action=module.rollback", nil)
	if st != http.StatusOK || !strings.Contains(string(b), "hello") || !strings.Contains(string(b), "key:") {
		t.Errorf("audit: %d %s", st, b)
	}

	// Workflows: run the seed demo workflow? It needs an LLM; run an
	// inline definition of echo steps instead.
	def := "name: two\nsteps:\n  - id: a\n    topic: job.echo\n    payload: '${{ input }}'\n  - id: b\n    topic: job.echo\n    depends_on: [a]\n    payload: '${{ steps.a.output }}'\n"
	st, b = c.call(s.Acme, "POST", "/v1/runs", map[string]any{"definition": def, "input": map[string]any{"n": 1}})
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, b)
	}
	runID := object(t, b)["run_id"].(string)
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "GET", "/v1/runs/"+runID, nil)
		return object(t, b)["state"] == "SUCCEEDED"
	})
	if st, b := c.call(s.Other, "GET", "/v1/runs/"+runID, nil); st != http.StatusNotFound {
		t.Errorf("tenant other reads acme's run: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "GET", "/v1/runs", nil); st != http.StatusOK || !strings.Contains(string(b), runID) {
		t.Errorf("runs: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "POST", "/v1/runs/"+runID+"/rerun", map[string]any{"from_step": "b"}); st != http.StatusAccepted {
		t.Errorf("rerun: %d %s", st, b)
	}
	if st, b := c.call(s.Acme, "POST", "/v1/runs/"+runID+"/cancel", nil); st != http.StatusConflict {
		t.Errorf("cancel of an ended run: %d %s", st, b)
	}

	// Health, readiness, metrics.
	if st, b := c.call("", "GET", "/healthz", nil); st != http.StatusOK {
		t.Errorf("healthz: %d %s", st, b)
	}
	if st, b := c.call("", "GET", "/readyz", nil); st != http.StatusOK {
		t.Errorf("readyz: %d %s", st, b)
	}
	st, b = s.call(t, "", "GET", "/metrics", nil)
	if st != http.StatusOK || !strings.Contains(string(b), `ward_gateway_requests_total{code="202",route="POST /v1/jobs"}`) {
		t.Errorf("metrics: %d %.300s", st, b)
	}
	st, b = s.call(t, "", "GET", "/v1/openapi.json", nil)
	if st != http.StatusOK || !strings.Contains(string(b), `"openapi":"3.0.3"`) {
		t.Errorf("openapi.json: %d %.200s", st, b)
	}
}

// TestRefusals: every refusal is a JSON error with its code, and changes
// nothing.
func TestRefusals(t *testing.T) {
	s := start(t, sysOptions{maxBody: 64 << 10})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}
	st, b := c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "mine"})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	s.waitJob(t, s.Acme, id)

	revoked, rec, err := s.Keys.Add(context.Background(), apikeySpec("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Keys.Revoke(context.Background(), rec.ID, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { st, _ := s.call(t, revoked, "GET", "/v1/jobs", nil); return st == http.StatusUnauthorized })

	for _, tc := range []struct {
		name         string
		key          string
		method, path string
		body         any
		status       int
		code         string
	}{
		{"no key", "", "GET", "/v1/jobs/" + id, nil, 401, "unauthenticated"},
		{"a malformed key", "nope", "GET", "/v1/jobs/" + id, nil, 401, "unauthenticated"},
		{"a wrong secret", s.Acme[:len(s.Acme)-4] + "AAAA", "GET", "/v1/jobs/" + id, nil, 401, "unauthenticated"},
		{"a revoked key", revoked, "GET", "/v1/jobs/" + id, nil, 401, "unauthenticated"},
		{"another tenant's job", s.Other, "GET", "/v1/jobs/" + id, nil, 404, "not_found"},
		{"another tenant's cancel", s.Other, "POST", "/v1/jobs/" + id + "/cancel", nil, 404, "not_found"},
		{"another tenant's events", s.Other, "GET", "/v1/jobs/" + id + "/events", nil, 404, "not_found"},
		{"an unknown job", s.Acme, "GET", "/v1/jobs/no-such-job", nil, 404, "not_found"},
		{"a read-only key submits", s.AcmeRO, "POST", "/v1/jobs", map[string]any{"topic": "job.echo"}, 403, "forbidden"},
		{"a read-only key cancels", s.AcmeRO, "POST", "/v1/jobs/" + id + "/cancel", nil, 403, "forbidden"},
		{"a tenant key reads the audit log", s.Acme, "GET", "/v1/audit", nil, 403, "forbidden"},
		{"a tenant key submits for another", s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "tenant": "other"}, 403, "tenant_mismatch"},
		{"a tenant key lists another's", s.Acme, "GET", "/v1/jobs?tenant=other", nil, 403, "forbidden"},
		{"bad JSON", s.Acme, "POST", "/v1/jobs", "{not json", 400, "bad_request"},
		{"an unknown field", s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "bogus": 1}, 400, "bad_request"},
		{"no topic", s.Acme, "POST", "/v1/jobs", map[string]any{"payload": 1}, 400, "bad_request"},
		{"two payloads", s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": 1, "payload_text": "x"}, 400, "bad_request"},
		{"an oversized payload", s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload_text": strings.Repeat("x", 65<<10)}, 413, "input_too_large"},
		{"a bad state filter", s.Acme, "GET", "/v1/jobs?state=SLEEPING", nil, 400, "bad_request"},
		{"a bad limit", s.Acme, "GET", "/v1/jobs?limit=0", nil, 400, "bad_request"},
		{"a bad cursor", s.Acme, "GET", "/v1/jobs?cursor=not-a-cursor", nil, 400, "bad_request"},
		{"a bad time", s.Acme, "GET", "/v1/jobs?since=yesterday", nil, 400, "bad_request"},
		{"a bad Last-Event-ID", s.Acme, "GET", "/v1/jobs/" + id + "/events", nil, 400, "bad_request"},
		{"a rollback of a module the hosts serve of their own", s.Admin, "POST", "/v1/modules/echo/rollback", nil, 409, "conflict"},
		{"a rollback of an unknown module", s.Admin, "POST", "/v1/modules/nope/rollback", nil, 404, "not_found"},
		{"a tenant key asks a policy's impact", s.Acme, "POST", "/v1/policies/impact", map[string]any{"files": map[string]string{}}, 403, "forbidden"},
		{"an impact of a bundle that does not compile", s.Admin, "POST", "/v1/policies/impact",
			map[string]any{"files": map[string]string{"x.rego": "package ward.safety\n\ndeny contains if {"}}, 400, "bad_request"},
		{"an impact of a file that is no bundle's", s.Admin, "POST", "/v1/policies/impact",
			map[string]any{"files": map[string]string{"../x.rego": "package ward.safety"}}, 400, "bad_request"},
		{"an unknown endpoint", s.Acme, "GET", "/v1/nothing", nil, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "a bad Last-Event-ID" {
				hdr = []string{"Last-Event-ID", "yesterday"}
			}
			var st int
			var b []byte
			if tc.name == "an unknown endpoint" || tc.name == "bad JSON" {
				st, b = s.call(t, tc.key, tc.method, tc.path, tc.body, hdr...)
			} else {
				st, b = c.call(tc.key, tc.method, tc.path, tc.body, hdr...)
			}
			if st != tc.status {
				t.Errorf("status %d, want %d: %s", st, tc.status, b)
			}
			if code := errCode(t, b); code != tc.code {
				t.Errorf("code %q, want %q: %s", code, tc.code, b)
			}
			if strings.Contains(string(b), "goroutine ") || strings.Contains(string(b), ".go:") {
				t.Errorf("a stack trace in the answer: %s", b)
			}
		})
	}
	// Nothing changed: acme's job is as it was, and none was added for
	// the refused submissions.
	_, b = s.call(t, s.Admin, "GET", "/v1/jobs?limit=100", nil)
	var l struct{ Jobs []map[string]any }
	_ = json.Unmarshal(b, &l)
	if len(l.Jobs) != 1 || l.Jobs[0]["job_id"] != id || l.Jobs[0]["state"] != "SUCCEEDED" {
		t.Errorf("after the refusals the store holds %s", b)
	}
}

// TestRateLimit: a key over its rate gets 429 with Retry-After; another
// key is not slowed.
func TestRateLimit(t *testing.T) {
	s := start(t, sysOptions{rate: 1, burst: 2})
	var limited *http.Response
	for range 5 {
		resp := s.do(t, s.Acme, "GET", "/v1/jobs", nil)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp
			break
		}
	}
	if limited == nil || limited.Header.Get("Retry-After") == "" {
		t.Fatalf("5 requests in a row at 1/s with a burst of 2 were not limited: %v", limited)
	}
	if st, b := s.call(t, s.Other, "GET", "/v1/jobs", nil); st != http.StatusOK {
		t.Errorf("another key is limited too: %d %s", st, b)
	}
}

// TestEvents follows a job over SSE to its end, then resumes from an
// event id and gets the rest only.
func TestEvents(t *testing.T) {
	s := start(t, sysOptions{})
	// Follow every acme job first.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := s.stream(t, ctx, s.Acme, "/v1/events", "")

	st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "followed"})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	evs := readEvents(t, s.stream(t, context.Background(), s.Acme, "/v1/jobs/"+id+"/events", ""), "SUCCEEDED")
	// The stream is the job's stored log, in order, numbered from 1.
	_, b = s.call(t, s.Acme, "GET", "/v1/jobs/"+id, nil)
	var stored []string
	for _, e := range object(t, b)["events"].([]any) {
		stored = append(stored, e.(map[string]any)["state"].(string))
	}
	var states, ids, want []string
	for i, e := range evs {
		states = append(states, e.data["state"].(string))
		ids = append(ids, e.id)
		want = append(want, fmt.Sprint(i+1))
	}
	if !slices.Equal(states, stored) || !slices.Equal(ids, want) || stored[len(stored)-1] != "SUCCEEDED" {
		t.Errorf("the stream: states %v, ids %v; the stored log: %v", states, ids, stored)
	}
	resumed := readEvents(t, s.stream(t, context.Background(), s.Acme, "/v1/jobs/"+id+"/events", "3"), "SUCCEEDED")
	if len(resumed) != len(stored)-3 || resumed[0].id != "4" || resumed[0].data["state"] != stored[3] {
		t.Errorf("resumed after 3: %v; the stored log: %v", resumed, stored)
	}
	got := readEvents(t, all, "SUCCEEDED")
	if len(got) == 0 || got[len(got)-1].data["job_id"] != id {
		t.Errorf("the tenant's stream: %v", got)
	}
	// Another tenant's stream does not see it.
	octx, ocancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ocancel()
	other := s.stream(t, octx, s.Other, "/v1/events", "0")
	for ev := range other {
		if ev.data["job_id"] == id {
			t.Errorf("tenant other's stream has acme's job: %v", ev)
		}
	}
}

type sseEvent struct {
	id, name string
	data     map[string]any
}

// stream opens an event stream and delivers its events until it ends or
// ctx does.
func (s *system) stream(t *testing.T, ctx context.Context, key, path, lastID string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != nil {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return ch
}

// readEvents reads state events until one in state last, or a minute.
func readEvents(t *testing.T, ch <-chan sseEvent, last string) []sseEvent {
	t.Helper()
	var out []sseEvent
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			if ev.name != "state" {
				continue
			}
			out = append(out, ev)
			if ev.data["state"] == last {
				return out
			}
		case <-timeout:
			t.Fatalf("no %s event within a minute; got %v", last, out)
		}
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeployAndPush deploys a module and pushes a policy through the API,
// as an admin, with their refusals; the pushed deny rule then denies jobs.
func TestDeployAndPush(t *testing.T) {
	s := start(t, sysOptions{})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}
	wasm := wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")
	form := func(fields map[string]string, files map[string][]byte) (string, []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		for k, v := range files {
			fw, _ := mw.CreateFormFile(k, k)
			_, _ = fw.Write(v)
		}
		_ = mw.Close()
		return mw.FormDataContentType(), buf.Bytes()
	}
	deploy := func(key string, fields map[string]string, files map[string][]byte) (int, []byte) {
		ct, body := form(fields, files)
		req, _ := http.NewRequest("POST", s.URL+"/v1/modules", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		// The answer is what the document says.
		vreq := httptest.NewRequest("POST", "/v1/modules", bytes.NewReader(body))
		vreq.Header.Set("Content-Type", ct)
		route, params, _ := router.FindRoute(vreq)
		in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.StatusCode, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)),
		}); err != nil {
			t.Errorf("deploy → %d: not what the document says: %v\n%s", resp.StatusCode, err, b)
		}
		return resp.StatusCode, b
	}
	manifest := []byte("name: hello\nversion: \"2.0.0\"\ntopic: job.hello\npool: hello\n")
	if st, b := deploy(s.Acme, nil, map[string][]byte{"module": wasm, "manifest": manifest}); st != http.StatusForbidden {
		t.Errorf("a tenant key deploys: %d %s", st, b)
	}
	if st, b := deploy(s.Admin, nil, map[string][]byte{"module": []byte("#!/bin/sh\necho not wasm"), "manifest": manifest}); st != http.StatusBadRequest || !strings.Contains(string(b), "nothing was stored") {
		t.Errorf("a file that is not WebAssembly: %d %s", st, b)
	}
	if st, b := deploy(s.Admin, nil, map[string][]byte{"module": wasm, "manifest": []byte("name: [oops")}); st != http.StatusBadRequest {
		t.Errorf("a bad manifest: %d %s", st, b)
	}
	clash := []byte("name: clash\nversion: \"1\"\ntopic: job.echo\npool: clash\n")
	if st, b := deploy(s.Admin, nil, map[string][]byte{"module": wasm, "manifest": clash}); st != http.StatusConflict || errCode(t, b) != "conflict" {
		t.Errorf("a route pools.yaml overrides: %d %s", st, b)
	}
	if _, b := c.call(s.Admin, "GET", "/v1/modules", nil); strings.Contains(string(b), "clash") {
		t.Errorf("a refused deploy stored the module: %s", b)
	}
	st, b := deploy(s.Admin, nil, map[string][]byte{"module": wasm, "manifest": manifest})
	if st != http.StatusCreated || object(t, b)["version"] != "2.0.0" {
		t.Fatalf("deploy: %d %s", st, b)
	}
	// The host serves it: a job to its topic succeeds.
	waitFor(t, func() bool {
		st, b := c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.hello", "payload": "hi"})
		if st != http.StatusAccepted {
			return false
		}
		return s.waitJob(t, s.Acme, object(t, b)["job_id"].(string))["state"] == "SUCCEEDED"
	})

	// A policy: the default bundle plus a deny rule.
	_, b = c.call(s.Admin, "GET", "/v1/policies?files=true", nil)
	files := map[string]string{}
	for k, v := range object(t, b)["files"].(map[string]any) {
		files[k] = v.(string)
	}
	files["extra.rego"] = "package ward.safety\n\ndeny contains \"topic job.hello is closed\" if input.topic == \"job.hello\"\n"
	if st, b := c.call(s.Acme, "PUT", "/v1/policies", map[string]any{"files": files}); st != http.StatusForbidden {
		t.Errorf("a tenant key pushes: %d %s", st, b)
	}
	broken := map[string]string{"ward.rego": "package ward.safety\n\ndeny contains if {"}
	if st, b := c.call(s.Admin, "PUT", "/v1/policies", map[string]any{"files": broken}); st != http.StatusBadRequest {
		t.Errorf("a bundle that does not compile: %d %s", st, b)
	}
	failing := map[string]string{}
	for k, v := range files {
		failing[k] = v
	}
	failing["extra_test.rego"] = "package ward.safety_test\n\nimport data.ward.safety\n\ntest_fails if { 1 == 2 }\n"
	if st, b := c.call(s.Admin, "PUT", "/v1/policies", map[string]any{"files": failing}); st != http.StatusUnprocessableEntity || !strings.Contains(string(b), "test_fails") {
		t.Errorf("a bundle whose tests fail: %d %s", st, b)
	}
	st, b = c.call(s.Admin, "PUT", "/v1/policies", map[string]any{"files": files})
	if st != http.StatusOK {
		t.Fatalf("push: %d %s", st, b)
	}
	rev := object(t, b)["revision"]
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "GET", "/v1/policies", nil)
		return strings.Contains(string(b), fmt.Sprintf(`"revision":%q`, rev)) && object(t, b)["source"] == "bucket"
	})
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.hello", "payload": "hi"})
		j := s.waitJob(t, s.Acme, object(t, b)["job_id"].(string))
		return j["state"] == "DENIED" && strings.Contains(fmt.Sprint(j["safety"]), "topic job.hello is closed")
	})
	if _, b := c.call(s.Admin, "GET", "/v1/audit", nil); !strings.Contains(string(b), "policy.push") || !strings.Contains(string(b), "module.deploy") {
		t.Errorf("the audit log lacks the push or the deploy: %s", b)
	}
}

// TestPolicyImpact: POST /v1/policies/impact asks the system's kernel
// (the harness's node runs it with a bus, so it answers
// sys.safety.impact) what a candidate would change of its recent
// decisions: a deny rule for acme flips acme's jobs from ALLOW to DENY,
// and only acme's; the bundle in force as it is (no files) flips none.
func TestPolicyImpact(t *testing.T) {
	s := start(t, sysOptions{})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}
	var acme []string
	for i := range 3 {
		st, b := c.call(s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": i})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, b)
		}
		acme = append(acme, object(t, b)["job_id"].(string))
	}
	st, b := c.call(s.Other, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "other"})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	other := object(t, b)["job_id"].(string)
	for _, id := range acme {
		if j := s.waitJob(t, s.Acme, id); j["state"] != "SUCCEEDED" {
			t.Fatalf("job %s: %v", id, j)
		}
	}
	s.waitJob(t, s.Other, other)

	type flip struct {
		TenantID string   `json:"tenant_id"`
		From     string   `json:"from"`
		To       string   `json:"to"`
		Reason   string   `json:"reason"`
		Count    int64    `json:"count"`
		JobIDs   []string `json:"job_ids"`
		Topics   []string `json:"topics"`
	}
	type reply struct {
		Revision     string           `json:"revision"`
		BaseRevision string           `json:"base_revision"`
		Kernels      []map[string]any `json:"kernels"`
		Evaluated    int64            `json:"evaluated"`
		Flips        []map[string]any `json:"flips"`
	}
	impact := func(body map[string]any) reply {
		t.Helper()
		st, b := c.call(s.Admin, "POST", "/v1/policies/impact", body)
		if st != http.StatusOK {
			t.Fatalf("impact: %d %s", st, b)
		}
		var r reply
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Kernels) != 1 || r.Kernels[0]["error"] != nil {
			t.Errorf("the kernels' answers: %s", b)
		}
		return r
	}

	deny := impact(map[string]any{"files": map[string]string{
		"x.rego": "package ward.safety\n\ndeny contains \"no more\" if input.tenant_id == \"acme\"\n"}})
	if deny.Evaluated < 4 || deny.Revision == "" || deny.Revision == deny.BaseRevision || deny.BaseRevision == "" {
		t.Errorf("evaluated %d, revision %q on %q", deny.Evaluated, deny.Revision, deny.BaseRevision)
	}
	if len(deny.Flips) != 1 {
		t.Fatalf("flips: %v, want acme's alone", deny.Flips)
	}
	var f flip
	raw, _ := json.Marshal(deny.Flips[0])
	_ = json.Unmarshal(raw, &f)
	if f.TenantID != "acme" || f.From != "ALLOW" || f.To != "DENY" || f.Reason != "no more" || f.Count < 1 ||
		!slices.Contains(f.Topics, "job.echo") || len(f.JobIDs) == 0 || !slices.Contains(acme, f.JobIDs[0]) || slices.Contains(f.JobIDs, other) {
		t.Errorf("the flip: %+v (acme's jobs %v)", f, acme)
	}

	same := impact(map[string]any{"files": map[string]string{}, "base": true})
	if len(same.Flips) != 0 || same.Revision != same.BaseRevision || same.Evaluated < 4 {
		t.Errorf("the bundle in force against itself: %+v", same)
	}
	// Nothing was put in force.
	_, b = c.call(s.Admin, "GET", "/v1/policies", nil)
	if object(t, b)["revision"] != same.Revision {
		t.Errorf("after the impacts the policy in force is %s, want %s", b, same.Revision)
	}
	// base false: the files are the whole bundle, and none is none.
	if st, b := c.call(s.Admin, "POST", "/v1/policies/impact", map[string]any{"files": map[string]string{}, "base": false}); st != http.StatusBadRequest {
		t.Errorf("an empty bundle: %d %s", st, b)
	}
}

// TestEventsStreamTokens: an LLM job's tokens reach an SSE caller as they
// are produced (progress events, in order), before the job ends; the
// stand-in Ollama produces a token only once the caller has the one
// before.
func TestEventsStreamTokens(t *testing.T) {
	tokens := []string{"Ward", " streams", " 42", " tokens", ", héllo", "."}
	o := ollamatest.New(t, func(ollamatest.Request) []string { return tokens })
	got := make(chan string, len(tokens)+8)
	var mu sync.Mutex
	var seen []string
	o.BeforeToken(func(i int, _ string) {
		if i == 0 {
			return
		}
		deadline := time.After(30 * time.Second)
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= i {
				return
			}
			select {
			case <-got:
			case <-deadline:
				t.Errorf("token %d did not reach the SSE caller before token %d was produced", i-1, i)
				return
			}
		}
	})
	src, err := os.ReadFile("../../modules/chat-advanced/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	man, err := sandbox.ParseManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, sysOptions{node: func(opts *assembly.Options) {
		opts.Host.Modules["chat-advanced"] = wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/chat-advanced")
		opts.Host.Manifests = map[string]*sandbox.Manifest{"chat-advanced": man}
		opts.Host.Env = map[string]string{"OLLAMA_MODEL": "llama3"}
		opts.Host.Services = map[string]string{"ollama": o.URL}
		opts.Host.Probes = []host.Probe{host.NewOllamaProbe(o.URL, time.Second, nil)}
	}})
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/hosts", nil)
		return strings.Contains(string(b), `"ollama"`)
	})
	st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.chat.advanced", "payload_text": "tell me about ward"})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last map[string]any
	for ev := range s.stream(t, ctx, s.Acme, "/v1/jobs/"+id+"/events", "") {
		switch ev.name {
		case "progress":
			if text, ok := ev.data["output_text"].(string); ok {
				mu.Lock()
				seen = append(seen, text)
				mu.Unlock()
				got <- text
			}
		case "state":
			last = ev.data
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "") != strings.Join(tokens, "") {
		t.Errorf("the stream's tokens: %q, want %q", seen, tokens)
	}
	if last["state"] != "SUCCEEDED" {
		t.Errorf("the stream's last state: %v", last)
	}
}
