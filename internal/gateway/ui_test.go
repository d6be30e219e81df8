package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/gateway"
	"github.com/ward-run/ward/internal/modreg"
)

// session is a browser-less dashboard user: a cookie jar logged in with
// a key.
type session struct {
	t    testing.TB
	s    *system
	http *http.Client
}

func (s *system) login(t testing.TB, key string) *session {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(s.URL+"/ui/login", url.Values{"key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" {
		t.Fatalf("login: %d at %s: %.300s", resp.StatusCode, resp.Request.URL, b)
	}
	return &session{t: t, s: s, http: c}
}

// get fetches a page.
func (se *session) get(path string) (int, string) {
	se.t.Helper()
	resp, err := se.http.Get(se.s.URL + path)
	if err != nil {
		se.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var csrfRE = regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`)

// csrf is the session's token, as its pages carry it.
func (se *session) csrf() string {
	se.t.Helper()
	_, page := se.get("/ui/")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		se.t.Fatalf("no CSRF token in the page: %.500s", page)
	}
	return m[1]
}

// post posts JSON with the session's cookie, and the token when given.
func (se *session) post(path, body, token string) (int, string) {
	se.t.Helper()
	req, _ := http.NewRequest("POST", se.s.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	resp, err := se.http.Do(req)
	if err != nil {
		se.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUILogin: a bad key is refused with the reason; a good one lands on
// the overview; pages without a session send to the login page; logging
// out needs the token and ends the session.
func TestUILogin(t *testing.T) {
	s := start(t, sysOptions{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(s.URL + "/ui/jobs?state=FAILED")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login?next="+url.QueryEscape("/ui/jobs?state=FAILED") {
		t.Errorf("a page without a session: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = noRedirect.PostForm(s.URL+"/ui/login", url.Values{"key": {s.Acme[:len(s.Acme)-3] + "xyz"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "the key was not accepted") || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("a bad key: %d %q %.300s", resp.StatusCode, resp.Header.Get("Set-Cookie"), b)
	}
	// Another site's form is refused.
	req, _ := http.NewRequest("POST", s.URL+"/ui/login", strings.NewReader(url.Values{"key": {s.Acme}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login posted from another origin: %d", resp.StatusCode)
	}
	// A good key: the cookie is HttpOnly and SameSite=Strict.
	resp, err = noRedirect.PostForm(s.URL+"/ui/login", url.Values{"key": {s.Acme}, "next": {"/ui/jobs"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/jobs" ||
		!strings.Contains(ck, "ward_session=") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
		t.Errorf("login: %d to %q, cookie %q", resp.StatusCode, resp.Header.Get("Location"), ck)
	}
	// next never leaves the dashboard.
	resp, _ = noRedirect.PostForm(s.URL+"/ui/login", url.Values{"key": {s.Acme}, "next": {"//evil.example/"}})
	resp.Body.Close()
	if resp.Header.Get("Location") != "/ui/" {
		t.Errorf("login with next=//evil.example/ goes to %q", resp.Header.Get("Location"))
	}

	se := s.login(t, s.Acme)
	if st, page := se.get("/ui/"); st != 200 || !strings.Contains(page, "Overview") || !strings.Contains(page, "acme") {
		t.Errorf("overview: %d %.300s", st, page)
	}
	// Logging out without the token is refused; with it, the session ends.
	resp, _ = se.http.PostForm(s.URL+"/ui/logout", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without the token: %d", resp.StatusCode)
	}
	resp, _ = se.http.PostForm(s.URL+"/ui/logout", url.Values{"csrf": {se.csrf()}})
	resp.Body.Close()
	if resp.Request.URL.Path != "/ui/login" {
		t.Errorf("after logout: at %s", resp.Request.URL)
	}
	if _, page := se.get("/ui/jobs"); !strings.Contains(page, `id="login-form"`) {
		t.Errorf("a page after logout is not the login page: %.300s", page)
	}
}

// TestUICSRF: a request with the session cookie that changes things needs
// the page's token; GETs and bearer requests do not.
func TestUICSRF(t *testing.T) {
	s := start(t, sysOptions{})
	se := s.login(t, s.Acme)
	body := `{"topic":"job.echo","payload":"csrf"}`
	if st, b := se.post("/v1/jobs", body, ""); st != http.StatusForbidden || !strings.Contains(b, "CSRF") {
		t.Errorf("a cookie POST without the token: %d %s", st, b)
	}
	if st, b := se.post("/v1/jobs", body, "00"+se.csrf()[2:]); st != http.StatusForbidden {
		t.Errorf("a cookie POST with a wrong token: %d %s", st, b)
	}
	// Another session's token is not this one's.
	other := s.login(t, s.Other)
	if st, b := se.post("/v1/jobs", body, other.csrf()); st != http.StatusForbidden {
		t.Errorf("a cookie POST with another session's token: %d %s", st, b)
	}
	if st, b := se.post("/v1/jobs", body, se.csrf()); st != http.StatusAccepted {
		t.Errorf("a cookie POST with the token: %d %s", st, b)
	}
	if st, _ := se.get("/v1/jobs"); st != http.StatusOK {
		t.Errorf("a cookie GET: %d", st)
	}
}

// TestUIPages renders every page for each kind of key: a read-only key's
// pages offer nothing that changes things, a tenant's no admin's parts.
func TestUIPages(t *testing.T) {
	s := start(t, sysOptions{})
	st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": map[string]any{"hi": 1}})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	s.waitJob(t, s.Acme, id)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := s.Reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: v, Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, []byte("\x00asm\x01\x00\x00\x00")); err != nil {
			t.Fatal(err)
		}
	}
	def := "name: two\nsteps:\n  - id: a\n    topic: job.echo\n    payload: '${{ input }}'\n  - id: b\n    topic: job.echo\n    depends_on: [a]\n    payload: '${{ steps.a.output }}'\n"
	st, b = s.call(t, s.Acme, "POST", "/v1/runs", map[string]any{"definition": def, "input": map[string]any{"n": 1}})
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, b)
	}
	runID := object(t, b)["run_id"].(string)
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/runs/"+runID, nil)
		return object(t, b)["state"] == "SUCCEEDED"
	})

	pages := []struct{ path, want string }{
		{"/ui/", "Throughput"},
		{"/ui/jobs", id},
		{"/ui/jobs?state=SUCCEEDED&topic=job.echo", id},
		{"/ui/jobs/" + id, "OnlyWorkerAvailable"},
		// The payload as submitted, escaped, on the job's page.
		{"/ui/jobs/" + id, `<details id="payload"><summary>`},
		{"/ui/jobs/" + id, "&#34;hi&#34;: 1"},
		{"/ui/hosts", "gw-host"},
		{"/ui/dlq", "Dead-letter queue"},
		{"/ui/modules", "hello"},
		{"/ui/modules/hello", "1.0.0"},
		{"/ui/policies", "ward.rego"},
		{"/ui/workflows", runID},
		{"/ui/workflows/" + runID, `data-step="b" data-state="SUCCEEDED"`},
	}
	changing := []string{`data-post=`, `id="submit-form"`, `id="run-form"`, `id="rerun-button"`}
	admin := s.login(t, s.Admin)
	acme := s.login(t, s.Acme)
	ro := s.login(t, s.AcmeRO)
	for _, p := range pages {
		for _, who := range []struct {
			name string
			se   *session
		}{{"admin", admin}, {"acme", acme}, {"acme read-only", ro}} {
			st, page := who.se.get(p.path)
			if st != http.StatusOK || !strings.Contains(page, p.want) {
				t.Errorf("%s, %s: %d, want %q in %.2000s", who.name, p.path, st, p.want, page)
				continue
			}
			if who.name == "acme read-only" {
				for _, c := range changing {
					if strings.Contains(page, c) {
						t.Errorf("%s, %s offers %s", who.name, p.path, c)
					}
				}
			}
			if who.name != "admin" && (strings.Contains(page, `href="/ui/audit"`) || strings.Contains(page, "/rollback") || strings.Contains(page, `id="impact-form"`)) {
				t.Errorf("%s, %s shows an admin's parts", who.name, p.path)
			}
			if who.name == "admin" && p.path == "/ui/policies" && (!strings.Contains(page, `id="impact-form"`) || !strings.Contains(page, `value="candidate.rego"`)) {
				t.Errorf("the admin's policies page has no Impact form")
			}
		}
	}
	// The runs list shows the whole run id, linked, and its tasks that
	// succeeded of all; the run's tasks link their own jobs by their
	// whole ids (issue 30).
	_, page := acme.get("/ui/workflows")
	if !strings.Contains(page, `<a class="mono" href="/ui/workflows/`+runID+`" data-field="run">`+runID+`</a>`) {
		t.Errorf("the runs list does not show run %s's whole id: %s", runID, regexp.MustCompile(`<tr data-run=[^\n]*`).FindString(page))
	}
	if !regexp.MustCompile(`data-field="steps"[^>]*>2/2</td>`).MatchString(page) {
		t.Errorf("the runs list does not count 2/2 tasks succeeded: %s", regexp.MustCompile(`<tr data-run=[^\n]*`).FindString(page))
	}
	// The run form offers the known workflows, and its definition is
	// empty, without a placeholder that looks like one.
	if !strings.Contains(page, `<select id="run-known" data-from="scheduler"`) || !strings.Contains(page, `<option>repo.code_review</option>`) {
		t.Errorf("the run form does not offer the known workflows: %s", regexp.MustCompile(`(?s)<form id="run-form".*?</form>`).FindString(page))
	}
	if regexp.MustCompile(`<textarea name="definition"[^>]*placeholder=`).MatchString(page) {
		t.Errorf("the definition has a placeholder that reads as a definition")
	}
	_, page = acme.get("/ui/workflows/" + runID)
	for _, task := range []string{"a", "b"} {
		job := runID + "-" + task
		if !strings.Contains(page, `<a class="mono" href="/ui/jobs/`+job+`">`+job+`</a>`) {
			t.Errorf("the run's task %s does not link its job %s: %s", task, job, regexp.MustCompile(`(?s)<table class="t" id="tasks">.*?</table>`).FindString(page))
		}
	}
	_, page = admin.get("/ui/modules")
	if !strings.Contains(page, `data-post="/v1/modules/hello/rollback"`) {
		t.Errorf("the admin's modules page has no rollback")
	}
	// The module the host serves of its own (echo, from its --modules) is
	// listed, source host, with its digest and how many hosts serve it,
	// and no rollback (issue 30).
	echoRow := regexp.MustCompile(`(?s)<tr data-module="echo" data-source="host">.*?</tr>`).FindString(page)
	if !strings.Contains(echoRow, `<td data-field="source">host</td>`) || !regexp.MustCompile(`title="sha256:[0-9a-f]+"`).MatchString(echoRow) ||
		!strings.Contains(echoRow, `on <span data-field="hosts">1</span> host<`) || strings.Contains(echoRow, "rollback") {
		t.Errorf("the modules page's row for the host's own echo: %q", echoRow)
	}
	if !regexp.MustCompile(`(?s)<tr data-module="hello" data-source="registry">\s*<td>.*?</td>\s*<td data-field="source">registry</td>`).MatchString(page) {
		t.Errorf("the modules page does not say hello is the registry's")
	}
	if st, page := acme.get("/ui/modules/echo"); st != http.StatusOK || !strings.Contains(page, `id="host-module"`) || !strings.Contains(page, "ward module deploy echo.wasm") || strings.Contains(page, "/rollback") {
		t.Errorf("the host module echo's page: %d %.3000s", st, page)
	}
	if _, page := acme.get("/ui/jobs"); !strings.Contains(page, `id="submit-form"`) {
		t.Errorf("acme's jobs page has no submit form")
	}
	// Admin pages: the audit log, the keys (prefixes, never secrets).
	if st, page := admin.get("/ui/keys"); st != 200 || !strings.Contains(page, s.AcmeID) || strings.Contains(page, s.Acme) {
		t.Errorf("keys: %d, the id %s shown: %v, the secret shown: %v", st, s.AcmeID, strings.Contains(page, s.AcmeID), strings.Contains(page, s.Acme))
	}
	if st, _ := admin.get("/ui/audit"); st != 200 {
		t.Errorf("audit: %d", st)
	}
	for _, p := range []string{"/ui/keys", "/ui/audit"} {
		if st, _ := acme.get(p); st != http.StatusForbidden {
			t.Errorf("acme gets %s: %d", p, st)
		}
	}
	// Another tenant's job is not found; a bad filter says why.
	if st, page := s.login(t, s.Other).get("/ui/jobs/" + id); st != http.StatusNotFound || !strings.Contains(page, "not found") {
		t.Errorf("other tenant's job page: %d %.300s", st, page)
	}
	if st, page := acme.get("/ui/jobs?state=SLEEPING"); st != http.StatusBadRequest || !strings.Contains(page, "SLEEPING") {
		t.Errorf("a bad state filter: %d %.300s", st, page)
	}
	// The pages keep to their origin.
	resp, err := acme.http.Get(s.URL + "/ui/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: %v", resp.Header)
	}
	if st, js := acme.get("/ui/static/app.js"); st != 200 || !strings.Contains(js, "EventSource") {
		t.Errorf("app.js: %d", st)
	}
}

// TestDashboardPaging: with 2,000 jobs in the store the jobs page shows
// one page of 50 with a link to the next, and the admin's overview counts
// them all, exactly.
func TestDashboardPaging(t *testing.T) {
	s := start(t, sysOptions{})
	ctx := context.Background()
	for i := range 2000 {
		// A topic nothing serves: they end at once, in the DLQ. Spread
		// over 25 tenants, each under its rate limit's burst.
		tenant := fmt.Sprintf("bulk%02d", i%25)
		rep, err := s.Client.Submit(ctx, &wardv1.JobRequest{JobId: fmt.Sprintf("bulk-%04d", i), Topic: "job.nowhere", TenantId: tenant})
		if err != nil || !rep.GetAccepted() {
			t.Fatalf("submit %d: %v %v", i, rep, err)
		}
	}
	se := s.login(t, s.Admin)
	st, page := se.get("/ui/jobs")
	rows := strings.Count(page, `<tr data-job="`)
	if st != 200 || rows != 50 || !strings.Contains(page, `id="next-page"`) {
		t.Fatalf("jobs page: %d, %d rows, next link: %v", st, rows, strings.Contains(page, `id="next-page"`))
	}
	next := regexp.MustCompile(`<a href="([^"]+)" id="next-page"`).FindStringSubmatch(page)
	st, page2 := se.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if st != 200 || strings.Count(page2, `<tr data-job="`) != 50 {
		t.Errorf("the next page: %d, %d rows", st, strings.Count(page2, `<tr data-job="`))
	}
	first := regexp.MustCompile(`<tr data-job="([^"]+)"`).FindAllStringSubmatch(page, -1)
	for _, m := range first {
		if strings.Contains(page2, `<tr data-job="`+m[1]+`"`) {
			t.Errorf("job %s on both pages", m[1])
		}
	}
	// The admin's overview counts every job, exactly (GET /v1/stats); a
	// tenant's, a bounded sample of its recent jobs.
	if st, page := se.get("/ui/"); st != 200 || !strings.Contains(page, `data-state-count="FAILED">2000<`) || !strings.Contains(page, "every job in the store, 2000 in all") {
		t.Errorf("overview: %d, counts: %v", st, regexp.MustCompile(`id="states-scope">[^<]*`).FindString(page))
	}
	if st, _ := se.get("/ui/jobs?limit=5000"); st != http.StatusBadRequest {
		t.Errorf("a page of 5000: %d", st)
	}
}

// TestUIOverviewErrors: the overview's errors come from the jobs that
// ended badly last, not from the newest jobs created: after more good
// jobs than the overview counts, the failures still show, the counts say
// what they cover, and the DLQ counts its own (issue 30).
func TestUIOverviewErrors(t *testing.T) {
	t.Cleanup(gateway.SetUISample(3, 200))
	s := start(t, sysOptions{})
	var failed []string
	for i := range 2 {
		st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": i})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, b)
		}
		failed = append(failed, object(t, b)["job_id"].(string))
	}
	for _, id := range failed {
		s.waitJob(t, s.Acme, id)
	}
	for i := range 4 {
		st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": i})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, b)
		}
		s.waitJob(t, s.Acme, object(t, b)["job_id"].(string))
	}
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/dlq", nil)
		return strings.Contains(string(b), failed[0]) && strings.Contains(string(b), failed[1])
	})
	_, page := s.login(t, s.Acme).get("/ui/")
	if !strings.Contains(page, `data-state-count="SUCCEEDED">3<`) || !strings.Contains(page, `data-state-count="FAILED">0<`) {
		t.Errorf("the states of the newest 3: %q", regexp.MustCompile(`data-state-count="[A-Z]+">\d+`).FindAllString(page, -1))
	}
	if m := regexp.MustCompile(`id="states-scope">([^<]*)<`).FindStringSubmatch(page); m == nil || m[1] != "in the newest 3 (of more) of tenant acme's jobs created: its recent jobs, not all" {
		t.Errorf("the states' scope: %q", m)
	}
	errs := regexp.MustCompile(`(?s)<table class="t" id="errors">.*?</table>`).FindString(page)
	if strings.Contains(page, `id="no-errors"`) || !regexp.MustCompile(`<code>no_pool_mapping</code></td><td class="num">2</td>`).MatchString(errs) {
		t.Errorf("the errors: %q", errs)
	}
	if m := regexp.MustCompile(`id="errors-scope">([^<]*)<`).FindStringSubmatch(page); m == nil || !strings.HasPrefix(m[1], "by code, in the 2 jobs that ended") {
		t.Errorf("the errors' scope: %q", m)
	}
	if !strings.Contains(page, `<span class="n" id="dlq-count">2</span>`) {
		t.Errorf("the DLQ count: %q", regexp.MustCompile(`id="dlq-count">[^<]*`).FindString(page))
	}
}

