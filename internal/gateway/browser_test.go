package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ward-run/ward/internal/modreg"
)

// The dashboard in a real browser: headless Chromium (Debian's chromium
// package) driven with chromedp. Each test starts its own system and its
// own browser. Every page a test opens is checked with axe-core
// (testdata/axe) and must have no violation, and saved as a screenshot in
// $WARD_TEST_OUTPUT, else gateway/testdata/out (not committed; docs/img
// holds copies for the README).

// chromiumPath is the browser: $CHROMIUM, else chromium on the PATH.
func chromiumPath(t testing.TB) string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard's browser tests need Chromium: apt-get install chromium (or set CHROMIUM to its path)")
	return ""
}

// browser is a page of a fresh headless Chromium, closed with the test.
type browser struct {
	t   *testing.T
	ctx context.Context
	url string
}

func newBrowser(t *testing.T, s *system) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // the tests may run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1360, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	// Chromium now and then fails to start on a busy machine: three tries.
	var err error
	for try := 1; try <= 3; try++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		// Start the browser now, with the browser's own context (a first
		// call's context is the browser's life: one with a timeout would
		// end it with the call).
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(func() {
				cancel()
				cancelAlloc()
			})
			return &browser{t: t, ctx: ctx, url: s.URL}
		}
		cancel()
		cancelAlloc()
		t.Logf("starting %s (try %d): %v", chromiumPath(t), try, err)
		time.Sleep(time.Second)
	}
	t.Fatalf("%s does not start: %v", chromiumPath(t), err)
	return nil
}

// do runs steps, each group within 30 s.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(b.t.Name(), "/", "-"))
		b.t.Fatalf("%s: %v (at %s)", what, err, b.location())
	}
}

// text is the text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("the text of %s: %v (at %s)", sel, err, b.location())
	}
	return s
}

// eval evaluates a JavaScript expression.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until waits for a JavaScript condition to hold (across reloads of the
// page: an evaluation that a navigation interrupts is tried again).
func (b *browser) until(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any]("!!("+cond+")"))
		cancel()
		if err == nil && v == true {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	b.shot("failed-" + strings.ReplaceAll(b.t.Name(), "/", "-"))
	b.t.Fatalf("waiting for %s: not within 30 s (%v) (at %s)", what, last, b.location())
}

func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	l, _ := chromedp.Run(ctx, chromedp.Location())
	return l
}

// outDir is where the tests write what they make (screenshots):
// $WARD_TEST_OUTPUT, else testdata/out (not committed).
func outDir() string {
	if d := os.Getenv("WARD_TEST_OUTPUT"); d != "" {
		return d
	}
	return filepath.Join("testdata", "out")
}

// shot saves a screenshot of the whole page as name.png in outDir; a
// screenshot that cannot be written is only logged.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	dir := outDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("screenshot %s not saved: %v", name, err)
		return
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s not saved: %v", name, err)
		return
	}
	b.t.Logf("screenshot: %s", path)
}

// axeScript is axe-core (testdata/axe: vendored, the tests need no
// network).
var axeScript = sync.OnceValues(func() (string, error) {
	src, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	return string(src), err
})

// axeViolation is one rule that axe finds broken, with its first nodes.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Nodes   int      `json:"nodes"`
	Targets []string `json:"targets"`
}

// axeRun runs every axe rule (WCAG 2.0-2.2 A and AA and best practices)
// on the page and returns the violations. The script goes in through the
// DevTools protocol (Runtime.evaluate), which the page's
// Content-Security-Policy does not govern.
const axeRun = `axe.run(document, {resultTypes: ["violations"], runOnly: {type: "tag",
  values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa", "best-practice"]}}).then(function (r) {
  return JSON.stringify(r.violations.map(function (v) {
    return {id: v.id, impact: v.impact || "", help: v.help, nodes: v.nodes.length,
      targets: v.nodes.slice(0, 4).map(function (n) { return n.target.join(" "); })};
  }));
})`

