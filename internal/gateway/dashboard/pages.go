package dashboard

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/workflow"
)

// Every page's read is bounded: a page of jobs (50, at most 1000), the
// newest 1000 jobs for the overview, 100 DLQ entries, 50 runs, 100 audit
// records (each at most 1000 through ?limit=).
const (
	uiPageSize    = 50
	uiDefaultRows = 100
)

// defaultSampleSize is how many of the newest jobs the overview counts by
// state, and defaultBadSample how many of the newest of each state that
// ends badly (FAILED, TIMEOUT, DENIED) its errors come from, when the
// store's counts are not read (Config.SampleSize, BadSample).
const (
	defaultSampleSize = 1000
	defaultBadSample  = 200
)

// badStates are the states a job ends badly in.
var badStates = []string{"FAILED", "TIMEOUT", "DENIED"}

// jobStates are the states, in their order.
var jobStates = []string{"PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "DENIED"}

// uiJob is a job as the API shows it.
type uiJob struct {
	JobID          string            `json:"job_id"`
	Topic          string            `json:"topic"`
	TenantID       string            `json:"tenant_id"`
	State          string            `json:"state"`
	Priority       int               `json:"priority"`
	Pool           string            `json:"pool"`
	WorkerID       string            `json:"worker_id"`
	ContextPtr     string            `json:"context_ptr"`
	ResultPtr      string            `json:"result_ptr"`
	Safety         *uiSafety         `json:"safety"`
	Events         []uiEvent         `json:"events"`
	Created        int64             `json:"created_at_unix_ms"`
	Updated        int64             `json:"updated_at_unix_ms"`
	Reason         string            `json:"reason"`
	ErrorCode      string            `json:"error_code"`
	ErrorMessage   string            `json:"error_message"`
	Labels         map[string]string `json:"labels"`
	IdempotencyKey string            `json:"idempotency_key"`
	Attempt        int               `json:"attempt"`
	MaxRetries     int               `json:"max_retries"`
	Result         json.RawMessage   `json:"result"`
	ResultText     *string           `json:"result_text"`
	ResultBase64   string            `json:"result_base64"`
	Context        json.RawMessage   `json:"context"`
	ContextText    *string           `json:"context_text"`
	ContextBase64  string            `json:"context_base64"`
	Waiting        string            `json:"waiting"`
	Deadline       int64             `json:"deadline_unix_ms"`
	Resources      json.RawMessage   `json:"resources"`
	Module         string            `json:"module"`
	ModuleDigest   string            `json:"module_digest"`
	EventsChain    string            `json:"events_chain"`
	// Log is the module's log of the run (stderr, ward.log): text, or
	// JSON when it happens to be JSON, or base64.
	Log          json.RawMessage `json:"log"`
	LogText      string          `json:"log_text"`
	LogBase64    string          `json:"log_base64"`
	LogTruncated bool            `json:"log_truncated"`
	// Live is what the running attempt reported and streamed so far
	// (?live=true; none once the job ended), LiveTruncated whether more
	// came than is kept.
	Live          []uiNote `json:"live"`
	LiveTruncated bool     `json:"live_truncated"`
}

// uiNote is a live note of a running job: a progress report (PROGRESS:
// percent, message) or a chunk of its streamed output (OUTPUT).
type uiNote struct {
	Kind         string `json:"kind"`
	WorkerID     string `json:"worker_id"`
	Percent      int    `json:"percent"`
	Message      string `json:"message"`
	At           int64  `json:"sent_at_unix_ms"`
	Seq          int64  `json:"seq"`
	OutputText   string `json:"output_text"`
	OutputBase64 string `json:"output_base64"`
}

// ModuleLog is the module's log as text.
func (j uiJob) ModuleLog() string {
	switch {
	case j.LogText != "":
		return j.LogText
	case len(j.Log) > 0:
		return string(j.Log)
	case j.LogBase64 != "":
		return "(bytes, base64) " + j.LogBase64
	}
	return ""
}

type uiSafety struct {
	Decision       string          `json:"decision"`
	Reasons        []string        `json:"reasons"`
	PolicyRevision string          `json:"policy_revision"`
	DecisionID     string          `json:"decision_id"`
	Constraints    json.RawMessage `json:"constraints"`
	InputDigest    string          `json:"input_digest"`
	EvalNs         int64           `json:"eval_ns"`
	Cached         bool            `json:"cached"`
	DecidedAt      int64           `json:"decided_at_unix_ms"`
}

type uiEvent struct {
	State        string `json:"state"`
	At           int64  `json:"at_unix_ms"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	WorkerID     string `json:"worker_id"`
	OutputChunks int64  `json:"output_chunks"`
	Via          string `json:"via"`
	ViaMessage   string `json:"via_message"`
}

// Problem is what went wrong with the job, if anything.
func (j uiJob) Problem() string {
	return strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{j.ErrorCode, j.ErrorMessage}, func(s string) bool { return s == "" }), ": "))
}

// Why is the jobs list's reason: the problem, else, for a job that ended
// badly without an error of its own (one the scheduler failed: no pool for
// its topic, its retries spent), its reason code.
func (j uiJob) Why() string {
	if p := j.Problem(); p != "" || j.State == "SUCCEEDED" || !terminalStates[j.State] {
		return p
	}
	// With the event that ended it, when the list has it, as the live
	// rows show it.
	if n := len(j.Events); n > 0 && j.Events[n-1].Reason == j.Reason && j.Events[n-1].Message != "" {
		return j.Reason + ": " + j.Events[n-1].Message
	}
	return j.Reason
}

// ErrorKind is the code a failed job counts under.
func (j uiJob) ErrorKind() string { return cmp.Or(j.ErrorCode, j.Reason, "unknown") }

// End is when the job ended (Unix ms): its last event's time, else its
// record's; 0 while it has not ended.
func (j uiJob) End() int64 {
	if !terminalStates[j.State] {
		return 0
	}
	for i := len(j.Events) - 1; i >= 0; i-- {
		if terminalStates[j.Events[i].State] && j.Events[i].At > 0 {
			return j.Events[i].At
		}
	}
	return j.Updated
}

// Start is when the job started to run (Unix ms): its first RUNNING
// event, else its first DISPATCHED one; 0 when it has neither.
func (j uiJob) Start() int64 {
	var dispatched int64
	for _, e := range j.Events {
		switch {
		case e.State == "RUNNING" && e.At > 0:
			return e.At
		case e.State == "DISPATCHED" && dispatched == 0:
			dispatched = e.At
		}
	}
	return dispatched
}

// Took is how long the job took, created to ended, or created to now
// while it has not ended ("1.2 s"); "" without a creation time.
func (j uiJob) Took() string {
	if j.Created == 0 {
		return ""
	}
	end := j.End()
	if end == 0 {
		end = time.Now().UnixMilli()
	}
	return fmtMS(max(0, end-j.Created))
}

// Running reports whether the job has not ended (its duration grows).
func (j uiJob) Running() bool { return !terminalStates[j.State] }

// Run is the workflow run the job is a step of, if any.
func (j uiJob) Run() string { return j.Labels["ward.run"] }

type uiList struct {
	Jobs       []uiJob `json:"jobs"`
	NextCursor string  `json:"next_cursor"`
}

func (ui *Handler) readJobs(r *http.Request, p Principal, q url.Values) (uiList, error) {
	var l uiList
	err := ui.apiCall(r, p, "GET /v1/jobs", q, nil, &l)
	return l, err
}

// The API's answers the pages read, as the API shows them (package
// gateway's StatsReply, ModuleView, PolicyStatus, HistoryReply and
// RollbackReply).
type (
	// uiStats is GET /v1/stats's answer: the store's exact counts by
	// state, and jobs created and ended (by ended state) in each step.
	uiStats struct {
		States      map[string]int64   `json:"states"`
		Total       int64              `json:"total"`
		StepMS      int64              `json:"step_ms"`
		Steps       int                `json:"steps"`
		UntilUnixMS int64              `json:"until_unix_ms"`
		Created     []int64            `json:"created"`
		Ended       map[string][]int64 `json:"ended"`
	}
	// uiModuleView is a module: the registry's ("registry"), or one live
	// hosts serve of their own ("host"), with each digest they serve.
	uiModuleView struct {
		Name     string              `json:"name"`
		Source   string              `json:"source"`
		Active   *modreg.Active      `json:"active"`
		Versions []modreg.Version    `json:"versions"`
		Events   []modreg.Event      `json:"events"`
		Digests  []modreg.HostDigest `json:"digests"`
	}
	// uiPolicyStatus is the bundle in force and each kernel's status.
	uiPolicyStatus struct {
		Revision string            `json:"revision"`
		Source   string            `json:"source"`
		Files    map[string]string `json:"files"`
		Kernels  []map[string]any  `json:"kernels"`
	}
	// uiHistory is the policy bucket's kept pushes.
	uiHistory struct {
		Bucket    string                  `json:"bucket"`
		Revisions []safety.PolicyRevision `json:"revisions"`
	}
	// uiRollback is what a policy rollback did.
	uiRollback struct {
		KVRevision uint64 `json:"kv_revision"`
		Unchanged  bool   `json:"unchanged"`
	}
	// uiImpact is what a candidate bundle would change (POST
	// /v1/policies/impact): a rollback's, for its preview.
	uiImpact struct {
		Revision     string           `json:"revision"`
		BaseRevision string           `json:"base_revision"`
		Kernels      []map[string]any `json:"kernels"`
		Evaluated    int64            `json:"evaluated"`
		Flips        []uiFlip         `json:"flips"`
		DeniesActive []struct {
			JobID string `json:"job_id"`
			State string `json:"state"`
		} `json:"denies_active"`
		KVRevision uint64 `json:"kv_revision"`
		InForce    bool   `json:"in_force"`
		Signed     bool   `json:"signed"`
		KeyID      string `json:"key_id"`
	}
	// uiFlip is a group of recent decisions a candidate would change.
	uiFlip struct {
		TenantID string   `json:"tenant_id"`
		From     string   `json:"from"`
		To       string   `json:"to"`
		Count    int64    `json:"count"`
		Reason   string   `json:"reason"`
		Topics   []string `json:"topics"`
		JobIDs   []string `json:"job_ids"`
	}
)

// ---------------------------------------------------------------- overview

type stateCount struct {
	State string
	N     int
}

type codeCount struct {
	Code    string
	N       int
	Example string
	Message string
}

type overviewData struct {
	Sample     int
	SampleMore bool
	// Bad is how many jobs that ended badly the errors come from, BadMore
	// whether there are more of them.
	Bad       int
	BadMore   bool
	States    []stateCount
	StatesBar template.HTML
	Chart     template.HTML
	Span      string
	Errors    []codeCount
	Queue     string
	Running   int
	Hosts     int
	Draining  int
	Drained   int
	Slots     int
	Active    int
	DLQ       string
	Recent    []uiJob
	// Exact says the counts are the job store's, every tenant's (an
	// admin's overview: GET /v1/stats), not of a sample; Total is then
	// how many jobs there are. Flow is the throughput history of the
	// range chosen among Ranges.
	Exact  bool
	Total  int64
	Flow   *uiFlow
	Ranges []uiRange
}

// uiRange is a range of the overview's throughput history.
type uiRange struct {
	Name, Label string
	Step        time.Duration
	Steps       int
	On          bool
}

// flowRanges are the overview's throughput ranges, the first the default.
var flowRanges = []uiRange{
	{Name: "1h", Label: "last hour, per minute", Step: time.Minute, Steps: 60},
	{Name: "24h", Label: "last 24 hours, per 15 minutes", Step: 15 * time.Minute, Steps: 96},
}

func (ui *Handler) uiOverview(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var (
		d      overviewData
		counts = map[string]int{}
		sample uiList
	)
	if p.Admin() {
		// The store's exact counts, and its throughput over the range.
		rg := flowRanges[0]
		for _, x := range flowRanges {
			if x.Name == r.URL.Query().Get("range") {
				rg = x
			}
		}
		for _, x := range flowRanges {
			x.On = x.Name == rg.Name
			d.Ranges = append(d.Ranges, x)
		}
		// Steps aligned on the clock (a bar a minute of the clock), the
		// last one the step under way.
		until := time.Now().Truncate(rg.Step).Add(rg.Step)
		var st uiStats
		q := url.Values{"step": {rg.Step.String()}, "steps": {strconv.Itoa(rg.Steps)}, "until": {strconv.FormatInt(until.UnixMilli(), 10)}}
		if err := ui.apiCall(r, p, "GET /v1/stats", q, nil, &st); err != nil {
			// Schedulers that do not answer sys.job.stats (older ones,
			// mid-upgrade): the sample, as a tenant's overview has it.
			ui.log.Warn("overview: the job store's counts were not read; counting the newest jobs instead", "err", err)
		} else {
			for state, n := range st.States {
				counts[state] = int(n)
			}
			d.Exact, d.Total = true, st.Total
			d.Flow = newFlow(st, rg)
			d.Queue = strconv.FormatInt(st.States["PENDING"], 10)
		}
	}
	if !d.Exact {
		var err error
		if sample, err = ui.readJobs(r, p, url.Values{"limit": {strconv.Itoa(ui.cfg.SampleSize)}}); err != nil {
			return nil, err
		}
		d.Sample, d.SampleMore = len(sample.Jobs), sample.NextCursor != ""
		for _, j := range sample.Jobs {
			counts[j.State]++
		}
	}
	// The errors come from the jobs that ended badly last, each state's
	// listing ordered by when its jobs ended: not from the newest jobs
	// created, which a burst of good ones hides them behind.
	errs := map[string]*codeCount{}
	for _, st := range badStates {
		bad, err := ui.readJobs(r, p, url.Values{"limit": {strconv.Itoa(ui.cfg.BadSample)}, "state": {st}})
		if err != nil {
			return nil, err
		}
		d.Bad += len(bad.Jobs)
		d.BadMore = d.BadMore || bad.NextCursor != ""
		for _, j := range bad.Jobs {
			k := j.ErrorKind()
			c := errs[k]
			if c == nil {
				// What the example says besides its code.
				msg := strings.TrimPrefix(j.Why(), k+": ")
				if msg == k {
					msg = ""
				}
				c = &codeCount{Code: k, Example: j.JobID, Message: msg}
				errs[k] = c
			}
			c.N++
		}
	}
	for _, st := range jobStates {
		d.States = append(d.States, stateCount{st, counts[st]})
	}
	d.Running = counts["RUNNING"] + counts["DISPATCHED"] + counts["SCHEDULED"]
	for _, c := range errs {
		d.Errors = append(d.Errors, *c)
	}
	sort.Slice(d.Errors, func(i, k int) bool {
		return d.Errors[i].N > d.Errors[k].N || d.Errors[i].N == d.Errors[k].N && d.Errors[i].Code < d.Errors[k].Code
	})
	if len(d.Errors) > 10 {
		d.Errors = d.Errors[:10]
	}
	d.StatesBar = svgStatesBar(d.States)
	if !d.Exact {
		d.Chart, d.Span = svgThroughput(sample.Jobs, time.Now())
		d.Recent = sample.Jobs[:min(10, len(sample.Jobs))]
		pending, err := ui.readJobs(r, p, url.Values{"limit": {strconv.Itoa(ui.cfg.SampleSize)}, "state": {"PENDING"}})
		if err != nil {
			return nil, err
		}
		d.Queue = strconv.Itoa(len(pending.Jobs))
		if pending.NextCursor != "" {
			d.Queue += "+"
		}
	}
	var hs uiHosts
	if err := ui.apiCall(r, p, "GET /v1/hosts", nil, nil, &hs); err == nil {
		d.Hosts = len(hs.Hosts)
		for _, h := range hs.Hosts {
			if h.Status == "draining" {
				d.Draining++
			} else if h.Drained() {
				d.Drained++
			}
			d.Slots += h.MaxParallel
			d.Active += h.ActiveJobs
		}
	}
	var dl uiDLQList
	if err := ui.apiCall(r, p, "GET /v1/dlq", url.Values{"limit": {strconv.Itoa(ui.cfg.SampleSize)}}, nil, &dl); err == nil {
		d.DLQ = strconv.Itoa(len(dl.Entries))
		if len(dl.Entries) == ui.cfg.SampleSize {
			d.DLQ += "+"
		}
	} else {
		d.DLQ = "?"
	}
	return &uiPage{Template: "overview", Title: "Overview", Data: d}, nil
}

// ---------------------------------------------------------------- jobs

type jobsFilter struct {
	State, Topic, Tenant string
	// Worker is the host the jobs' last attempt was placed on.
	Worker string
	// Since and Until bound the jobs' creation time as the user wrote
	// them (a duration ago, RFC 3339 or Unix ms: client.ParseTime);
	// SinceMS and UntilMS are them read, for the live rows.
	Since, Until     string
	SinceMS, UntilMS int64
	Limit            int
	Cursor           string
}

// Any reports whether the list is filtered (or paged).
func (f jobsFilter) Any() bool {
	return f.State != "" || f.Topic != "" || f.Tenant != "" || f.Worker != "" || f.Since != "" || f.Until != "" || f.Cursor != ""
}

// query is the filter as the page's query string has it (no cursor).
func (f jobsFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"state": f.State, "topic": f.Topic, "tenant": f.Tenant, "worker": f.Worker, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit != uiPageSize {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

type jobsData struct {
	Jobs   []uiJob
	Filter jobsFilter
	States []string
	// Next is the next page's URL; "" on the last. Newest is the first
	// page's, with the same filters.
	Next, Newest string
	// First is whether this is the first page (live rows are added there).
	First bool
}

func (ui *Handler) uiJobs(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	in := r.URL.Query()
	// The search box: a job's whole id goes to its page (which says when
	// there is no such job).
	if id := strings.TrimSpace(in.Get("id")); id != "" {
		http.Redirect(w, r, "/ui/jobs/"+url.PathEscape(id), http.StatusSeeOther)
		return nil, nil
	}
	f := jobsFilter{State: strings.ToUpper(in.Get("state")), Topic: in.Get("topic"), Tenant: in.Get("tenant"), Worker: strings.TrimSpace(in.Get("worker")),
		Since: strings.TrimSpace(in.Get("since")), Until: strings.TrimSpace(in.Get("until")), Limit: uiPageSize, Cursor: in.Get("cursor")}
	var err error
	if f.Limit, err = limitParam(r, uiPageSize); err != nil {
		return nil, err
	}
	q := url.Values{"limit": {strconv.Itoa(f.Limit)}}
	for k, v := range map[string]string{"state": f.State, "topic": f.Topic, "tenant": f.Tenant, "worker": f.Worker, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	// since and until are read once, here, so that the list and its live
	// rows use the same times.
	for _, t := range []struct {
		name, in string
		ms       *int64
	}{{"since", f.Since, &f.SinceMS}, {"until", f.Until, &f.UntilMS}} {
		if t.in == "" {
			continue
		}
		ms, err := client.ParseTime(t.in, time.Now())
		if err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%s: %v", t.name, err)
		}
		*t.ms = ms
		q.Set(t.name, strconv.FormatInt(ms, 10))
	}
	l, err := ui.readJobs(r, p, q)
	if err != nil {
		return nil, err
	}
	d := jobsData{Jobs: l.Jobs, Filter: f, States: jobStates, First: f.Cursor == ""}
	d.Newest = "/ui/jobs"
	if fq := f.query(); len(fq) > 0 {
		d.Newest += "?" + fq.Encode()
	}
	if l.NextCursor != "" {
		next := f.query()
		next.Set("cursor", l.NextCursor)
		d.Next = "/ui/jobs?" + next.Encode()
	}
	return &uiPage{Template: "jobs", Title: "Jobs", Data: d}, nil
}

type jobData struct {
	Job       uiJob
	Terminal  bool
	Placement string
	Timeline  template.HTML
	// Rows are the timeline's table: the job's events, and while it runs
	// its progress reports, merged by time.
	Rows []timelineRow
	// Output is what the running job streamed so far (its live notes),
	// NextSeq the seq of the chunk the page's stream continues with,
	// Progress its latest progress report, Truncated whether more came
	// than is kept.
	Output    string
	NextSeq   int64
	Progress  string
	Truncated bool
	Result    string
	// Report is the result read as a report (a JSON object with a
	// "markdown" string or a "findings" list); nil when it is none.
	Report *uiReport
	// Payload is the job's context as submitted (JSON indented, text, or
	// base64), when the job store holds it.
	Payload string
}

func (ui *Handler) uiJob(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	id := r.PathValue("id")
	var j uiJob
	if err := ui.apiCall(r, p, "GET /v1/jobs/{id}", url.Values{"context": {"true"}, "live": {"true"}}, map[string]string{"id": id}, &j); err != nil {
		return nil, err
	}
	d := jobData{Job: j, Terminal: terminalStates[j.State], Timeline: svgTimeline(j.Events), NextSeq: 1}
	d.Rows = timelineRows(j)
	d.Output, d.NextSeq, d.Progress = liveOutput(j.Live)
	d.Truncated = j.LiveTruncated
	switch {
	case len(j.Context) > 0:
		d.Payload = prettyJSON(j.Context)
	case j.ContextText != nil:
		d.Payload = *j.ContextText
	case j.ContextBase64 != "":
		d.Payload = "(bytes, base64) " + j.ContextBase64
	}
	for _, e := range j.Events {
		if e.State == "SCHEDULED" && e.Message != "" {
			d.Placement = e.Message
		}
	}
	switch {
	case len(j.Result) > 0:
		d.Result = prettyJSON(j.Result)
		d.Report = readReport(j.Result)
	case j.ResultText != nil:
		d.Result = *j.ResultText
	case j.ResultBase64 != "":
		d.Result = "(bytes, base64) " + j.ResultBase64
	}
	return &uiPage{Template: "job", Title: "Job " + id, Data: d}, nil
}

// timelineRow is a row of a job's timeline: a state event, or a progress
// report (Progress) of the running attempt.
type timelineRow struct {
	uiEvent
	Progress bool
	Percent  int
	// Delta is the time since the row before ("+12 ms"); "" for the first.
	Delta string
}

// timelineRows merges the job's events (in the log's order) and its live
// progress reports (in the order sent) by time: a report goes before the
// first event later than it; an event of the same ms goes first.
func timelineRows(j uiJob) []timelineRow {
	var notes []uiNote
	for _, n := range j.Live {
		if n.Kind == "PROGRESS" {
			notes = append(notes, n)
		}
	}
	slices.SortStableFunc(notes, func(a, b uiNote) int { return cmp.Compare(a.At, b.At) })
	rows := make([]timelineRow, 0, len(j.Events)+len(notes))
	note := func(n uiNote) timelineRow {
		return timelineRow{uiEvent: uiEvent{State: "PROGRESS", At: n.At, Message: n.Message, WorkerID: n.WorkerID}, Progress: true, Percent: n.Percent}
	}
	for _, e := range j.Events {
		for len(notes) > 0 && notes[0].At < e.At {
			rows = append(rows, note(notes[0]))
			notes = notes[1:]
		}
		rows = append(rows, timelineRow{uiEvent: e})
	}
	for _, n := range notes {
		rows = append(rows, note(n))
	}
	for i := range rows {
		if i > 0 && rows[i].At > 0 && rows[i-1].At > 0 {
			rows[i].Delta = "+" + fmtMS(max(0, rows[i].At-rows[i-1].At))
		}
	}
	return rows
}

// liveOutput is what a running job streamed so far, its OUTPUT notes in
// seq order (bytes that are not UTF-8 replaced), the seq its stream
// continues with, and its latest progress report.
func liveOutput(notes []uiNote) (string, int64, string) {
	var out []byte
	next := int64(1)
	progress := ""
	var last int64 = -1
	chunks := slices.Clone(notes)
	slices.SortStableFunc(chunks, func(a, b uiNote) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, n := range chunks {
		switch {
		case n.Kind == "OUTPUT":
			if n.OutputText != "" {
				out = append(out, n.OutputText...)
			} else if b, err := base64.StdEncoding.DecodeString(n.OutputBase64); err == nil {
				out = append(out, b...)
			}
			next = max(next, n.Seq+1)
		case n.Kind == "PROGRESS" && n.At >= last: // the one sent last
			last = n.At
			progress = strings.TrimSpace(fmt.Sprintf("%d%% %s", n.Percent, n.Message))
		}
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), next, progress
}

// ---------------------------------------------------------------- hosts

type uiHost struct {
	WorkerID     string            `json:"worker_id"`
	Region       string            `json:"region"`
	Zone         string            `json:"zone"`
	Type         string            `json:"type"`
	CPULoad      float64           `json:"cpu_load"`
	GPU          float64           `json:"gpu_utilization"`
	Mem          map[string]int64  `json:"memory"`
	ActiveJobs   int               `json:"active_jobs"`
	MaxParallel  int               `json:"max_parallel_jobs"`
	Capabilities []string          `json:"capabilities"`
	Pools        []string          `json:"pools"`
	Labels       map[string]string `json:"labels"`
	Modules      map[string]string `json:"modules"`
	Status       string            `json:"status"`
	SentAt       int64             `json:"sent_at_unix_ms"`
	CPUCores     int               `json:"cpu_cores"`
	Version      string            `json:"version"`
	// DrainedAt is when an operator drained the host (Unix ms); 0: it is
	// not drained.
	DrainedAt int64 `json:"drained_at_unix_ms"`
}

// Drained reports whether an operator drained the host.
func (h uiHost) Drained() bool { return h.DrainedAt > 0 }

// MemUsed is the share of memory in use, 0–100.
func (h uiHost) MemUsed() float64 {
	t, a := h.Mem["total_bytes"], h.Mem["available_bytes"]
	if t <= 0 {
		return 0
	}
	return 100 * float64(t-a) / float64(t)
}

// MemText says the memory in use.
func (h uiHost) MemText() string {
	t, a := h.Mem["total_bytes"], h.Mem["available_bytes"]
	if t <= 0 {
		return "unknown"
	}
	return fmtBytes(t-a) + " of " + fmtBytes(t)
}

// Meta says where and what the host is.
func (h uiHost) Meta() string {
	var parts []string
	if where := strings.Trim(h.Region+" / "+h.Zone, " /"); where != "" {
		parts = append(parts, where)
	}
	if h.Type != "" {
		parts = append(parts, h.Type)
	}
	if h.CPUCores > 0 {
		parts = append(parts, strconv.Itoa(h.CPUCores)+" cores")
	}
	if h.Version != "" {
		parts = append(parts, h.Version)
	}
	return strings.Join(parts, " · ")
}

// ModuleNames are the modules the host serves, sorted.
func (h uiHost) ModuleNames() []string {
	out := make([]string, 0, len(h.Modules))
	for m := range h.Modules {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

type uiHosts struct {
	Hosts   []uiHost         `json:"hosts"`
	Drained map[string]int64 `json:"drained"`
}

type poolSummary struct {
	Pool                        string
	Hosts, Draining, Slots, Use int
}

type hostsData struct {
	Hosts []uiHost
	Pools []poolSummary
	Now   int64
	// Gone are the drained hosts that are not live (an admin may undrain
	// them), Notice what the drain the page comes back from did.
	Gone   []uiHost
	Notice string
}

func (ui *Handler) uiHosts(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var hs uiHosts
	if err := ui.apiCall(r, p, "GET /v1/hosts", nil, nil, &hs); err != nil {
		return nil, err
	}
	slices.SortFunc(hs.Hosts, func(a, b uiHost) int { return strings.Compare(a.WorkerID, b.WorkerID) })
	pools := map[string]*poolSummary{}
	for _, h := range hs.Hosts {
		for _, pl := range h.Pools {
			ps := pools[pl]
			if ps == nil {
				ps = &poolSummary{Pool: pl}
				pools[pl] = ps
			}
			ps.Hosts++
			if h.Status == "draining" || h.Drained() {
				ps.Draining++
			} else {
				ps.Slots += h.MaxParallel
			}
			ps.Use += h.ActiveJobs
		}
	}
	d := hostsData{Hosts: hs.Hosts, Now: time.Now().UnixMilli()}
	for _, ps := range pools {
		d.Pools = append(d.Pools, *ps)
	}
	slices.SortFunc(d.Pools, func(a, b poolSummary) int { return strings.Compare(a.Pool, b.Pool) })
	for w, at := range hs.Drained {
		if !slices.ContainsFunc(hs.Hosts, func(h uiHost) bool { return h.WorkerID == w }) {
			d.Gone = append(d.Gone, uiHost{WorkerID: w, DrainedAt: at})
		}
	}
	slices.SortFunc(d.Gone, func(a, b uiHost) int { return strings.Compare(a.WorkerID, b.WorkerID) })
	d.Notice = drainNotice(r.URL.Query(), hs.Drained)
	return &uiPage{Template: "hosts", Title: "Hosts", Data: d}, nil
}

// drainNotice says what the drain or undrain the Hosts page comes back
// from did (uiDrain's redirect), as the schedulers' status bears it out:
// "" when the page comes from none, or the status says otherwise.
func drainNotice(q url.Values, drained map[string]int64) string {
	if h := q.Get("drained"); h != "" {
		if _, ok := drained[h]; ok {
			return fmt.Sprintf("Host %s is drained: no new job is placed on it; the jobs it runs finish there.", h)
		}
	}
	if h := q.Get("undrained"); h != "" {
		if _, ok := drained[h]; !ok {
			return fmt.Sprintf("Host %s is undrained: schedulers place jobs on it again.", h)
		}
	}
	return ""
}

// uiDrain is the Hosts page's Drain (or Undrain) form: a POST with the
// session's CSRF token, from this site, that drains the host it names
// (POST /v1/hosts/{id}/drain) and goes back to the page, which says what
// it did.
func (ui *Handler) uiDrain(undrain bool) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if !sameOrigin(r) || !CSRFOK(r, requestKey(r)) {
			return nil, errorf(http.StatusForbidden, reason.Forbidden, "the request lacks the dashboard's CSRF token")
		}
		id := r.PathValue("id")
		route, key := "POST /v1/hosts/{id}/drain", "drained"
		if undrain {
			route, key = "POST /v1/hosts/{id}/undrain", "undrained"
		}
		var out struct{}
		if err := ui.api.Call(r, p, route, map[string]string{"id": id}, nil, nil, &out); err != nil {
			return nil, err
		}
		http.Redirect(w, r, "/ui/hosts?"+url.Values{key: {id}}.Encode(), http.StatusSeeOther)
		return nil, nil
	}
}

// ---------------------------------------------------------------- DLQ

type uiDLQEntry struct {
	JobID    string `json:"job_id"`
	Topic    string `json:"topic"`
	TenantID string `json:"tenant_id"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	At       int64  `json:"at_unix_ms"`
	Job      uiJob  `json:"job"`
}

type uiDLQList struct {
	Entries []uiDLQEntry `json:"entries"`
}

type dlqData struct {
	Entries []uiDLQEntry
	Limit   int
	More    string
}

func (ui *Handler) uiDLQ(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	limit, err := limitParam(r, uiDefaultRows)
	if err != nil {
		return nil, err
	}
	var l uiDLQList
	if err := ui.apiCall(r, p, "GET /v1/dlq", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &l); err != nil {
		return nil, err
	}
	d := dlqData{Entries: l.Entries, Limit: limit}
	if len(l.Entries) == limit && limit < 1000 {
		d.More = "/ui/dlq?limit=" + strconv.Itoa(min(1000, limit*5))
	}
	return &uiPage{Template: "dlq", Title: "Dead-letter queue", Data: d}, nil
}

func limitParam(r *http.Request, def int) (int, error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return def, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > 1000 {
		return 0, errorf(http.StatusBadRequest, reason.BadRequest, "limit %q is not a number from 1 to 1000", l)
	}
	return n, nil
}

// ---------------------------------------------------------------- modules

type modulesData struct {
	Modules []uiModuleView
}

func (ui *Handler) uiModules(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var l struct {
		Modules []uiModuleView `json:"modules"`
	}
	if err := ui.apiCall(r, p, "GET /v1/modules", nil, nil, &l); err != nil {
		return nil, err
	}
	// A name the registry holds and hosts serve of their own at another
	// digest is listed twice: the registry's first.
	slices.SortStableFunc(l.Modules, func(a, b uiModuleView) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(b.Source, a.Source))
	})
	return &uiPage{Template: "modules", Title: "Modules", Data: modulesData{Modules: l.Modules}}, nil
}

