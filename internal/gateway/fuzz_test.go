package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
)

// fuzzMaxBody is the body limit of the fuzzed requests (Config.MaxBody's
// part): small, so that the fuzzer reaches it.
const fuzzMaxBody = 2048

// The principals a fuzzed request comes from: a tenant's submit key, and
// an admin's.
var (
	fuzzTenant = Principal{KeyID: "k1", Tenant: "acme", Scopes: []string{ScopeSubmit, ScopeRead}}
	fuzzAdmin  = Principal{KeyID: "k2", Tenant: "ops", Scopes: []string{ScopeAdmin}}
)

// The bodies the gateway decodes (decode), by the fuzz target's kind.
var fuzzBodies = []func() any{
	func() any { return &SubmitRequest{} },     // POST /v1/jobs
	func() any { return &RunRequest{} },        // POST /v1/runs
	func() any { return &RerunRequest{} },      // POST /v1/runs/{id}/rerun
	func() any { return &BulkCancelRequest{} }, // POST /v1/jobs/cancel
	func() any { return &CancelRequest{} },     // POST /v1/jobs/{id}/cancel, /v1/runs/{id}/cancel
	func() any { return &PushRequest{} },       // PUT /v1/policies
}

// FuzzRequestBody feeds the gateway's body decoder, and the checks each
// endpoint makes of what it decoded, arbitrary bodies (kind picks the
// endpoint, admin the key). A body decode accepts is one JSON value,
// within the body limit, which re-encodes to JSON that decodes to the
// same request; a body refused is a 400 (or the body limit's error, only
// past the limit), never a zero request taken for one. Past decode: a
// job a key may submit has a topic, exactly the payload the body gives
// in its one form, a valid tenant, the key's own unless it is an admin's,
// an id, the idempotency key the body or the header gives, a budget only
// when it asks for one; a run has a workflow or a definition, JSON input
// and a tenant the key may run for; a bulk cancel names jobs, within the
// limit of 1 to 1000.
func FuzzRequestBody(f *testing.F) {
	for kind, bodies := range [][]string{
		{`{"topic": "job.echo", "payload": {"a": [1, 2.5e3, null]}, "priority": 5, "labels": {"team": "core"}, "deadline_ms": 30000}`,
			`{"topic": "job.echo", "payload_text": "héllo", "job_id": "j1", "idempotency_key": "k", "tenant": "acme"}`,
			`{"topic": "job.echo", "payload_base64": "aGVsbG8=", "requires": ["gpu"], "env": {"A": "b"}, "pool": "gpu", "max_retries": 2}`,
			`{"topic": "job.echo", "payload": 1, "payload_text": "x"}`,
			`{"topic": " ", "tenant": "globex"}`,
			`{"topic": "job.echo", "payload_base64": "%%%"}`,
			`{"topic": "job.echo", "tenant": "Not Valid"}`,
			`{"topic": "job.echo", "payload": null}`,
			`{"TOPIC": "job.echo", "priority": 2147483648}`,
			`{"topic": "job.echo"}]`,
			`{"topic": "job.echo"}}`,
			`{"topic": "job.echo"} {"topic": "job.x"}`,
			`{"topic": "job.echo", "extra": 1}`,
			`{"topic": "job.echo", "payload_text": "` + strings.Repeat("x", fuzzMaxBody) + `"}`,
			`[]`, `null`, ``},
		{`{"workflow": "demo", "input": {"instruction": "add a docstring"}}`,
			`{"definition": "name: w\nsteps:\n  - {id: a, topic: job.echo}\n", "run_id": "r1", "tenant": "globex"}`,
			`{"workflow": "demo", "input": "x"}`, `{"input": {}}`, `{"workflow": "demo", "input": {"a": }}`},
		{`{"from_step": "lint", "input": {"dir": "/srv"}}`, `{"input": {}}`},
		{`{"ids": ["j1", "j2"], "reason": "stop"}`, `{"state": "RUNNING", "topic": "job.echo", "limit": 5000}`, `{"limit": -1}`,
			`{"ids": ["a"], "limit": 1}`},
		{`{"reason": "done"}`, `{}`},
		{`{"files": {"fuzz/policy.rego": "package fuzz\n", "data.json": "{}"}}`, `{"files": {}}`},
	} {
		for _, b := range bodies {
			f.Add(uint8(kind), b, false, "")
			f.Add(uint8(kind), b, true, "idem-1")
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body string, admin bool, idem string) {
		p := fuzzTenant
		if admin {
			p = fuzzAdmin
		}
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		if idem != "" {
			r.Header.Set("Idempotency-Key", idem)
		}
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, fuzzMaxBody)
		v := fuzzBodies[int(kind)%len(fuzzBodies)]()
		if err := decode(r, v); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				if len(body) <= fuzzMaxBody {
					t.Fatalf("a body of %d bytes is over the limit of %d", len(body), fuzzMaxBody)
				}
				return
			}
			checkRefusal(t, err, http.StatusBadRequest)
			return
		}
		if len(body) > fuzzMaxBody {
			t.Fatalf("accepted a body of %d bytes, over the limit of %d", len(body), fuzzMaxBody)
		}
		if !json.Valid([]byte(body)) {
			t.Fatalf("accepted a body that is not one JSON value: %q", body)
		}
		// It re-encodes to JSON that decodes to the same request.
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("a request decoded does not encode: %v", err)
		}
		again := fuzzBodies[int(kind)%len(fuzzBodies)]()
		if err := decode(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(out)), again); err != nil {
			t.Fatalf("a request re-encoded is refused: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(compacted(t, v), compacted(t, again)) {
			t.Fatalf("a request changes through JSON: %+v, then %+v", v, again)
		}
		switch in := v.(type) {
		case *SubmitRequest:
			checkSubmit(t, r, p, in)
		case *RunRequest:
			req, err := runRequest(*in, p)
			if err != nil {
				checkRefusal(t, err, http.StatusBadRequest, http.StatusForbidden)
				if req != nil {
					t.Fatal("a run and an error")
				}
				return
			}
			if req.GetName() == "" && len(req.GetDefinition()) == 0 {
				t.Fatal("a run of nothing")
			}
			if len(req.GetInput()) > 0 && !json.Valid(req.GetInput()) {
				t.Fatalf("a run of input %q", req.GetInput())
			}
			if req.GetTenantId() != p.Tenant && (!p.Admin() || req.GetTenantId() != in.Tenant) {
				t.Fatalf("key of tenant %s (admin %v) runs for %q", p.Tenant, p.Admin(), req.GetTenantId())
			}
		case *BulkCancelRequest:
			if err := in.check(); err != nil {
				checkRefusal(t, err, http.StatusBadRequest)
				return
			}
			if in.Limit < 1 || in.Limit > 1000 || len(in.IDs) > in.Limit || (len(in.IDs) == 0 && in.State == "" && in.Topic == "") {
				t.Fatalf("a bulk cancel of %d ids, limit %d, state %q, topic %q", len(in.IDs), in.Limit, in.State, in.Topic)
			}
		}
	})
}