// codeReview is a code review's report (repo.code_review's outputs), its
// Markdown hostile: a script, javascript: links (issue 30).
func codeReview() map[string]any {
	return map[string]any{
		"markdown": "# Code review\n\nSome *findings*.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) and [the docs](/ui/workflows)\n\n## By rule\n\n| rule | n |\n|------|---|\n| unused | 1 |\n",
		"findings": []map[string]any{
			{"file": "b.go", "line": 9, "rule": "gofmt", "severity": "info", "message": "not formatted"},
			{"file": "z.go", "line": 1, "rule": "sql-injection", "severity": "error", "message": "query built from input"},
			{"file": "a.go", "line": 12, "rule": "unused", "severity": "warning", "message": "x is unused"},
			{"file": "a.go", "line": 3, "rule": "hardcoded-secret", "severity": "error", "message": "a key in code"},
		},
		"summary": map[string]any{"files": 3, "findings": 4},
	}
}

// reviewDef is a workflow that ends with the report its input is.
const reviewDef = "name: review\nsteps:\n  - id: report\n    topic: job.echo\n    payload: '${{ input }}'\noutputs:\n  markdown: steps.report.output.markdown\n  findings: steps.report.output.findings\n  summary: steps.report.output.summary\n"

var (
	reportMDRE = regexp.MustCompile(`(?s)<div class="md" id="report-md">(.*?)</div>`)
	whereRE    = regexp.MustCompile(`data-field="where">([^<]*)<`)
	tookRE     = regexp.MustCompile(`^(\d+ ms|\d+\.\d s|[0-9hms]+)$`)
)