type moduleData struct {
	M        uiModuleView
	Versions []modreg.Version
}

func (ui *Handler) uiModule(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var m uiModuleView
	if err := ui.apiCall(r, p, "GET /v1/modules/{name}", nil, map[string]string{"name": r.PathValue("name")}, &m); err != nil {
		return nil, err
	}
	vs := slices.Clone(m.Versions)
	slices.SortFunc(vs, func(a, b modreg.Version) int { return b.DeployedAt.Compare(a.DeployedAt) })
	return &uiPage{Template: "module", Title: "Module " + m.Name, Data: moduleData{M: m, Versions: vs}}, nil
}

// ---------------------------------------------------------------- policies

type policiesData struct {
	Status uiPolicyStatus
	Files  []policyFile
	Sample string
	// ImpactSample is the Impact form's Rego to start from.
	ImpactSample string
	// History is the policy bucket's kept pushes (an admin's page), and
	// Notice what the rollback the page comes back from did.
	History []safety.PolicyRevision
	Notice  string
}

// impactSample is the Rego the Impact form starts with: a rule to try.
const impactSample = `package ward.safety

# A rule to try: the recent decisions it would change are listed.
deny contains "job.echo is paused" if input.topic == "job.echo"
`

type policyFile struct{ Name, Text string }

