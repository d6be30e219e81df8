package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestPolicyHistoryRollback: push A (which denies tenant other's echo
// jobs), then B (the bundle in force before, which allows them); GET
// /v1/policies/history lists both, B in force; POST
// /v1/policies/rollback puts A back, the system's kernel enforces it (a
// job of other's is denied again) and the history shows the rollback; a
// revision the bucket does not keep is 404. A tenant key gets 403 from
// both endpoints, and its Policies page has no history. On the admin's
// page, the history's Rollback form (a plain POST with the CSRF token)
// puts B back, and the page says so; without the token it is refused.
func TestPolicyHistoryRollback(t *testing.T) {
	s := start(t, sysOptions{})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}

	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/policies/history", nil},
		{"POST", "/v1/policies/rollback", map[string]any{"kv_revision": 1}},
	} {
		if st, b := c.call(s.Acme, tc.method, tc.path, tc.body); st != http.StatusForbidden || errCode(t, b) != "forbidden" {
			t.Errorf("a tenant key: %s %s → %d %s", tc.method, tc.path, st, b)
		}
	}

	type entry struct {
		KVRevision uint64 `json:"kv_revision"`
		Revision   string `json:"revision"`
		PushedBy   string `json:"pushed_by"`
		RollbackOf uint64 `json:"rollback_of"`
		InForce    bool   `json:"in_force"`
		Signed     bool   `json:"signed"`
	}
	history := func() []entry {
		t.Helper()
		st, b := c.call(s.Admin, "GET", "/v1/policies/history", nil)
		var h struct {
			Bucket    string  `json:"bucket"`
			Revisions []entry `json:"revisions"`
		}
		if err := json.Unmarshal(b, &h); err != nil || st != http.StatusOK || h.Bucket != "ward_policy" {
			t.Fatalf("history: %d %v %s", st, err, b)
		}
		return h.Revisions
	}
	if h := history(); len(h) != 0 {
		t.Fatalf("history before any push: %+v", h)
	}
	if st, b := c.call(s.Admin, "POST", "/v1/policies/rollback", map[string]any{"kv_revision": 1}); st != http.StatusNotFound || errCode(t, b) != "not_found" {
		t.Errorf("a rollback with no history: %d %s", st, b)
	}

	// kernelOn waits until the system's kernel enforces rev.
	kernelOn := func(rev string) {
		t.Helper()
		waitFor(t, func() bool {
			_, b := c.call(s.Admin, "GET", "/v1/policies", nil)
			ks, _ := object(t, b)["kernels"].([]any)
			return len(ks) == 1 && ks[0].(map[string]any)["revision"] == rev
		})
	}
	// otherEcho runs an echo job of tenant other's and returns its state.
	otherEcho := func() string {
		t.Helper()
		st, b := c.call(s.Other, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": "hi"})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, b)
		}
		return fmt.Sprint(s.waitJob(t, s.Other, object(t, b)["job_id"].(string))["state"])
	}
	push := func(files map[string]string) string {
		t.Helper()
		st, b := c.call(s.Admin, "PUT", "/v1/policies", map[string]any{"files": files})
		if st != http.StatusOK {
			t.Fatalf("push: %d %s", st, b)
		}
		rev := object(t, b)["revision"].(string)
		kernelOn(rev)
		return rev
	}

	_, b := c.call(s.Admin, "GET", "/v1/policies?files=true", nil)
	filesB := map[string]string{}
	for k, v := range object(t, b)["files"].(map[string]any) {
		filesB[k] = v.(string)
	}
	filesA := maps.Clone(filesB)
	filesA["other.rego"] = "package ward.safety\n\ndeny contains \"other may not echo\" if input.tenant_id == \"other\"\n"
	revA := push(filesA)
	if st := otherEcho(); st != "DENIED" {
		t.Fatalf("other's echo under A: %s", st)
	}
	revB := push(filesB)
	if st := otherEcho(); st != "SUCCEEDED" {
		t.Fatalf("other's echo under B: %s", st)
	}

	h := history()
	if len(h) != 2 || h[0].Revision != revB || !h[0].InForce || h[1].Revision != revA || h[1].InForce || h[0].Signed ||
		!strings.HasPrefix(h[0].PushedBy, "key:") {
		t.Fatalf("history after two pushes: %+v", h)
	}
	kvA, kvB := h[1].KVRevision, h[0].KVRevision

	for _, tc := range []struct {
		body   any
		status int
		code   string
	}{
		{map[string]any{"kv_revision": kvB + 100}, 404, "not_found"},
		{map[string]any{"kv_revision": 0}, 400, "bad_request"},
		{map[string]any{"revision": revA}, 400, "bad_request"},
	} {
		if st, b := c.call(s.Admin, "POST", "/v1/policies/rollback", tc.body); st != tc.status || errCode(t, b) != tc.code {
			t.Errorf("rollback %v: %d %s, want %d %s", tc.body, st, b, tc.status, tc.code)
		}
	}
	st, b := c.call(s.Admin, "POST", "/v1/policies/rollback", map[string]any{"kv_revision": kvB})
	if st != http.StatusOK || object(t, b)["unchanged"] != true {
		t.Errorf("a rollback to the revision in force: %d %s", st, b)
	}

	// What a rollback to A would change, before it is made: other's echo,
	// allowed under B, denied again (POST /v1/policies/impact with the
	// kept revision), as `ward policy rollback` shows it first.
	st, b = c.call(s.Admin, "POST", "/v1/policies/impact", map[string]any{"kv_revision": kvA})
	if o := object(t, b); st != http.StatusOK || o["revision"] != revA || o["base_revision"] != revB || o["in_force"] == true ||
		!strings.Contains(string(b), `"tenant_id":"other"`) || !strings.Contains(string(b), `"to":"DENY"`) || !strings.Contains(string(b), "other may not echo") {
		t.Errorf("the impact of a rollback to A: %d %s", st, b)
	}
	if st, b := c.call(s.Admin, "POST", "/v1/policies/impact", map[string]any{"kv_revision": kvB}); st != http.StatusOK || object(t, b)["in_force"] != true {
		t.Errorf("the impact of a rollback to the revision in force: %d %s", st, b)
	}
	for _, tc := range []struct {
		body   any
		status int
		code   string
	}{
		{map[string]any{"kv_revision": kvB + 100}, 404, "not_found"},
		{map[string]any{"kv_revision": kvA, "files": map[string]string{"x.rego": "package ward.safety"}}, 400, "bad_request"},
	} {
		if st, b := c.call(s.Admin, "POST", "/v1/policies/impact", tc.body); st != tc.status || errCode(t, b) != tc.code {
			t.Errorf("impact %v: %d %s, want %d %s", tc.body, st, b, tc.status, tc.code)
		}
	}

	st, b = c.call(s.Admin, "POST", "/v1/policies/rollback", map[string]any{"kv_revision": kvA})
	if o := object(t, b); st != http.StatusOK || o["revision"] != revA || o["unchanged"] != false || o["rolled_back_to"] != float64(kvA) {
		t.Fatalf("rollback to A: %d %s", st, b)
	}
	kernelOn(revA)
	if st := otherEcho(); st != "DENIED" {
		t.Errorf("other's echo after the rollback to A: %s, want DENIED", st)
	}
	h = history()
	if len(h) != 3 || !h[0].InForce || h[0].Revision != revA || h[0].RollbackOf != kvA || !strings.HasPrefix(h[0].PushedBy, "key:") {
		t.Errorf("history after the rollback: %+v", h)
	}
	if _, b := c.call(s.Admin, "GET", "/v1/audit?action=policy.push", nil); !strings.Contains(string(b), fmt.Sprintf(`"rollback_of":"%d"`, kvA)) {
		t.Errorf("the audit log lacks the rollback: %s", b)
	}

	// The dashboard: a tenant's page has no history, and its form post
	// is refused.
	acme := s.login(t, s.Acme)
	if _, page := acme.get("/ui/policies"); strings.Contains(page, "policy-history") {
		t.Error("a tenant's Policies page shows the history")
	}
	resp, err := acme.http.PostForm(s.URL+"/ui/policies/rollback", url.Values{"csrf": {acme.csrf()}, "kv_revision": {fmt.Sprint(kvB)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a tenant's rollback form: %d", resp.StatusCode)
	}
	if st, _ := acme.get(fmt.Sprintf("/ui/policies/rollback?kv_revision=%d", kvB)); st != http.StatusForbidden {
		t.Errorf("a tenant's rollback preview: %d", st)
	}
	admin := s.login(t, s.Admin)
	_, page := admin.get("/ui/policies")
	link := func(kv uint64) string { return fmt.Sprintf(`href="/ui/policies/rollback?kv_revision=%d"`, kv) }
	if !strings.Contains(page, `id="policy-history"`) || !strings.Contains(page, link(kvB)) || strings.Contains(page, link(h[0].KVRevision)) {
		t.Errorf("the admin's Policies page: no history, no Roll back link for #%d, or one for the revision in force:\n%s", kvB, page)
	}
	// The preview: B lets other's echo run again, and its form rolls back.
	st, page = admin.get(fmt.Sprintf("/ui/policies/rollback?kv_revision=%d", kvB))
	form := fmt.Sprintf(`<input type="hidden" name="kv_revision" value="%d">`, kvB)
	if st != http.StatusOK || !strings.Contains(page, `id="rollback-flips"`) || !strings.Contains(page, `<tr data-tenant="other">`) ||
		!strings.Contains(page, `<span class="badge dec-DENY">DENY</span> → <span class="badge dec-ALLOW">ALLOW</span>`) || !strings.Contains(page, form) ||
		!strings.Contains(page, revB) {
		t.Errorf("the rollback preview of #%d: %d\n%s", kvB, st, page)
	}
	if st, page := admin.get(fmt.Sprintf("/ui/policies/rollback?kv_revision=%d", h[0].KVRevision)); st != http.StatusOK ||
		!strings.Contains(page, `id="rollback-in-force"`) || strings.Contains(page, `id="rollback-form"`) {
		t.Errorf("the rollback preview of the revision in force: %d\n%s", st, page)
	}
	if st, _ := admin.get("/ui/policies/rollback?kv_revision=x"); st != http.StatusBadRequest {
		t.Errorf("a rollback preview of no revision: %d", st)
	}
	resp, err = admin.http.PostForm(s.URL+"/ui/policies/rollback", url.Values{"kv_revision": {fmt.Sprint(kvB)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the rollback form without the CSRF token: %d", resp.StatusCode)
	}
	resp, err = admin.http.PostForm(s.URL+"/ui/policies/rollback", url.Values{"csrf": {admin.csrf()}, "kv_revision": {fmt.Sprint(kvB)}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/policies" ||
		!strings.Contains(string(body), fmt.Sprintf("Rolled back to #%d: revision %s", kvB, revB)) {
		t.Errorf("the rollback form: %d at %s\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	kernelOn(revB)
	if h := history(); len(h) != 4 || h[0].RollbackOf != kvB || h[0].Revision != revB {
		t.Errorf("history after the form's rollback: %+v", h)
	}
}