// checkReport checks a page that shows codeReview: its Markdown as HTML,
// safe; its findings as a table, by severity then file; its JSON kept.
func checkReport(t *testing.T, name, page, jsonID string) {
	t.Helper()
	m := reportMDRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("%s: no rendered report: %.3000s", name, page)
	}
	md := m[1]
	if !strings.Contains(md, "<h3>Code review</h3>") || !strings.Contains(md, "<h4>By rule</h4>") || !strings.Contains(md, "<td>unused</td>") ||
		!strings.Contains(md, `<a href="/ui/workflows">the docs</a>`) {
		t.Errorf("%s: the report's Markdown is not rendered: %s", name, md)
	}
	if strings.Contains(md, "<script") || strings.Contains(page, "<script>alert") || strings.Contains(strings.ToLower(page), `href="javascript`) || strings.Contains(md, "style=") {
		t.Errorf("%s: the report's Markdown injects markup: %s", name, md)
	}
	var where []string
	for _, w := range whereRE.FindAllStringSubmatch(page, -1) {
		where = append(where, w[1])
	}
	if got := strings.Join(where, " "); got != "a.go:3 z.go:1 a.go:12 b.go:9" {
		t.Errorf("%s: the findings' rows: %q, want by severity, then file", name, got)
	}
	if !strings.Contains(page, `<span class="badge sev-error" data-field="severity">error</span></td><td data-field="rule"><code>hardcoded-secret</code></td>`) {
		t.Errorf("%s: the first finding's severity and rule: %s", name, regexp.MustCompile(`(?s)<table class="t" id="findings">.*?</table>`).FindString(page))
	}
	if !regexp.MustCompile(`(?s)<details[^>]*><summary>[a-z]+ as JSON</summary><pre class="json" id="` + jsonID + `">.*&#34;markdown&#34;`).MatchString(page) {
		t.Errorf("%s: the JSON is not kept in a <details>", name)
	}
}