func (ui *Handler) uiPolicies(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var st uiPolicyStatus
	if err := ui.apiCall(r, p, "GET /v1/policies", url.Values{"files": {"true"}}, nil, &st); err != nil {
		return nil, err
	}
	d := policiesData{Status: st}
	for n, t := range st.Files {
		d.Files = append(d.Files, policyFile{n, t})
	}
	slices.SortFunc(d.Files, func(a, b policyFile) int { return strings.Compare(a.Name, b.Name) })
	sample := map[string]any{"job_id": "try-1", "topic": "job.echo", "tenant_id": p.Tenant, "payload_size": 16,
		"module": map[string]any{"name": "echo"}, "pool": "echo"}
	b, _ := json.MarshalIndent(sample, "", "  ")
	d.Sample = string(b)
	d.ImpactSample = impactSample
	if p.Admin() {
		var h uiHistory
		if err := ui.apiCall(r, p, "GET /v1/policies/history", nil, nil, &h); err != nil {
			return nil, err
		}
		d.History = h.Revisions
		d.Notice = rollbackNotice(r.URL.Query(), d.History)
	}
	return &uiPage{Template: "policies", Title: "Policies", Data: d}, nil
}

// rollbackNotice says what the rollback the Policies page comes back
// from did (uiPolicyRollback's redirect), as the history h shows it: ""
// when the page comes from none, or h does not bear the query out.
func rollbackNotice(q url.Values, h []safety.PolicyRevision) string {
	to, err := strconv.ParseUint(q.Get("rolled_back_to"), 10, 64)
	if err != nil {
		return ""
	}
	kv, _ := strconv.ParseUint(q.Get("kv_revision"), 10, 64)
	for _, e := range h {
		switch {
		case q.Get("unchanged") == "true" && e.KVRevision == to:
			return fmt.Sprintf("Revision %s (#%d) is in force already: nothing was written.", e.Revision, to)
		case e.KVRevision == kv && e.RollbackOf == to:
			return fmt.Sprintf("Rolled back to #%d: revision %s is bucket revision #%d; every kernel watching puts it in force.", to, e.Revision, kv)
		}
	}
	return ""
}

