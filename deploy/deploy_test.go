// Package deploy holds no code: its tests check the deployment files.
// This file checks the monitoring ones — the Prometheus alert rules and
// their unit tests with promtool (Debian's prometheus package), the scrape
// configuration, and every PromQL expression of the rules and of the
// Grafana dashboard against the metrics a running Ward really serves on its
// /metrics.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

const (
	alertRulesFile       = "prometheus/ward-alerts.yaml"
	alertRulesTestFile   = "prometheus/ward-alerts_test.yaml"
	promConfigFile       = "prometheus/prometheus.yml"
	grafanaDashboardFile = "grafana/ward.json"
)

// promtool returns the path of promtool, failing the test when it is
// missing: these checks are part of the suite, not optional.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is not on PATH: install Debian's prometheus package (apt-get install -y prometheus; .ci/run does): %v", err)
	}
	return p
}

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPromtool checks the rules, runs their unit tests (series that fire
// each alert, and series that must not) and checks the scrape
// configuration, which loads the rules.
func TestPromtool(t *testing.T) {
	runPromtool(t, "check", "rules", alertRulesFile)
	runPromtool(t, "test", "rules", alertRulesTestFile)
	runPromtool(t, "check", "config", promConfigFile)
}

// alertRule is one alerting rule of ward-alerts.yaml.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadAlertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string      `yaml:"name"`
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// TestRulesShape: every alert has a severity and says what happened, and
// its unit tests expect it to fire at least once.
func TestRulesShape(t *testing.T) {
	rules := loadAlertRules(t)
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	tests, err := os.ReadFile(alertRulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Alert == "" {
			t.Errorf("a recording rule in %s: %q (the file holds alerts)", alertRulesFile, r.Expr)
			continue
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: summary and description annotations are required", r.Alert)
		}
		fires := regexp.MustCompile(`alertname: ` + regexp.QuoteMeta(r.Alert) + `\n\s+exp_alerts:\n\s+- exp_labels`)
		if !fires.Match(tests) {
			t.Errorf("%s: no test in %s expects it to fire", r.Alert, alertRulesTestFile)
		}
	}
}

// grafanaDashboard is the part of the Grafana JSON model the test reads.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      json.RawMessage    `json:"query"`
			Definition string             `json:"definition"`
			Datasource *grafanaDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

func loadGrafanaDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(grafanaDashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", grafanaDashboardFile, err)
	}
	return d
}

// promQuery is one PromQL expression and where it comes from.
type promQuery struct{ where, expr string }

// dashboardQueries returns every query of d: its panels' targets and its
// query variables' (label_values(metric, label)), the Grafana variables
// replaced by values Prometheus accepts.
func dashboardQueries(t *testing.T, d grafanaDashboard) []promQuery {
	t.Helper()
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
		"$topic", ".*", "$pool", ".*")
	var qs []promQuery
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				qs = append(qs, promQuery{fmt.Sprintf("panel %d %q %s", p.ID, p.Title, tg.RefID), grafana.Replace(tg.Expr)})
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
			continue
		}
		qs = append(qs, promQuery{"variable " + v.Name, m[1]})
	}
	return qs
}

// TestDashboardShape checks the dashboard's JSON model: a schema version
// of today's Grafana, the data source a variable every panel and target
// uses, unique panel ids on a 24-column grid, a query in every panel.
func TestDashboardShape(t *testing.T) {
	d := loadGrafanaDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and a schema of Grafana 10 or later", d.UID, d.Title, d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			hasDS = true
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query ${datasource}", v.Name)
		}
	}
	if !hasDS {
		t.Error(`no "datasource" variable of type datasource over prometheus`)
	}
	ids := map[int]string{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if prev, ok := ids[p.ID]; ok || p.ID == 0 {
				t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
			if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, g)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: its datasource is not ${datasource}", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q target %s: an empty query or another data source", p.Title, tg.RefID)
				}
			}
		}
	}
	walk(d.Panels)
}