// TestUIReport: a code review's report renders on its run's page and on
// its job's: Markdown as HTML (raw HTML escaped, no javascript: links),
// the findings as a table, the JSON kept; and the run's tasks show their
// timing (issue 30).
func TestUIReport(t *testing.T) {
	s := start(t, sysOptions{})
	se := s.login(t, s.Acme)
	// A job whose result is the report (echo gives back its payload).
	st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": codeReview()})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, b)
	}
	id := object(t, b)["job_id"].(string)
	s.waitJob(t, s.Acme, id)
	st, page := se.get("/ui/jobs/" + id)
	if st != http.StatusOK {
		t.Fatalf("the job's page: %d %.300s", st, page)
	}
	checkReport(t, "the job's page", page, "result")
	if m := regexp.MustCompile(`id="job-took" data-created="\d+">([^<]*)<`).FindStringSubmatch(page); m == nil || !tookRE.MatchString(m[1]) {
		t.Errorf("the job's page does not say how long it took: %q", m)
	}

	// A run whose outputs are the report.
	st, b = s.call(t, s.Acme, "POST", "/v1/runs", map[string]any{"definition": reviewDef, "input": codeReview()})
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, b)
	}
	runID := object(t, b)["run_id"].(string)
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/runs/"+runID, nil)
		return object(t, b)["state"] == "SUCCEEDED"
	})
	st, page = se.get("/ui/workflows/" + runID)
	if st != http.StatusOK {
		t.Fatalf("the run's page: %d %.300s", st, page)
	}
	checkReport(t, "the run's page", page, "outputs-json")
	row := regexp.MustCompile(`<tr data-task="report">.*?</tr>`).FindString(page)
	started := regexp.MustCompile(`data-field="started">(\d\d:\d\d:\d\d\.\d\d\d)<`).FindStringSubmatch(row)
	ended := regexp.MustCompile(`data-field="ended">(\d\d:\d\d:\d\d\.\d\d\d)<`).FindStringSubmatch(row)
	took := regexp.MustCompile(`data-field="took">([^<]*)<`).FindStringSubmatch(row)
	if started == nil || ended == nil || took == nil || !tookRE.MatchString(took[1]) {
		t.Errorf("the run's task has no timing: %s", row)
	}
	if !regexp.MustCompile(`took <span id="run-took">[^<]+</span>`).MatchString(page) {
		t.Errorf("the run's page does not say how long the run took")
	}
}