// uiPolicyRollbackPreview is what a rollback would do, before it is
// made (the history's "Roll back…" link): the kept revision, what it
// would change of the kernels' recent decisions, the jobs in flight it
// would deny, as `ward policy rollback` shows them before it asks, and
// the form that makes it.
func (ui *Handler) uiPolicyRollbackPreview(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	rev, err := strconv.ParseUint(r.URL.Query().Get("kv_revision"), 10, 64)
	if err != nil || rev == 0 {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "kv_revision: not a bucket revision (the history lists them)")
	}
	var imp uiImpact
	if err := ui.api.Call(r, p, "POST /v1/policies/impact", nil, nil, map[string]uint64{"kv_revision": rev}, &imp); err != nil {
		return nil, err
	}
	return &uiPage{Template: "policy_rollback", Title: fmt.Sprintf("Roll back to #%d", rev), Data: imp}, nil
}

// uiPolicyRollback is the Policies page's Rollback form: a POST with the
// session's CSRF token, from this site, that rolls the policy back to the
// bucket revision it names (POST /v1/policies/rollback) and goes back to
// the page, which says what it did.
func (ui *Handler) uiPolicyRollback(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !sameOrigin(r) || !CSRFOK(r, requestKey(r)) {
		return nil, errorf(http.StatusForbidden, reason.Forbidden, "the request lacks the dashboard's CSRF token")
	}
	rev, err := strconv.ParseUint(r.PostFormValue("kv_revision"), 10, 64)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "kv_revision: not a bucket revision")
	}
	var res uiRollback
	if err := ui.api.Call(r, p, "POST /v1/policies/rollback", nil, nil, map[string]uint64{"kv_revision": rev}, &res); err != nil {
		return nil, err
	}
	q := url.Values{"rolled_back_to": {strconv.FormatUint(rev, 10)}}
	if res.Unchanged {
		q.Set("unchanged", "true")
	} else {
		q.Set("kv_revision", strconv.FormatUint(res.KVRevision, 10))
	}
	http.Redirect(w, r, "/ui/policies?"+q.Encode()+"#history", http.StatusSeeOther)
	return nil, nil
}