// TestDashboardQueriesParse has promtool parse every dashboard query, as
// the expression of a recording rule.
func TestDashboardQueriesParse(t *testing.T) {
	qs := dashboardQueries(t, loadGrafanaDashboard(t))
	type rec struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rec
	for i, q := range qs {
		rules = append(rules, rec{fmt.Sprintf("ward_dashboard:query_%d", i), q.expr})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool(t), "check", "rules", f)
	if out, err := cmd.CombinedOutput(); err != nil {
		// Name the panels of the rules promtool names.
		msg := string(out)
		for i, q := range qs {
			if strings.Contains(msg, fmt.Sprintf("query_%d\"", i)) || strings.Contains(msg, fmt.Sprintf("query_%d:", i)) {
				msg += fmt.Sprintf("\nquery_%d is %s: %s", i, q.where, q.expr)
			}
		}
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, msg)
	}
}

var (
	// promMetricName finds the metric names a PromQL expression can name:
	// Ward's, and the Go client's and Prometheus' own.
	promMetricName = regexp.MustCompile(`\b(?:ward|go|process)_[a-zA-Z0-9_]+|\bup\b`)
	// promQuoted is a PromQL string: label values, not names.
	promQuoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	// promSelector is a metric name with label matchers.
	promSelector = regexp.MustCompile(`\b((?:ward|go|process)_[a-zA-Z0-9_]+)\s*\{([^}]*)\}`)
	// promMatcherLabel is a label name of a matcher.
	promMatcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// metricFamily is one metric family a /metrics page served.
type metricFamily struct {
	typ    string
	labels map[string]bool
}

// scrapeMetrics reads a /metrics page in the text format: each family's type
// and the label names its samples carry.
func scrapeMetrics(t *testing.T, url string, into map[string]*metricFamily) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			into[f[2]] = &metricFamily{typ: f[3], labels: map[string]bool{}}
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if into[name] == nil {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base := strings.TrimSuffix(name, suf); base != name && into[base] != nil {
					name = base
					break
				}
			}
		}
		if f := into[name]; f != nil {
			for _, l := range promMatcherLabel.FindAllStringSubmatch(promQuoted.ReplaceAllString(m[2], `""`), -1) {
				if l[1] != "le" && l[1] != "quantile" {
					f.labels[l[1]] = true
				}
			}
		}
	}
}

// registeredMetric reports whether a collector of name is registered with the
// default registry, which every role's /metrics serves, though none of
// its series exists yet (a vector no label set was used of): registering
// a probe of the same name and another help is refused then.
func registeredMetric(name string) bool {
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "deploy_test probe"})
	if err := prometheus.DefaultRegisterer.Register(probe); err != nil {
		return true
	}
	prometheus.DefaultRegisterer.Unregister(probe)
	return false
}