// axe checks the page with axe-core: an error names each violation.
func (b *browser) axe(name string) {
	b.t.Helper()
	src, err := axeScript()
	if err != nil {
		b.t.Fatalf("axe-core: %v", err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!window.axe"))
	if err == nil && !loaded {
		loaded, err = chromedp.Run(ctx, chromedp.Evaluate[bool](src+"\n;!!window.axe"))
	}
	if err != nil || !loaded {
		b.t.Fatalf("%s: loading axe-core: %v (loaded %v)", name, err, loaded)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: running axe-core: %v (at %s)", name, err, b.location())
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		b.t.Fatalf("%s: axe-core's result %q: %v", name, out, err)
	}
	for _, v := range vs {
		b.t.Errorf("%s (%s): axe: %s [%s] %s: %d node(s), e.g. %s",
			name, b.location(), v.ID, v.Impact, v.Help, v.Nodes, strings.Join(v.Targets, " | "))
	}
}

// check saves a screenshot of the page as name.png and checks it with axe.
func (b *browser) check(name string) {
	b.t.Helper()
	b.shot(name)
	b.axe(name)
}

// login logs in through the login form.
func (b *browser) login(key string) {
	b.t.Helper()
	b.do("log in",
		chromedp.Navigate(b.url+"/ui/login"),
		chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), key),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#live-count")),
	)
}