// ---------------------------------------------------------------- workflows

type uiRun struct {
	RunID      string          `json:"run_id"`
	TenantID   string          `json:"tenant_id"`
	Workflow   string          `json:"workflow"`
	State      string          `json:"state"`
	Reason     string          `json:"reason"`
	Tasks      []uiTask        `json:"tasks"`
	Outputs    json.RawMessage `json:"outputs"`
	Created    int64           `json:"created_at_unix_ms"`
	Updated    int64           `json:"updated_at_unix_ms"`
	Events     []uiRunEvent    `json:"events"`
	Definition json.RawMessage `json:"definition"`
	DefText    string          `json:"definition_text"`
	EventsN    int64           `json:"events_total"`
	// Succeeded counts the tasks that succeeded, Counted says Tasks were
	// read (the list of runs carries none).
	Succeeded int  `json:"-"`
	Counted   bool `json:"-"`
}

type uiTask struct {
	ID         string          `json:"id"`
	Step       string          `json:"step"`
	Index      int             `json:"index"`
	State      string          `json:"state"`
	JobID      string          `json:"job_id"`
	Error      string          `json:"error"`
	Output     json.RawMessage `json:"output"`
	OutputText string          `json:"output_text"`
	// Timing, from the task's job (the run's record has none): when it
	// started to run and ended, Unix ms (End 0 while it runs), and how
	// long that took; Timed says the job was read.
	Started, Ended int64  `json:"-"`
	Took           string `json:"-"`
	Timed          bool   `json:"-"`
}