// monitoredSystem starts a whole Ward in the process, as ward dev does (auth on,
// the scheduler asking the kernel over gRPC as a separate ward scheduler
// would), with a gateway in front, runs a few jobs through the gateway and
// returns the families served on the roles' /metrics and on the gateway's.
func monitoredSystem(t *testing.T) map[string]*metricFamily {
	t.Helper()
	sec := natstest.StartSecure(t)
	creds, err := assembly.IssueDevCreds(sec.Auth, t.TempDir(), "deploy-host")
	if err != nil {
		t.Fatal(err)
	}
	settings := config.DefaultScheduler()
	settings.Placement.CPUThreshold = 100 // the machine's load is other tests'
	n, err := assembly.Start(context.Background(), assembly.Options{
		NATSURL: sec.URL, Store: jobstore.NewMemory(), Creds: &creds,
		ModuleRegistry: true, SafetyOverGRPC: true,
		Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Scheduler: settings}},
		Host: assembly.HostConfig{ID: "deploy-host",
			Modules:           map[string][]byte{"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")},
			CacheDir:          wasmtest.CacheDir(t),
			HeartbeatInterval: 100 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	metricsAddr, stop, err := assembly.ServeMetrics("127.0.0.1:0", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	gw, err := assembly.StartGateway(ctx, assembly.GatewayConfig{NATSURL: sec.URL, Creds: creds.Admin, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Shutdown(ctx)
	})
	key, _, err := gw.Keys().Add(ctx, apikey.Spec{Tenant: "acme", Name: "deploy-test", Scopes: []apikey.Scope{apikey.ScopeRead, apikey.ScopeSubmit}, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + gw.Addr()
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	// Jobs that run, one on a topic no pool serves, a job that is not
	// there: the scheduler, the kernel (over gRPC), the host and the
	// gateway each count something.
	var ids []string
	for i := range 4 {
		st, out := call("POST", "/v1/jobs", map[string]any{"topic": "job.echo", "payload": map[string]any{"n": i}})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %v", st, out)
		}
		ids = append(ids, out["job_id"].(string))
	}
	if st, out := call("POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": 1}); st == http.StatusAccepted {
		ids = append(ids, out["job_id"].(string))
	}
	call("GET", "/v1/jobs/no-such-job", nil)
	terminal := []string{"SUCCEEDED", "FAILED", "DENIED", "TIMEOUT", "CANCELLED"}
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			_, job := call("GET", "/v1/jobs/"+id, nil)
			if s, _ := job["state"].(string); slices.Contains(terminal, s) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s did not end: %v", id, job)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fams := map[string]*metricFamily{}
	scrapeMetrics(t, "http://"+metricsAddr+"/metrics", fams)
	scrapeMetrics(t, base+"/metrics", fams)
	return fams
}

// TestQueriesNameExportedMetrics checks every metric name in the alert
// rules and the dashboard against what a running Ward serves: a family on
// its /metrics pages, or a vector registered with the default registry
// whose series the jobs run here did not make yet. `up` is Prometheus'
// own. A label a promSelector matches on must be one the family's series
// carry (or a target label).
func TestQueriesNameExportedMetrics(t *testing.T) {
	var qs []promQuery
	for _, r := range loadAlertRules(t) {
		qs = append(qs, promQuery{"alert " + r.Alert, r.Expr})
	}
	qs = append(qs, dashboardQueries(t, loadGrafanaDashboard(t))...)

	fams := monitoredSystem(t)
	if fams["ward_scheduler_jobs_completed_total"] == nil || fams["ward_gateway_requests_total"] == nil {
		t.Fatalf("the scrapes served no scheduler or gateway metrics: %d families", len(fams))
	}
	lookup := func(name string) (*metricFamily, bool) {
		if f := fams[name]; f != nil {
			return f, true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suf); base != name {
				if f := fams[base]; f != nil && (f.typ == "histogram" || f.typ == "summary") {
					return f, true
				}
				if registeredMetric(base) {
					return nil, true
				}
			}
		}
		return nil, registeredMetric(name)
	}
	var unseen []string
	for _, q := range qs {
		expr := promQuoted.ReplaceAllString(q.expr, `""`)
		names := promMetricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: no metric name in %q", q.where, q.expr)
		}
		for _, name := range names {
			if name == "up" {
				continue
			}
			f, ok := lookup(name)
			if !ok {
				t.Errorf("%s: %s is not a metric Ward exports (in %q)", q.where, name, q.expr)
				continue
			}
			if f == nil {
				unseen = append(unseen, name)
			}
		}
		for _, m := range promSelector.FindAllStringSubmatch(expr, -1) {
			f, _ := lookup(m[1])
			if f == nil || len(f.labels) == 0 {
				continue // no series seen: nothing to compare with
			}
			for _, l := range promMatcherLabel.FindAllStringSubmatch(m[2], -1) {
				if l[1] != "job" && l[1] != "instance" && !f.labels[l[1]] {
					var have []string
					for k := range f.labels {
						have = append(have, k)
					}
					sort.Strings(have)
					t.Errorf("%s: %s has no label %s (it has %v)", q.where, m[1], l[1], have)
				}
			}
		}
	}
	slices.Sort(unseen)
	if unseen = slices.Compact(unseen); len(unseen) > 0 {
		t.Logf("registered, no series yet in this run: %s", strings.Join(unseen, ", "))
	}
}