// TestBrowserLogin: a page without a session sends to the login form; a
// bad key is refused there with the reason; a good one lands on the
// overview, and logging out ends the session.
func TestBrowserLogin(t *testing.T) {
	s := start(t, sysOptions{})
	b := newBrowser(t, s)
	b.do("open a page without a session",
		chromedp.Navigate(b.url+"/ui/jobs"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#key"), s.Acme[:len(s.Acme)-4]+"AAAA"),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#login-error")),
	)
	if msg := b.text("#login-error"); !strings.Contains(msg, "the key was not accepted") {
		t.Errorf("a bad key's message: %q", msg)
	}
	b.check("login")
	b.do("log in with a good key",
		chromedp.SetValue(chromedp.CSS("#key"), s.Acme),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#jobs")), // the page asked for first
	)
	b.do("open the overview", chromedp.Navigate(b.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#live-count")))
	if who := b.text(".who .key"); !strings.Contains(who, "acme") {
		t.Errorf("the header names %q, not tenant acme", who)
	}
	if b.eval(`document.cookie`) != "" {
		t.Errorf("the session cookie is readable by the page's script")
	}
	b.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.do("a page after logging out", chromedp.Navigate(b.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
}

// TestBrowserJobs: submit a job from the jobs page and watch its row reach
// SUCCEEDED without a reload; open it: the timeline with the placement,
// the decision, the result; submit one the policy denies and read why;
// then a workflow run's DAG.
func TestBrowserJobs(t *testing.T) {
	s := start(t, sysOptions{})
	// Some history for the overview.
	for i := range 6 {
		topic := "job.echo"
		if i%3 == 2 {
			topic = "job.nowhere"
		}
		s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": topic, "payload": map[string]any{"n": i}})
	}
	b := newBrowser(t, s)
	b.login(s.Acme)
	b.do("open the jobs page", chromedp.Navigate(b.url+"/ui/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	// A job the scheduler failed (no pool serves job.nowhere) has no error
	// of its own: the list shows its reason code.
	if n := b.eval(`Array.from(document.querySelectorAll('#jobs tr[data-state="FAILED"] td[data-field="reason"]')).filter(td => td.textContent.startsWith("no_pool_mapping")).length`); n != float64(2) {
		t.Errorf("%v of the 2 failed jobs' rows give their reason no_pool_mapping", n)
	}
	b.eval(`window.wardNoReload = true`)
	b.do("submit a job",
		chromedp.Click(chromedp.CSS("#submit-box summary")),
		chromedp.WaitVisible(chromedp.CSS("#submit-payload")),
		chromedp.SetValue(chromedp.CSS("#submit-payload"), `{"greeting": "hello from the browser"}`),
		chromedp.Click(chromedp.CSS("#submit-button")),
		chromedp.WaitVisible(chromedp.CSS("#submitted-job")),
	)
	id := b.text("#submitted-job")
	b.until("its row to reach SUCCEEDED", `!!document.querySelector('#jobs tr[data-job="`+id+`"][data-state="SUCCEEDED"]')`)
	if b.eval(`window.wardNoReload === true`) != true {
		t.Error("the page reloaded to show the job")
	}
	// Its row says how long it took, counted no more once it ended
	// (issue 30).
	b.until("its row to say how long it took", `/^\d+(\.\d)? m?s$/.test(document.querySelector('#jobs tr[data-job="`+id+`"] td[data-field="took"]').textContent) && !document.querySelector('#jobs tr[data-job="`+id+`"] td[data-field="took"][data-running]')`)
	b.check("jobs")
	// The search box opens a job by its id (issue 30).
	b.do("find the job by its id",
		chromedp.SendKeys(chromedp.CSS("#job-search-id"), id),
		chromedp.Submit(chromedp.CSS("#job-search-id")),
		chromedp.WaitVisible(chromedp.CSS("#job-took")),
	)
	if loc := b.location(); !strings.HasSuffix(loc, "/ui/jobs/"+id) {
		t.Errorf("searching job %s lands at %s", id, loc)
	}
	b.do("back to the jobs", chromedp.Navigate(b.url+"/ui/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))

	b.do("open the job", chromedp.Click(chromedp.CSS(`#jobs tr[data-job="`+id+`"] a`)), chromedp.WaitVisible(chromedp.CSS("#result")))
	if st := b.text("#job-state"); st != "SUCCEEDED" {
		t.Errorf("the job's state: %q", st)
	}
	if res := b.text("#result"); !strings.Contains(res, `"greeting": "hello from the browser"`) {
		t.Errorf("the result: %q", res)
	}
	if p := b.text("#placement"); !strings.Contains(p, "gw-host") {
		t.Errorf("the placement: %q", p)
	}
	if tl := b.text("#timeline"); !strings.Contains(tl, "SCHEDULED") || !strings.Contains(tl, "SUCCEEDED") {
		t.Errorf("the timeline: %q", tl)
	}
	if d := b.text("#safety-decision"); !strings.HasPrefix(d, "ALLOW") {
		t.Errorf("the decision: %q", d)
	}
	b.check("job")

	// The default policy forbids topic sys.destroy: the job is DENIED, and
	// its page says by which rule.
	b.do("submit a job the policy denies",
		chromedp.Navigate(b.url+"/ui/jobs"),
		chromedp.WaitVisible(chromedp.CSS("#jobs")),
		chromedp.Click(chromedp.CSS("#submit-box summary")),
		chromedp.WaitVisible(chromedp.CSS("#submit-topic")),
		chromedp.SetValue(chromedp.CSS("#submit-topic"), "sys.destroy"),
		chromedp.Click(chromedp.CSS("#submit-button")),
		chromedp.WaitVisible(chromedp.CSS("#submitted-job")),
	)
	denied := b.text("#submitted-job")
	b.until("its row to reach DENIED", `!!document.querySelector('#jobs tr[data-job="`+denied+`"][data-state="DENIED"]')`)
	b.do("submit a job no pool serves",
		chromedp.SetValue(chromedp.CSS("#submit-topic"), "job.nowhere"),
		chromedp.Click(chromedp.CSS("#submit-button")),
	)
	b.until("the new job's id", `(document.querySelector("#submitted-job") || {}).textContent > "" && document.querySelector("#submitted-job").textContent !== "`+denied+`"`)
	nowhere := b.text("#submitted-job")
	b.until("its row to reach FAILED, with its reason", `((document.querySelector('#jobs tr[data-job="`+nowhere+`"][data-state="FAILED"] td[data-field="reason"]') || {}).textContent || "").startsWith("no_pool_mapping")`)
	b.do("open the denied job", chromedp.Navigate(b.url+"/ui/jobs/"+denied), chromedp.WaitVisible(chromedp.CSS("#safety-reasons")))
	if r := b.text("#safety-reasons"); !strings.Contains(r, "topic sys.destroy is forbidden") {
		t.Errorf("the denial's reasons: %q", r)
	}
	if d := b.text("#safety-decision"); d != "DENY" {
		t.Errorf("the decision: %q", d)
	}
	b.check("job-denied")

	b.do("the overview", chromedp.Navigate(b.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
	b.check("overview")
	if n := b.eval(`Array.from(document.querySelectorAll(".legend a")).filter(a => a.getBoundingClientRect().height < 24).length`); n != float64(0) {
		t.Errorf("%v of the overview's state links are less than 24 px tall", n)
	}
	// Every state's badge, and the decisions', reads 4.5:1 or more.
	b.eval(`(function () {
		var box = document.createElement("section");
		box.className = "card";
		box.id = "every-badge";
		["PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "DENIED", "WAITING", "READY", "SKIPPED"].forEach(function (s) {
			var b = document.createElement("span");
			b.className = "badge st-" + s;
			b.textContent = s;
			box.appendChild(b);
		});
		["ALLOW", "ALLOW_WITH_CONSTRAINTS", "DENY"].forEach(function (d) {
			var b = document.createElement("span");
			b.className = "badge dec-" + d;
			b.textContent = d;
			box.appendChild(b);
		});
		document.getElementById("main").appendChild(box);
		return box.children.length;
	})()`)
	b.axe("every badge")

	// A workflow run's steps as a DAG.
	def := "name: fan\nsteps:\n  - id: fetch\n    topic: job.echo\n    payload: '${{ input }}'\n  - id: lint\n    topic: job.echo\n    depends_on: [fetch]\n    payload: '${{ steps.fetch.output }}'\n  - id: test\n    topic: job.echo\n    depends_on: [fetch]\n    payload: '${{ steps.fetch.output }}'\n  - id: report\n    topic: job.echo\n    depends_on: [lint, test]\n    payload: '${{ steps.lint.output }}'\n"
	st, body := s.call(t, s.Acme, "POST", "/v1/runs", map[string]any{"definition": def, "input": map[string]any{"repo": "ward"}})
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, body)
	}
	run := object(t, body)["run_id"].(string)
	b.do("open the run", chromedp.Navigate(b.url+"/ui/workflows/"+run), chromedp.WaitVisible(chromedp.CSS("svg.dag")))
	b.until("every step to succeed (the page refreshes itself)", `document.querySelectorAll('svg.dag g.step[data-state="SUCCEEDED"]').length === 4`)
	// Each task links its own job, by its whole id.
	if n := b.eval(`Array.from(document.querySelectorAll('#tasks td[data-field="job"] a')).filter(a => a.textContent === "` + run + `-" + a.closest("tr").dataset.task && a.getAttribute("href") === "/ui/jobs/" + a.textContent).length`); n != float64(4) {
		t.Errorf("%v of the run's 4 tasks link their own job by its whole id", n)
	}
	// Each task says when its job ran and how long it took (issue 30).
	if n := b.eval(`Array.from(document.querySelectorAll('#tasks td[data-field="took"]')).filter(td => /\d/.test(td.textContent)).length`); n != float64(4) {
		t.Errorf("%v of the run's 4 tasks say how long they took", n)
	}
	b.check("workflow-run")
	// A code review's report: its Markdown rendered without the script
	// or the javascript: link it holds, its findings a table (issue 30).
	st, body = s.call(t, s.Acme, "POST", "/v1/runs", map[string]any{"definition": reviewDef, "input": codeReview()})
	if st != http.StatusAccepted {
		t.Fatalf("run: %d %s", st, body)
	}
	review := object(t, body)["run_id"].(string)
	b.do("open the review", chromedp.Navigate(b.url+"/ui/workflows/"+review), chromedp.WaitVisible(chromedp.CSS("#report-md h3")))
	if h := b.text("#report-md h3"); h != "Code review" {
		t.Errorf("the report's heading: %q", h)
	}
	if n := b.eval(`document.querySelectorAll('#report-md script, a[href^="javascript"], #main [style]').length`); n != float64(0) {
		t.Errorf("the report puts %v scripts, javascript: links or styles in the page", n)
	}
	if w := b.eval(`Array.from(document.querySelectorAll('#findings td[data-field="where"]')).map(td => td.textContent).join(" ")`); w != "a.go:3 z.go:1 a.go:12 b.go:9" {
		t.Errorf("the findings: %q", w)
	}
	if v := b.eval(`document.getElementById("outputs-details").open === false && document.getElementById("outputs-json").textContent.indexOf('"findings"') >= 0`); v != true {
		t.Errorf("the outputs' JSON is not kept, closed")
	}
	b.check("workflow-report")
	b.do("the workflows", chromedp.Navigate(b.url+"/ui/workflows"), chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="`+run+`"]`)))
	row := `#runs tr[data-run="` + run + `"]`
	if id := b.text(row + ` a[data-field="run"]`); id != run {
		t.Errorf("the runs list shows run %s as %q", run, id)
	}
	if n := b.text(row + ` td[data-field="steps"]`); n != "4/4" {
		t.Errorf("the runs list counts the run's tasks succeeded as %q, not 4/4", n)
	}
	// Run with nothing chosen: the form says what to give; choosing a
	// known workflow fills the name.
	b.do("open the run form", chromedp.Click(chromedp.CSS("#run-box summary")), chromedp.WaitVisible(chromedp.CSS("#run-known")))
	if v := b.eval(`document.getElementById("run-definition").value + document.getElementById("run-workflow").value`); v != "" {
		t.Errorf("the run form starts filled: %q", v)
	}
	b.do("run with nothing", chromedp.Click(chromedp.CSS("#run-button")), chromedp.WaitVisible(chromedp.CSS("#run-msg.err")))
	if m := b.text("#run-msg"); !strings.Contains(m, "Choose a known workflow") {
		t.Errorf("running nothing says %q", m)
	}
	if v := b.eval(`(function () { var s = document.getElementById("run-known"); s.value = "repo.code_review"; s.dispatchEvent(new Event("change")); return document.getElementById("run-workflow").value; })()`); v != "repo.code_review" {
		t.Errorf("choosing repo.code_review fills the name with %q", v)
	}
	b.check("workflows")
}

// TestBrowserDLQAndModules: retry a dead-lettered job from the DLQ page;
// roll a module back from the modules page as an admin.
func TestBrowserDLQAndModules(t *testing.T) {
	s := start(t, sysOptions{})
	var ids []string
	for i := range 2 {
		st, body := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": i})
		if st != http.StatusAccepted {
			t.Fatalf("submit: %d %s", st, body)
		}
		ids = append(ids, object(t, body)["job_id"].(string))
	}
	id, drop := ids[0], ids[1]
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/dlq", nil)
		return strings.Contains(string(b), id) && strings.Contains(string(b), drop)
	})
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := s.Reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: v, Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, []byte("\x00asm\x01\x00\x00\x00"+v)); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, s)
	b.login(s.Acme)
	row := `#dlq tr[data-job="` + id + `"]`
	b.do("retry the DLQ entry",
		chromedp.Navigate(b.url+"/ui/dlq"),
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+" button[data-post]")),
		chromedp.WaitVisible(chromedp.CSS(row+" .msg.ok")),
	)
	if msg := b.text(row + " .msg"); !strings.Contains(msg, "Retried") {
		t.Errorf("after retry: %q", msg)
	}
	drow := `#dlq tr[data-job="` + drop + `"]`
	b.do("drop the other",
		chromedp.Click(chromedp.CSS(drow+` button[data-method="DELETE"]`)), // arms it
		chromedp.Click(chromedp.CSS(drow+` button[data-method="DELETE"]`)), // confirms
		chromedp.WaitVisible(chromedp.CSS(drow+" .msg.ok")),
	)
	b.check("dlq")
	if _, body := s.call(t, s.Acme, "GET", "/v1/dlq", nil); strings.Contains(string(body), drop) {
		t.Errorf("the dropped entry is still in the DLQ: %s", body)
	}
	// A tenant's key sees no rollback.
	b.do("the modules page as a tenant", chromedp.Navigate(b.url+"/ui/modules"), chromedp.WaitVisible(chromedp.CSS(`#modules tr[data-module="hello"]`)))
	if n := b.eval(`document.querySelectorAll('button[data-post*="rollback"]').length`); n != float64(0) {
		t.Errorf("a tenant's modules page has %v rollback buttons", n)
	}
	// The module the host serves of its own (echo, from its --modules) is
	// listed with source host and how many hosts serve it (issue 30).
	hrow := `#modules tr[data-module="echo"][data-source="host"]`
	b.do("the host's own module", chromedp.WaitVisible(chromedp.CSS(hrow)))
	if src, hosts := b.text(hrow+` td[data-field="source"]`), b.text(hrow+` [data-field="hosts"]`); src != "host" || hosts != "1" {
		t.Errorf("the host module echo's row: source %q, hosts %q", src, hosts)
	}
	b.check("modules-tenant")

	admin := newBrowser(t, s)
	admin.login(s.Admin)
	mrow := `#modules tr[data-module="hello"]`
	admin.do("roll back the module",
		chromedp.Navigate(admin.url+"/ui/modules"),
		chromedp.WaitVisible(chromedp.CSS(mrow+" button[data-post]")),
		chromedp.Click(chromedp.CSS(mrow+" button[data-post]")), // arms it
		chromedp.Click(chromedp.CSS(mrow+" button[data-post]")), // confirms
	)
	admin.until("the page to show 1.0.0 in force", `(document.querySelector('`+mrow+` td[data-field="version"]') || {}).textContent === "1.0.0"`)
	admin.check("modules")
	if n := admin.eval(`document.querySelectorAll('#modules tr[data-source="host"] button').length`); n != float64(0) {
		t.Errorf("the admin's modules page offers %v buttons for the hosts' own modules", n)
	}
	st, body := s.call(t, s.Admin, "GET", "/v1/modules/hello", nil)
	if st != http.StatusOK || object(t, body)["active"].(map[string]any)["version"] != "1.0.0" {
		t.Errorf("the module after the rollback: %d %s", st, body)
	}
	admin.do("the hosts", chromedp.Navigate(admin.url+"/ui/hosts"), chromedp.WaitVisible(chromedp.CSS(`article[data-host="gw-host"] svg.gauge`)))
	admin.check("hosts")
	// The pool table's numbers sit under their headers.
	if n := admin.eval(`Array.from(document.querySelectorAll("table.t th.num")).filter(th => getComputedStyle(th).textAlign !== "right").length`); n != float64(0) {
		t.Errorf("%v numeric headers are not right-aligned", n)
	}
	admin.do("evaluate a policy input",
		chromedp.Navigate(admin.url+"/ui/policies"),
		chromedp.WaitVisible(chromedp.CSS("#eval-input")),
		chromedp.SetValue(chromedp.CSS("#eval-input"), `{"job_id": "try", "topic": "sys.destroy", "tenant_id": "acme"}`),
		chromedp.Click(chromedp.CSS("#eval-button")),
		chromedp.WaitVisible(chromedp.CSS("#eval-reasons")),
	)
	if r := admin.text("#eval-reasons"); !strings.Contains(r, "topic sys.destroy is forbidden") {
		t.Errorf("the evaluation's reasons: %q", r)
	}
	admin.do("run the policy's tests", chromedp.Click(chromedp.CSS("#test-button")), chromedp.WaitVisible(chromedp.CSS("#test-result table")))
	if m := admin.text("#test-msg"); !strings.HasPrefix(m, "Passed") {
		t.Errorf("the policy tests: %q", m)
	}
	// The impact of a rule that denies acme: acme's recent decisions
	// (the jobs above) flip from ALLOW to DENY, linked to their pages.
	admin.do("show a rule's impact",
		chromedp.SetValue(chromedp.CSS("#impact-rego"), "package ward.safety\n\ndeny contains \"no more\" if input.tenant_id == \"acme\"\n"),
		chromedp.Click(chromedp.CSS("#impact-button")),
		chromedp.WaitVisible(chromedp.CSS(`#impact-flips tr[data-tenant="acme"]`)),
	)
	frow := `#impact-flips tr[data-tenant="acme"]`
	if flip, reason, n := admin.text(frow+` [data-field="flip"]`), admin.text(frow+` [data-field="reason"]`), admin.text(frow+` [data-field="count"]`); !strings.Contains(flip, "ALLOW") ||
		!strings.Contains(flip, "DENY") || reason != "no more" || n == "0" || n == "" {
		t.Errorf("the impact's row: %q, %q, %q", flip, reason, n)
	}
	if n := admin.eval(`document.querySelectorAll('#impact-flips a[href="/ui/jobs/` + id + `"]').length`); n != float64(1) {
		t.Errorf("the impact links job %s %v times", id, n)
	}
	admin.check("policies")
	// An empty file removes none of the bundle in force: nothing changes.
	admin.eval(`document.getElementById("impact-rego").value = ""`)
	admin.do("show an empty file's impact",
		chromedp.Click(chromedp.CSS("#impact-button")),
		chromedp.WaitVisible(chromedp.CSS("#impact-none")),
	)

	// The pages no other test opens, as the admin.
	for _, p := range []struct{ name, path, ready string }{
		{"overview-admin", "/ui/", "svg.statesbar"},
		{"module", "/ui/modules/hello", "#active-version"},
		{"module-host", "/ui/modules/echo", "#host-digests"},
		{"keys", "/ui/keys", "#keys"},
		{"audit", "/ui/audit", "#audit"},
		{"not-found", "/ui/nowhere", "#page-error"},
	} {
		admin.do("open "+p.path, chromedp.Navigate(admin.url+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
		admin.check(p.name)
	}
}

// TestBrowserReadOnly: a read-only key's pages have no button that
// changes anything: no submit, cancel, retry, rollback or run.
func TestBrowserReadOnly(t *testing.T) {
	s := start(t, sysOptions{})
	st, body := s.call(t, s.Acme, "POST", "/v1/jobs", map[string]any{"topic": "job.nowhere", "payload": 1})
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, body)
	}
	id := object(t, body)["job_id"].(string)
	waitFor(t, func() bool {
		_, b := s.call(t, s.Acme, "GET", "/v1/dlq", nil)
		return strings.Contains(string(b), id)
	})
	if _, err := s.Reg.Deploy(context.Background(), modreg.Version{Name: "hello", Version: "1.0.0", Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, s)
	b.login(s.AcmeRO)
	for _, p := range []struct{ name, path, ready string }{
		{"jobs", "/ui/jobs", "#jobs"},
		{"job", "/ui/jobs/" + id, "#timeline"},
		{"dlq", "/ui/dlq", "#dlq"},
		{"modules", "/ui/modules", "#modules"},
		{"workflows", "/ui/workflows", "h1"},
	} {
		b.do("open "+p.path, chromedp.Navigate(b.url+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready)))
		n := b.eval(`document.querySelectorAll('button[data-post], #submit-form, #run-form, #rerun-button, #test-button').length`)
		if n != float64(0) {
			t.Errorf("%s: a read-only key sees %v controls that change things", p.path, n)
		}
		b.check("readonly-" + p.name)
	}
	if n := b.eval(`document.querySelectorAll('a[href="/ui/audit"], a[href="/ui/keys"]').length`); n != float64(0) {
		t.Errorf("a tenant's key sees the admin's pages in the navigation")
	}
}

// TestBrowserPolicyHistory: the Policies page's history, with a "Roll
// back…" link for each kept revision but the one in force; it opens what
// the rollback would change (a job of other's, denied by the policy in
// force, would be allowed), and its button rolls back: the page comes
// back saying what it did, with the revision rolled back to in force.
func TestBrowserPolicyHistory(t *testing.T) {
	s := start(t, sysOptions{})
	st, body := s.call(t, s.Admin, "GET", "/v1/policies?files=true", nil)
	if st != http.StatusOK {
		t.Fatalf("policies: %d %s", st, body)
	}
	files := map[string]string{}
	for k, v := range object(t, body)["files"].(map[string]any) {
		files[k] = v.(string)
	}
	var revs []string
	for _, extra := range []string{"", "package ward.safety\n\ndeny contains \"other may not echo\" if input.tenant_id == \"other\"\n"} {
		if extra != "" {
			files["other.rego"] = extra
		}
		st, b := s.call(t, s.Admin, "PUT", "/v1/policies", map[string]any{"files": files})
		if st != http.StatusOK {
			t.Fatalf("push: %d %s", st, b)
		}
		revs = append(revs, object(t, b)["revision"].(string))
	}
	st, body = s.call(t, s.Admin, "GET", "/v1/policies/history", nil)
	hist, _ := object(t, body)["revisions"].([]any)
	if st != http.StatusOK || len(hist) != 2 {
		t.Fatalf("history: %d %s", st, body)
	}
	first := fmt.Sprint(hist[1].(map[string]any)["kv_revision"])
	// A decision the rollback would flip: other's echo, denied now (once
	// the kernel enforces the second push).
	waitFor(t, func() bool {
		return fmt.Sprint(s.waitJob(t, s.Other, s.submitJob(t, s.Other, map[string]any{"topic": "job.echo", "payload": "hi"}))["state"]) == "DENIED"
	})

	admin := newBrowser(t, s)
	admin.login(s.Admin)
	row := `#policy-history tr[data-kv="` + first + `"]`
	admin.do("open the history", chromedp.Navigate(admin.url+"/ui/policies#history"), chromedp.WaitVisible(chromedp.CSS(row+" a.rollback")))
	if n := admin.eval(`document.querySelectorAll('#policy-history a.rollback').length`); n != float64(1) {
		t.Errorf("%v Roll back links, want 1 (none for the revision in force)", n)
	}
	admin.check("policies-history")
	admin.do("see what the rollback would change", chromedp.Click(chromedp.CSS(row+" a.rollback")), chromedp.WaitVisible(chromedp.CSS("#rollback-form")))
	if r := admin.text("#rollback-revision"); r != revs[0] {
		t.Errorf("the preview's revision: %q, want %s", r, revs[0])
	}
	if f := admin.text(`#rollback-flips tr[data-tenant="other"] [data-field="flip"]`); f != "DENY → ALLOW" {
		t.Errorf("the preview's flip of other's decisions: %q, want DENY → ALLOW", f)
	}
	admin.check("policy-rollback-preview")
	admin.do("roll back", chromedp.Click(chromedp.CSS("#rollback-confirm")), chromedp.WaitVisible(chromedp.CSS("#rollback-msg")))
	if m := admin.text("#rollback-msg"); !strings.Contains(m, "Rolled back to #"+first+": revision "+revs[0]) {
		t.Errorf("the page after the rollback: %q", m)
	}
	if note := admin.text(`#policy-history tbody tr:first-child [data-field="note"]`); note != "in force; rollback to #"+first {
		t.Errorf("the newest entry's note: %q", note)
	}
	admin.check("policies-rolled-back")
}

// TestBrowserHostsAndLive: as an admin, the overview's exact counts and
// throughput history in both ranges; drain the host from the hosts page
// (a second click confirms), see it drained, open its jobs, undrain it; a
// running job's page with its progress report in the timeline and its
// output so far; then a tenant's overview, of its recent jobs.
func TestBrowserHostsAndLive(t *testing.T) {
	s := startHostile(t)
	for i := range 2 {
		s.waitJob(t, s.Acme, s.submitJob(t, s.Acme, map[string]any{"topic": "job.echo", "payload": i}))
	}
	s.waitJob(t, s.Acme, s.submitJob(t, s.Acme, map[string]any{"topic": "job.nowhere", "payload": "x"}))
	talk := s.submitJob(t, s.Acme, map[string]any{"topic": "job.hostile", "payload": map[string]any{"do": "talk"}})
	waitLive(t, func() (int, []byte) { return s.call(t, s.Acme, "GET", "/v1/jobs/"+talk+"?live=true", nil) })
	t.Cleanup(func() { s.call(t, s.Admin, "POST", "/v1/jobs/"+talk+"/cancel", nil) })

	b := newBrowser(t, s)
	b.login(s.Admin)
	b.do("the overview", chromedp.Navigate(b.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#throughput svg.chart")))
	if n := b.text(`[data-state-count="SUCCEEDED"]`); n != "2" {
		t.Errorf("the overview counts %s SUCCEEDED jobs, not 2", n)
	}
	if sum := b.text("#flow-summary"); !strings.HasPrefix(sum, "4 created, 2 succeeded, 1 failed") {
		t.Errorf("the throughput's summary: %q", sum)
	}
	b.check("overview-throughput")
	b.do("the 24 h range", chromedp.Click(chromedp.CSS(`nav.range a[data-range="24h"]`)), chromedp.WaitVisible(chromedp.CSS(`nav.range a.on[data-range="24h"]`)))
	b.do("its numbers", chromedp.Click(chromedp.CSS("#flow-details summary")), chromedp.WaitVisible(chromedp.CSS("#flow-table")))
	b.check("overview-throughput-24h")

	host := `article[data-host="gw-host"]`
	b.do("drain the host",
		chromedp.Navigate(b.url+"/ui/hosts"),
		chromedp.WaitVisible(chromedp.CSS(host+` button[data-action="drain"]`)),
		chromedp.Click(chromedp.CSS(host+` button[data-action="drain"]`)), // arms it
	)
	if l := b.text(host + ` button[data-action="drain"]`); !strings.HasPrefix(l, "Confirm") {
		t.Errorf("the Drain button after one click: %q", l)
	}
	b.do("confirm", chromedp.Click(chromedp.CSS(host+` button[data-action="drain"]`)), chromedp.WaitVisible(chromedp.CSS("#drain-msg")))
	if m := b.text("#drain-msg"); !strings.HasPrefix(m, "Host gw-host is drained") {
		t.Errorf("after the drain: %q", m)
	}
	if d := b.text(host + ` [data-field="drained"]`); d != "drained" {
		t.Errorf("the host's badge: %q", d)
	}
	b.check("hosts-drained")
	b.do("the host's jobs", chromedp.Click(chromedp.CSS(host+` a[data-field="jobs"]`)), chromedp.WaitVisible(chromedp.CSS("#jobs-host")))
	if n := b.eval(`document.querySelectorAll("#jobs tbody tr").length`); n != float64(3) {
		t.Errorf("the jobs page of host gw-host has %v rows, not 3", n)
	}
	if v := b.eval(`document.getElementById("filter-worker").value`); v != "gw-host" {
		t.Errorf("the host filter: %v", v)
	}
	b.check("jobs-host")
	b.do("undrain the host",
		chromedp.Navigate(b.url+"/ui/hosts"),
		chromedp.Click(chromedp.CSS(host+` button[data-action="undrain"]`)),
		chromedp.WaitVisible(chromedp.CSS(host+` button[data-action="drain"]`)),
	)
	if m := b.text("#drain-msg"); !strings.HasPrefix(m, "Host gw-host is undrained") {
		t.Errorf("after the undrain: %q", m)
	}

	b.do("the running job", chromedp.Navigate(b.url+"/ui/jobs/"+talk), chromedp.WaitVisible(chromedp.CSS(`#timeline tr[data-kind="progress"]`)))
	if p := b.text(`#timeline tr[data-kind="progress"] td.msgcell`); p != "50% half way" {
		t.Errorf("the progress row: %q", p)
	}
	if o := b.text("#output"); !strings.Contains(o, "hello from the job") {
		t.Errorf("the output so far: %q", o)
	}
	b.check("job-live")

	b.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	b.login(s.Acme)
	if sc := b.text("#states-scope"); !strings.Contains(sc, "tenant acme's jobs created: its recent jobs") {
		t.Errorf("a tenant's overview says %q", sc)
	}
	b.check("overview-tenant")
}