type uiRunEvent struct {
	Seq   int64  `json:"seq"`
	Kind  string `json:"kind"`
	Task  string `json:"task"`
	Prior string `json:"prior_state"`
	Post  string `json:"post_state"`
}

// Counts are a run's tasks: how many, and how many succeeded; Counted
// is false when the run could not be read for them.
func (r uiRun) Counts() string {
	if !r.Counted {
		return "?"
	}
	return strconv.Itoa(r.Succeeded) + "/" + strconv.Itoa(len(r.Tasks))
}

type runsData struct {
	Runs  []uiRun
	Limit int
	// Known are the workflows the schedulers know by name, for the run
	// form; KnownFrom says where the names came from.
	Known     []string
	KnownFrom string
}

// runCountWorkers bounds the runs read at once for their tasks (the list
// carries none).
const runCountWorkers = 8

func (ui *Handler) uiRuns(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	limit, err := limitParam(r, uiPageSize)
	if err != nil {
		return nil, err
	}
	var l struct {
		Runs []uiRun `json:"runs"`
	}
	if err := ui.apiCall(r, p, "GET /v1/runs", url.Values{"limit": {strconv.Itoa(limit)}}, nil, &l); err != nil {
		return nil, err
	}
	// The list carries no tasks: each run is read for them, a few at a
	// time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, runCountWorkers)
	for i := range l.Runs {
		wg.Add(1)
		sem <- struct{}{}
		go func(run *uiRun) {
			defer func() { <-sem; wg.Done() }()
			var full uiRun
			if err := ui.apiCall(r, p, "GET /v1/runs/{id}", nil, map[string]string{"id": run.RunID}, &full); err != nil {
				return
			}
			run.Tasks, run.Counted = full.Tasks, true
			for _, t := range full.Tasks {
				if t.State == "SUCCEEDED" {
					run.Succeeded++
				}
			}
		}(&l.Runs[i])
	}
	wg.Wait()
	d := runsData{Runs: l.Runs, Limit: limit}
	if p.Can(ScopeSubmit) {
		d.Known, d.KnownFrom = ui.knownWorkflows(r, p)
	}
	return &uiPage{Template: "workflows", Title: "Workflows", Data: d}, nil
}