// TestUIJobSearch: the jobs page opens a job by its id (the page says
// when there is none), filters by creation time (since, until) and keeps
// the filters in its links and its live rows' filter; each row says how
// long its job took (issue 30).
func TestUIJobSearch(t *testing.T) {
	s := start(t, sysOptions{})
	var ids []string
	for i := range 2 {
		st, b := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": i})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, b)
		}
		id := object(t, b)["job_id"].(string)
		s.waitJob(t, s.Acme, id)
		ids = append(ids, id)
	}
	se := s.login(t, s.Acme)
	st, page := se.get("/ui/jobs")
	if st != http.StatusOK || !strings.Contains(page, `id="job-search-id"`) || !strings.Contains(page, `id="filter-since"`) || !strings.Contains(page, `id="filter-until"`) {
		t.Fatalf("the jobs page has no search box or time filters: %d", st)
	}
	// Each row says how long its job took, created to ended.
	for _, id := range ids {
		row := regexp.MustCompile(`(?s)<tr data-job="` + id + `".*?</tr>`).FindString(page)
		m := regexp.MustCompile(`<td class="num mono" data-field="took" data-created="\d+">([^<]*)</td>`).FindStringSubmatch(row)
		if m == nil || !tookRE.MatchString(m[1]) {
			t.Errorf("job %s's row does not say how long it took: %s", id, row)
		}
	}
	// The search box: a job's id opens its page; an unknown id says so.
	if st, page := se.get("/ui/jobs?id=" + url.QueryEscape(ids[0])); st != http.StatusOK || !strings.Contains(page, `<h1>Job <span class="mono">`+ids[0]+`</span>`) {
		t.Errorf("searching job %s: %d %.500s", ids[0], st, page)
	}
	if st, page := se.get("/ui/jobs?id=no-such-job"); st != http.StatusNotFound || !strings.Contains(page, "not found") {
		t.Errorf("searching a job that is not: %d %.500s", st, page)
	}
	// since and until: the jobs created in the last hour are listed, none
	// created an hour ago or before.
	st, page = se.get("/ui/jobs?since=1h")
	if st != http.StatusOK || !strings.Contains(page, `<tr data-job="`+ids[0]+`"`) || !strings.Contains(page, `<tr data-job="`+ids[1]+`"`) ||
		!strings.Contains(page, `value="1h"`) || !regexp.MustCompile(`data-since="\d{13}" data-until=""`).MatchString(page) {
		t.Errorf("since=1h: %d, the jobs listed %v, the filter kept %v", st, strings.Contains(page, ids[0]), strings.Contains(page, `value="1h"`))
	}
	st, page = se.get("/ui/jobs?until=1h")
	if st != http.StatusOK || strings.Contains(page, `<tr data-job="`) || !strings.Contains(page, `id="no-jobs">No jobs match.`) ||
		!regexp.MustCompile(`data-since="" data-until="\d{13}"`).MatchString(page) {
		t.Errorf("until=1h: %d, rows %d", st, strings.Count(page, `<tr data-job="`))
	}
	if st, page := se.get("/ui/jobs?since=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))); st != http.StatusOK || strings.Contains(page, `<tr data-job="`) {
		t.Errorf("since an hour from now: %d, rows %d", st, strings.Count(page, `<tr data-job="`))
	}
	if st, page := se.get("/ui/jobs?since=yesterday"); st != http.StatusBadRequest || !strings.Contains(page, "since") {
		t.Errorf("since=yesterday: %d %.300s", st, page)
	}
	// The next page keeps the filters, and its way back too.
	_, page = se.get("/ui/jobs?since=1h&limit=1")
	next := regexp.MustCompile(`<a href="([^"]+)" id="next-page"`).FindStringSubmatch(page)
	if next == nil {
		t.Fatalf("no next page of 1")
	}
	nextURL := strings.ReplaceAll(next[1], "&amp;", "&")
	if !strings.Contains(nextURL, "since=1h") || !strings.Contains(nextURL, "limit=1") {
		t.Errorf("the next page's link drops the filters: %s", nextURL)
	}
	_, page = se.get(nextURL)
	newest := regexp.MustCompile(`<a href="([^"]+)" id="newest-page"`).FindStringSubmatch(page)
	if newest == nil || strings.ReplaceAll(newest[1], "&amp;", "&") != "/ui/jobs?limit=1&since=1h" {
		t.Errorf("the way back to the newest: %q", newest)
	}
}
