package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/gateway"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// submitJob submits a job with key and returns its id.
func (s *system) submitJob(t testing.TB, key string, body map[string]any) string {
	t.Helper()
	st, b := s.call(t, key, "POST", "/v1/jobs", body)
	if st != http.StatusAccepted {
		t.Fatalf("submit %v: %d %s", body, st, b)
	}
	return object(t, b)["job_id"].(string)
}

// jobIDs are the ids of a GET /v1/jobs answer, sorted.
func jobIDs(t testing.TB, b []byte) []string {
	t.Helper()
	var l struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var out []string
	for _, j := range l.Jobs {
		out = append(out, j.JobID)
	}
	slices.Sort(out)
	return out
}

// TestHostsDrainStatsAndWorker drives GET /v1/stats, the host drain and
// GET /v1/jobs?worker= (admin and tenant keys, each answer checked against
// the OpenAPI document), and the pages they feed: the admin's overview
// counts every job exactly while a tenant's counts its recent ones; a
// drain shows on the hosts page, where the Undrain form lifts it; while
// the only host is drained a job stays PENDING, and runs once it is
// undrained.
func TestHostsDrainStatsAndWorker(t *testing.T) {
	t.Cleanup(gateway.SetUISample(2, 200))
	s := start(t, sysOptions{})
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}

	for _, q := range []string{"step=abc", "step=500ms", "steps=1441", "steps=-1", "steps=x", "until=never"} {
		if st, b := c.call(s.Admin, "GET", "/v1/stats?"+q, nil); st != http.StatusBadRequest || errCode(t, b) != "bad_request" {
			t.Errorf("stats?%s: %d %s", q, st, b)
		}
	}
	if st, b := c.call(s.Acme, "GET", "/v1/stats", nil); st != http.StatusForbidden || errCode(t, b) != "forbidden" {
		t.Errorf("a tenant key's stats: %d %s", st, b)
	}
	for _, op := range []string{"drain", "undrain"} {
		if st, b := c.call(s.Acme, "POST", "/v1/hosts/gw-host/"+op, nil); st != http.StatusForbidden || errCode(t, b) != "forbidden" {
			t.Errorf("a tenant key's %s: %d %s", op, st, b)
		}
	}

	// 3 of acme's jobs and 2 of other's run on the host; one of acme's
	// fails without a host (no pool serves its topic).
	var acme, all []string
	for i := range 5 {
		key := s.Acme
		if i >= 3 {
			key = s.Other
		}
		id := s.submitJob(t, key, map[string]any{"topic": "job.echo", "payload": i})
		all = append(all, id)
		if i < 3 {
			acme = append(acme, id)
		}
	}
	nowhere := s.submitJob(t, s.Acme, map[string]any{"topic": "job.nowhere", "payload": "x"})
	for _, id := range all {
		if j := s.waitJob(t, s.Admin, id); j["state"] != "SUCCEEDED" {
			t.Fatalf("job %s: %v", id, j["state"])
		}
	}
	s.waitJob(t, s.Acme, nowhere)
	slices.Sort(acme)
	slices.Sort(all)

	st, b := c.call(s.Admin, "GET", "/v1/stats?step=1m&steps=60", nil)
	if st != http.StatusOK {
		t.Fatalf("stats: %d %s", st, b)
	}
	var stats gateway.StatsReply
	if err := json.Unmarshal(b, &stats); err != nil {
		t.Fatal(err)
	}
	sum := func(ns []int64) (n int64) {
		for _, v := range ns {
			n += v
		}
		return n
	}
	if stats.States["SUCCEEDED"] != 5 || stats.States["FAILED"] != 1 || stats.States["PENDING"] != 0 || stats.Total != 6 {
		t.Errorf("the counts by state: %v, total %d", stats.States, stats.Total)
	}
	if stats.Steps != 60 || len(stats.Created) != 60 || stats.StepMS != 60_000 || sum(stats.Created) != 6 ||
		sum(stats.Ended["SUCCEEDED"]) != 5 || sum(stats.Ended["FAILED"]) != 1 || len(stats.Ended["DENIED"]) != 60 {
		t.Errorf("the steps: %d of %d ms, created %v, ended %v", stats.Steps, stats.StepMS, stats.Created, stats.Ended)
	}
	if st, b := c.call(s.Admin, "GET", "/v1/stats?steps=0", nil); st != http.StatusOK || !strings.Contains(string(b), `"SUCCEEDED":5`) || strings.Contains(string(b), `"step_ms"`) {
		t.Errorf("stats without steps: %d %s", st, b)
	}

	// A host's jobs: every tenant's for the admin, its own for a tenant.
	for _, tc := range []struct {
		key, worker string
		want        []string
	}{{s.Admin, "gw-host", all}, {s.Acme, "gw-host", acme}, {s.Admin, "elsewhere", nil}} {
		st, b := c.call(tc.key, "GET", "/v1/jobs?limit=1000&worker="+tc.worker, nil)
		if got := jobIDs(t, b); st != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("jobs on %s: %d %v, want %v", tc.worker, st, got, tc.want)
		}
	}

	// The overview: the admin's counts are the store's, exact (the
	// sample is 2 jobs); a tenant's are its recent jobs'.
	admin, acmeSe := s.login(t, s.Admin), s.login(t, s.Acme)
	_, page := admin.get("/ui/")
	if !strings.Contains(page, `data-state-count="SUCCEEDED">5<`) || !strings.Contains(page, `data-state-count="FAILED">1<`) ||
		!strings.Contains(page, `id="states-scope">every job in the store, 6 in all: exact counts<`) {
		t.Errorf("the admin's overview counts: %q %q", regexp.MustCompile(`data-state-count="[A-Z]+">\d+`).FindAllString(page, -1),
			regexp.MustCompile(`id="states-scope">[^<]*`).FindString(page))
	}
	if !strings.Contains(page, `<svg class="chart flow"`) || !strings.Contains(page, `<td class="num" data-field="created">6</td><td class="num" data-field="ok">5</td><td class="num" data-field="bad">1</td>`) ||
		!strings.Contains(page, `id="flow-summary">6 created, 5 succeeded, 1 failed`) || !strings.Contains(page, `aria-current="page" class="on" data-range="1h"`) {
		t.Errorf("the admin's throughput: %.3000s", regexp.MustCompile(`(?s)<section class="card" id="throughput">.*?</section>`).FindString(page))
	}
	if _, page := admin.get("/ui/?range=24h"); !strings.Contains(page, `aria-current="page" class="on" data-range="24h"`) ||
		!strings.Contains(page, "last 24 hours, per 15 minutes") || !strings.Contains(page, `data-field="created">6<`) {
		t.Errorf("the 24 h range: %.3000s", regexp.MustCompile(`(?s)<section class="card" id="throughput">.*?</section>`).FindString(page))
	}
	_, page = acmeSe.get("/ui/")
	if m := regexp.MustCompile(`id="states-scope">([^<]*)<`).FindStringSubmatch(page); m == nil ||
		m[1] != "in the newest 2 (of more) of tenant acme's jobs created: its recent jobs, not all" || strings.Contains(page, `id="throughput"`) {
		t.Errorf("a tenant's overview says %q", m)
	}

	// Drain the only host.
	st, b = c.call(s.Admin, "POST", "/v1/hosts/gw-host/drain", nil)
	if d := object(t, b); st != http.StatusOK || d["drained"] != true || d["changed"] != true || d["worker_id"] != "gw-host" || d["live"] != true {
		t.Fatalf("drain: %d %s", st, b)
	}
	// A name no live host has: kept, and said so.
	if st, b := c.call(s.Admin, "POST", "/v1/hosts/gw-hots/drain", nil); st != http.StatusOK || object(t, b)["live"] != false {
		t.Errorf("draining a name no live host has: %d %s", st, b)
	}
	if st, b := c.call(s.Admin, "POST", "/v1/hosts/gw-hots/undrain", nil); st != http.StatusOK || object(t, b)["changed"] != true {
		t.Errorf("undraining it: %d %s", st, b)
	}
	if st, b := c.call(s.Admin, "POST", "/v1/hosts/gw-host/drain", nil); st != http.StatusOK || object(t, b)["changed"] != false {
		t.Errorf("draining again: %d %s", st, b)
	}
	waitFor(t, func() bool {
		_, b := c.call(s.Acme, "GET", "/v1/hosts", nil)
		return strings.Contains(string(b), `"drained_at_unix_ms"`) && strings.Contains(string(b), `"drained":{"gw-host":`)
	})
	_, page = admin.get("/ui/hosts")
	if !strings.Contains(page, `data-host="gw-host" data-drained="true"`) || !strings.Contains(page, `data-field="drained">drained<`) ||
		!strings.Contains(page, `action="/ui/hosts/gw-host/undrain"`) || !strings.Contains(page, `href="/ui/jobs?worker=gw-host"`) {
		t.Errorf("the admin's hosts page after the drain: %.3000s", page)
	}
	if _, page := acmeSe.get("/ui/hosts"); !strings.Contains(page, `data-field="drained">drained<`) || strings.Contains(page, `action="/ui/hosts/`) {
		t.Errorf("a tenant's hosts page: drained shown %v, a drain form %v", strings.Contains(page, `data-field="drained"`), strings.Contains(page, `action="/ui/hosts/`))
	}
	// A job submitted now is not placed while the host is drained.
	held := s.submitJob(t, s.Acme, map[string]any{"topic": "job.echo", "payload": "held"})
	for range 6 {
		time.Sleep(250 * time.Millisecond)
		if _, b := c.call(s.Acme, "GET", "/v1/jobs/"+held, nil); object(t, b)["state"] != "PENDING" {
			t.Fatalf("a job submitted while the only host is drained: %s", b)
		}
	}
	if _, page := admin.get("/ui/jobs?worker=gw-host"); !strings.Contains(page, `id="jobs-host">on host gw-host<`) ||
		strings.Count(page, `<tr data-job="`) != 5 || strings.Contains(page, held) || !strings.Contains(page, `data-worker="gw-host"`) {
		t.Errorf("the jobs page of host gw-host: %d rows", strings.Count(page, `<tr data-job="`))
	}

	// The hosts page's Undrain form: the CSRF token and this origin.
	undrain := func(form url.Values, origin string) (int, string) {
		req, _ := http.NewRequest("POST", s.URL+"/ui/hosts/gw-host/undrain", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := admin.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		_, _ = io.Copy(&sb, resp.Body)
		return resp.StatusCode, sb.String()
	}
	if st, _ := undrain(url.Values{}, ""); st != http.StatusForbidden {
		t.Errorf("an undrain without the token: %d", st)
	}
	if st, _ := undrain(url.Values{"csrf": {admin.csrf()}}, "https://evil.example"); st != http.StatusForbidden {
		t.Errorf("an undrain from another site: %d", st)
	}
	resp, err := acmeSe.http.PostForm(s.URL+"/ui/hosts/gw-host/undrain", url.Values{"csrf": {acmeSe.csrf()}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a tenant's undrain: %d", resp.StatusCode)
	}
	st, page = undrain(url.Values{"csrf": {admin.csrf()}}, s.URL)
	if st != http.StatusOK || !strings.Contains(page, `id="drain-msg" role="status">Host gw-host is undrained`) || strings.Contains(page, `data-drained="true"`) ||
		!strings.Contains(page, `action="/ui/hosts/gw-host/drain"`) {
		t.Errorf("after the undrain: %d %.3000s", st, page)
	}
	if j := s.waitJob(t, s.Acme, held); j["state"] != "SUCCEEDED" || j["worker_id"] != "gw-host" {
		t.Errorf("the held job after the undrain: %v on %v", j["state"], j["worker_id"])
	}
	_, b = c.call(s.Admin, "GET", "/v1/audit?limit=1000", nil)
	for _, action := range []string{"host.drain", "host.undrain"} {
		if !regexp.MustCompile(`"actor":"key:[^"]+","action":"` + regexp.QuoteMeta(action) + `","target":"gw-host"`).Match(b) {
			t.Errorf("no %s by the key in the audit log: %.2000s", action, b)
		}
	}
}

// startHostile is a system whose host serves the hostile test module
// too (topic job.hostile): its "talk" request reports progress 50 "half
// way", streams "hello from the job\n", then sleeps.
func startHostile(t testing.TB) *system {
	t.Helper()
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.hostile: hostile\npools:\n  echo: {}\n  hostile: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, sysOptions{node: func(o *assembly.Options) {
		o.Host.Modules["hostile"] = wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/hostile")
		o.Host.Pools = pools
		o.Host.Manifests = map[string]*sandbox.Manifest{"hostile": {Name: "hostile", Limits: sandbox.Limits{Time: sandbox.Duration(2 * time.Minute)}}}
	}})
}