// knownMaxAge is how long the dashboard keeps the known workflows' names.
const knownMaxAge = time.Minute

// knownWorkflows are the names of the workflows the schedulers know, and
// where they came from: a scheduler's answer (client.KnownWorkflows);
// when no scheduler answers, the seed workflows built into this binary
// (config/workflows). The names are kept for knownMaxAge.
func (ui *Handler) knownWorkflows(r *http.Request, p Principal) ([]string, string) {
	ui.knownMu.Lock()
	defer ui.knownMu.Unlock()
	if ui.knownFrom == "scheduler" && time.Since(ui.knownAt) < knownMaxAge {
		return ui.known, ui.knownFrom
	}
	ctx, cancel := context.WithTimeout(r.Context(), min(ui.cfg.Timeout, 3*time.Second))
	defer cancel()
	if names, err := ui.api.KnownWorkflows(ctx, p); err == nil && len(names) > 0 {
		names = slices.Clone(names)
		slices.Sort(names)
		ui.known, ui.knownFrom, ui.knownAt = names, "scheduler", time.Now()
		return names, ui.knownFrom
	}
	if ui.knownFrom == "" {
		ui.known, ui.knownFrom = seedWorkflows(), "seed"
	}
	return ui.known, ui.knownFrom
}

// seedWorkflows are the names of the workflows built into this binary.
func seedWorkflows() []string {
	defs, err := config.Workflows("")
	if err != nil {
		return nil
	}
	var out []string
	for _, src := range defs {
		if def, err := workflow.Parse(src); err == nil && def.Name != "" {
			out = append(out, def.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type runData struct {
	Run        uiRun
	DAG        template.HTML
	Steps      []string
	Definition string
	Outputs    string
	Running    bool
	// Report is the outputs read as a report (repo.code_review's); nil
	// when they are none.
	Report *uiReport
	// Took is how long the run took (or has run); Untimed how many of its
	// tasks' jobs were not read for their timing (past uiTaskTimings).
	Took    string
	Untimed int
}

// uiTaskTimings bounds the jobs a run's page reads for its tasks' timing
// (one read of a job per task, runCountWorkers at a time), and
// uiTaskTimingsLive while the run runs: its page reloads every 2 s.
const (
	uiTaskTimings     = 200
	uiTaskTimingsLive = 32
)

// taskTimes reads each task's job (one API call a task, the first limit
// of them) for when it started to run and ended: the run's
// record carries no times for its tasks. It returns how many tasks with
// a job it left out.
func (ui *Handler) taskTimes(r *http.Request, p Principal, tasks []uiTask, limit int) int {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runCountWorkers)
	read, left := 0, 0
	now := time.Now().UnixMilli()
	for i := range tasks {
		if tasks[i].JobID == "" {
			continue
		}
		if read == limit {
			left++
			continue
		}
		read++
		wg.Add(1)
		sem <- struct{}{}
		go func(t *uiTask) {
			defer func() { <-sem; wg.Done() }()
			var j uiJob
			if err := ui.apiCall(r, p, "GET /v1/jobs/{id}", url.Values{"result": {"false"}}, map[string]string{"id": t.JobID}, &j); err != nil {
				return
			}
			t.Started = cmp.Or(j.Start(), j.Created)
			t.Ended = j.End()
			end := cmp.Or(t.Ended, now)
			if t.Started > 0 {
				t.Took = fmtMS(max(0, end-t.Started))
			}
			t.Timed = true
		}(&tasks[i])
	}
	wg.Wait()
	return left
}

func (ui *Handler) uiRun(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	var run uiRun
	if err := ui.apiCall(r, p, "GET /v1/runs/{id}", url.Values{"events": {"true"}}, map[string]string{"id": r.PathValue("id")}, &run); err != nil {
		return nil, err
	}
	d := runData{Run: run, Running: run.State == "RUNNING", Outputs: prettyJSON(run.Outputs), Report: readReport(run.Outputs)}
	if run.Created > 0 {
		end := run.Updated
		if d.Running || end < run.Created {
			end = time.Now().UnixMilli()
		}
		d.Took = fmtMS(end - run.Created)
	}
	limit := uiTaskTimings
	if d.Running {
		limit = uiTaskTimingsLive
	}
	d.Untimed = ui.taskTimes(r, p, run.Tasks, limit)
	d.Run.Tasks = run.Tasks
	src := run.DefText
	if src == "" && len(run.Definition) > 0 {
		src = string(run.Definition)
	}
	d.Definition = src
	var steps []workflow.Step
	if def, err := workflow.Parse([]byte(src)); err == nil && src != "" {
		steps = def.Steps
	} else {
		// No definition to read: the tasks' steps, in order, unlinked.
		for _, t := range run.Tasks {
			if !slices.ContainsFunc(steps, func(s workflow.Step) bool { return s.ID == t.Step }) {
				steps = append(steps, workflow.Step{ID: t.Step})
			}
		}
	}
	for _, st := range steps {
		d.Steps = append(d.Steps, st.ID)
	}
	d.DAG = svgDAG(steps, run.Tasks)
	return &uiPage{Template: "run", Title: "Run " + run.RunID, Data: d}, nil
}

// ---------------------------------------------------------------- keys, audit

type keysData struct {
	Keys      []apikey.Record
	Available bool
}

func (ui *Handler) uiKeys(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	kl := ui.cfg.Keys
	d := keysData{Available: kl != nil}
	if kl != nil {
		ctx, cancel := ui.ctx(r)
		defer cancel()
		ks, err := kl.List(ctx, r.URL.Query().Get("tenant"))
		if err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
		}
		slices.SortFunc(ks, func(a, b apikey.Record) int { return b.CreatedAt.Compare(a.CreatedAt) })
		if len(ks) > 1000 {
			ks = ks[:1000]
		}
		d.Keys = ks
	}
	return &uiPage{Template: "keys", Title: "API keys", Data: d}, nil
}

type auditData struct {
	Entries       []audit.Entry
	Actions       []string
	Action, Actor string
	Limit         int
}

func (ui *Handler) uiAudit(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
	in := r.URL.Query()
	limit, err := limitParam(r, uiDefaultRows)
	if err != nil {
		return nil, err
	}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if a := in.Get("action"); a != "" {
		q.Set("action", a)
	}
	if a := in.Get("actor"); a != "" {
		q.Set("actor", a)
	}
	var l struct {
		Entries []audit.Entry `json:"entries"`
	}
	if err := ui.apiCall(r, p, "GET /v1/audit", q, nil, &l); err != nil {
		return nil, err
	}
	slices.SortFunc(l.Entries, func(a, b audit.Entry) int { return b.At.Compare(a.At) })
	d := auditData{Entries: l.Entries, Actions: audit.Actions(), Action: in.Get("action"), Actor: in.Get("actor"), Limit: limit}
	return &uiPage{Template: "audit", Title: "Audit log", Data: d}, nil
}