// checkSubmit checks what jobRequest makes of a decoded submission.
func checkSubmit(t *testing.T, r *http.Request, p Principal, in *SubmitRequest) {
	t.Helper()
	body := *in
	req, err := jobRequest(r, p, in)
	if err != nil {
		checkRefusal(t, err, http.StatusBadRequest, http.StatusForbidden)
		if req != nil {
			t.Fatal("a job and an error")
		}
		return
	}
	forms := 0
	var want []byte
	if len(body.Payload) > 0 {
		forms++
		want = body.Payload
	}
	if body.PayloadText != nil {
		forms++
		want = []byte(*body.PayloadText)
	}
	if body.PayloadBase64 != "" {
		forms++
		want, err = base64.StdEncoding.DecodeString(body.PayloadBase64)
		if err != nil {
			t.Fatalf("accepted payload_base64 %q: %v", body.PayloadBase64, err)
		}
	}
	switch {
	case strings.TrimSpace(req.GetTopic()) == "" || req.GetTopic() != body.Topic:
		t.Fatalf("a job of topic %q from %q", req.GetTopic(), body.Topic)
	case forms > 1:
		t.Fatalf("accepted %d forms of payload", forms)
	case !bytes.Equal(req.GetPayload(), want):
		t.Fatalf("the job's payload is %q, the body's %q", req.GetPayload(), want)
	case auth.ValidName("tenant", req.GetTenantId()) != nil:
		t.Fatalf("a job of tenant %q", req.GetTenantId())
	case req.GetTenantId() != p.Tenant && (!p.Admin() || req.GetTenantId() != body.Tenant):
		t.Fatalf("key of tenant %s (admin %v) submits for %q", p.Tenant, p.Admin(), req.GetTenantId())
	case req.GetJobId() == "" || (body.JobID != "" && req.GetJobId() != body.JobID):
		t.Fatalf("job id %q for %q", req.GetJobId(), body.JobID)
	case (body.DeadlineMS > 0 || body.MaxRetries > 0) != (req.GetBudget() != nil):
		t.Fatalf("a budget %v for deadline %d, retries %d", req.GetBudget(), body.DeadlineMS, body.MaxRetries)
	}
	if h := r.Header.Get("Idempotency-Key"); h != "" && req.GetIdempotencyKey() != h || h == "" && req.GetIdempotencyKey() != body.IdempotencyKey {
		t.Fatalf("idempotency key %q from header %q, body %q", req.GetIdempotencyKey(), h, body.IdempotencyKey)
	}
}