// waitLive waits for a running job's live notes to hold its progress
// report and its output (GET /v1/jobs/{id}?live=true), and returns them.
func waitLive(t testing.TB, get func() (int, []byte)) []any {
	t.Helper()
	var live []any
	waitFor(t, func() bool {
		st, b := get()
		if st != http.StatusOK {
			return false
		}
		live, _ = object(t, b)["live"].([]any)
		var progress, output bool
		for _, n := range live {
			n := n.(map[string]any)
			progress = progress || n["kind"] == "PROGRESS" && n["percent"] == float64(50) && n["message"] == "half way"
			output = output || n["kind"] == "OUTPUT" && n["output_text"] == "hello from the job\n"
		}
		return progress && output
	})
	return live
}

// TestJobLiveNotes: GET /v1/jobs/{id}?live=true has a running job's
// progress report and output so far; its page shows the report in the
// timeline and the output; once the job ended, neither.
func TestJobLiveNotes(t *testing.T) {
	s := startHostile(t)
	_, router := spec(t)
	c := checked{t: t, s: s, router: router}
	id := s.submitJob(t, s.Acme, map[string]any{"topic": "job.hostile", "payload": map[string]any{"do": "talk"}})
	waitLive(t, func() (int, []byte) { return c.call(s.Acme, "GET", "/v1/jobs/"+id+"?live=true", nil) })
	if st, b := c.call(s.Other, "GET", "/v1/jobs/"+id+"?live=true", nil); st != http.StatusNotFound {
		t.Errorf("another tenant's live notes: %d %s", st, b)
	}
	if _, b := c.call(s.Acme, "GET", "/v1/jobs/"+id, nil); strings.Contains(string(b), `"live"`) {
		t.Errorf("live notes without live=true: %s", b)
	}
	se := s.login(t, s.Acme)
	_, page := se.get("/ui/jobs/" + id)
	for _, want := range []string{`<tr data-kind="progress" data-percent="50">`, `<b>50%</b> half way`,
		`id="output" data-next-seq="2">hello from the job` + "\n</pre>", `id="progress">50% half way<`} {
		if !strings.Contains(page, want) {
			t.Errorf("the running job's page lacks %q: %.4000s", want, regexp.MustCompile(`(?s)<h2>Timeline</h2>.*?</pre>`).FindString(page))
		}
	}
	if st, b := c.call(s.Acme, "POST", "/v1/jobs/"+id+"/cancel", nil); st != http.StatusOK {
		t.Fatalf("cancel: %d %s", st, b)
	}
	if j := s.waitJob(t, s.Acme, id); j["state"] != "CANCELLED" {
		t.Fatalf("the job: %v", j["state"])
	}
	if st, b := c.call(s.Acme, "GET", "/v1/jobs/"+id+"?live=true", nil); st != http.StatusOK || !strings.Contains(string(b), `"live":[]`) {
		t.Errorf("an ended job's live notes: %d %s", st, b)
	}
	_, page = se.get("/ui/jobs/" + id)
	if strings.Contains(page, `data-kind="progress"`) || strings.Contains(page, "hello from the job") || !strings.Contains(page, `id="output-box" hidden`) {
		t.Errorf("the ended job's page shows live notes: %.4000s", regexp.MustCompile(`(?s)<h2>Timeline</h2>.*?</pre>`).FindString(page))
	}
}