// checkRefusal checks that err is an API error of one of the statuses,
// with a code and a message.
func checkRefusal(t *testing.T, err error, statuses ...int) {
	t.Helper()
	var ae *apiError
	if !errors.As(err, &ae) || !slices.Contains(statuses, ae.Status) || ae.Code == "" || ae.Message == "" {
		t.Fatalf("refused with %v (%T), want an API error of status %v", err, err, statuses)
	}
}

// compacted is v with its raw JSON members written canonically: encoding
// a request compacts them and escapes <, > and & in their strings, and
// that is all it may change.
func compacted(t *testing.T, v any) any {
	t.Helper()
	c := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 {
			return raw
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("raw JSON %q does not decode: %v", raw, err)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	switch in := v.(type) {
	case *SubmitRequest:
		out := *in
		out.Payload = c(in.Payload)
		return out
	case *RunRequest:
		out := *in
		out.Input = c(in.Input)
		return out
	case *RerunRequest:
		out := *in
		out.Input = c(in.Input)
		return out
	}
	return v
}

// FuzzListQuery feeds the job list's query (GET /v1/jobs?...) arbitrary
// strings. A query accepted asks for 1 to 1000 jobs, in a state that is
// one, of the key's own tenant unless the key is an admin's; one refused
// is a 400, or a 403 for another tenant's jobs.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "limit=10&state=RUNNING&topic=job.echo", "state=JOB_STATE_FAILED&since=2026-01-02T03:04:05Z&until=1700000000000",
		"limit=0", "limit=1001", "limit=1e3", "state=running", "state=NOPE", "tenant=acme", "tenant=globex", "since=yesterday",
		"cursor=abc&limit=1000", "limit=%zz", "state=0"} {
		f.Add(q, false)
		f.Add(q, true)
	}
	f.Fuzz(func(t *testing.T, query string, admin bool) {
		p := fuzzTenant
		if admin {
			p = fuzzAdmin
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
		r.URL.RawQuery = query
		q, err := listQuery(r, p)
		if err != nil {
			checkRefusal(t, err, http.StatusBadRequest, http.StatusForbidden)
			return
		}
		v, _ := url.ParseQuery(query)
		switch {
		case q.GetLimit() < 1 || q.GetLimit() > 1000:
			t.Fatalf("a list of %d jobs", q.GetLimit())
		case v.Get("state") != "" && !sameState(v.Get("state"), q.GetState()):
			t.Fatalf("state %q read as %v", v.Get("state"), q.GetState())
		case !p.Admin() && q.GetTenant() != "":
			t.Fatalf("a tenant's key lists tenant %q", q.GetTenant())
		case !p.Admin() && v.Get("tenant") != "" && v.Get("tenant") != p.Tenant:
			t.Fatalf("a tenant's key lists tenant %q's jobs", v.Get("tenant"))
		case p.Admin() && q.GetTenant() != v.Get("tenant"):
			t.Fatalf("an admin asked for tenant %q, got %q", v.Get("tenant"), q.GetTenant())
		}
	})
}

// sameState reports whether param names state: its name, with or
// without the JOB_STATE_ prefix, in any case.
func sameState(param string, state wardv1.JobState) bool {
	s := strings.ToUpper(strings.TrimSpace(param))
	return state.String() == s || state.String() == "JOB_STATE_"+s
}
