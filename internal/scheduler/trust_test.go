package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// The trust tests: what a host or a tenant says of itself is checked
// against what the bus (the subject its credential let it publish on)
// says, and a report or request that claims more is refused and changes
// nothing. Each test also takes the legitimate path, so that a refusal
// cannot come from a mistake in the test.

// refusedReports is ward_scheduler_refused_reports_total{kind, reason}.
func refusedReports(kind string, code reason.Code) float64 {
	return metric("ward_scheduler_refused_reports_total", "kind", kind, "reason", string(code))
}

// lateUpdates is ward_scheduler_late_updates_total{kind}.
func lateUpdates(kind string) float64 {
	return metric("ward_scheduler_late_updates_total", "kind", kind)
}

// waitMetric polls until the metric read by get is at least want.
func waitMetric(t *testing.T, what string, get func() float64, want float64) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, func() bool { return get() >= want })
}

// quarantined reports whether worker id is quarantined in the store.
func (e *env) quarantined(id string) bool {
	e.t.Helper()
	q, err := e.store.Quarantined(context.Background(), time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	_, ok := q[id]
	return ok
}

// TestResultOfAnotherHostIsRefused: a host's result for a job running on
// another host — whether it names the other host or itself, succeeded or
// failed — is refused and changes nothing; the job's own host's result is
// applied.
func TestResultOfAnotherHostIsRefused(t *testing.T) {
	e := start(t, options{sched: "failure_domains: {quarantine_failures: 1, quarantine_cooldown: 1h, min_samples: 1000}\n"})
	owner := e.addHost(hb("owner", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	intruder := e.addHost(hb("intruder", "b2"), nil)
	e.waitWorkers("owner", "intruder")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	before := e.waitState(id, jobstore.Running)
	if before.WorkerID != "owner" || before.Attempt != 1 {
		t.Fatalf("job on %q, attempt %d", before.WorkerID, before.Attempt)
	}
	nEvents := len(e.events(id))

	// It says it is the owner's: the subject says otherwise.
	refused := refusedReports("result", reason.StaleResult)
	intruder.publish(&wardv1.JobResult{JobId: id, WorkerId: "owner", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: "forged"})
	waitMetric(t, "the result naming the owner refused", func() float64 { return refusedReports("result", reason.StaleResult) }, refused+1)
	// It names itself: the job is not its (IfWorker), success or failure.
	late := lateUpdates("result")
	intruder.publish(&wardv1.JobResult{JobId: id, WorkerId: "intruder", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: "forged"})
	intruder.publish(&wardv1.JobResult{JobId: id, Attempt: 1, Status: wardv1.JobState_JOB_STATE_FAILED, ErrorCode: string(reason.Internal)})
	waitMetric(t, "the intruder's own results refused", func() float64 { return lateUpdates("result") }, late+2)

	j := e.job(id)
	if j.State != jobstore.Running || j.WorkerID != "owner" || j.Attempt != 1 || j.ResultPtr != "" || len(e.events(id)) != nEvents {
		t.Fatalf("after the intruder's results: %s on %q, attempt %d, result %q, %d events (was %d)",
			j.State, j.WorkerID, j.Attempt, j.ResultPtr, len(e.events(id)), nEvents)
	}
	if e.quarantined("owner") || e.quarantined("intruder") {
		t.Fatal("the intruder's failure was counted against a host")
	}

	// The owner's result is applied.
	owner.releaseAll()
	j = e.waitState(id, jobstore.Succeeded)
	if b, err := e.store.Blob(context.Background(), j.ResultPtr); err != nil || string(b) != "done by owner" || j.WorkerID != "owner" {
		t.Fatalf("the owner's result: %q %v on %q", b, err, j.WorkerID)
	}
}

// TestResultOfEarlierAttemptIsRefused: once a failed attempt has been
// retried, the late reports of the earlier attempt (a success, a failure,
// streamed output) and a report that names no attempt are refused; the
// job stays at the attempt it is at, whose own result and output are
// applied and forwarded.
func TestResultOfEarlierAttemptIsRefused(t *testing.T) {
	e := start(t, options{sched: "retries: {base: 10ms, max: 50ms}\nfailure_domains: {quarantine_failures: 1, quarantine_cooldown: 1h, min_samples: 1000}\n"})
	h := e.addHost(hb("h", "a"), func(_ *wardv1.JobRequest, attempt int) outcome {
		if attempt == 1 {
			return outcome{fail: true, code: string(reason.Exit)}
		}
		return outcome{hold: true}
	})
	e.waitWorkers("h")
	const id = "retried"
	w, err := e.client.Watch(id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: id, Budget: &wardv1.Budget{MaxRetries: 2}})
	poll.Until(t, 15*time.Second, "attempt 2 running", func() bool {
		j := e.job(id)
		return j.State == jobstore.Running && j.Attempt == 2 && h.attempt(id) == 2
	})
	nEvents := len(e.events(id))

	refused := refusedReports("result", reason.StaleResult)
	// Attempt 1's late success: the store refuses it (IfAttempt).
	h.publish(&wardv1.JobResult{JobId: id, WorkerId: "h", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: "stale"})
	waitMetric(t, "attempt 1's success refused", func() float64 { return refusedReports("result", reason.StaleResult) }, refused+1)
	// Attempt 1's late failure: it would retry the job again, and count
	// against the host.
	h.publish(&wardv1.JobResult{JobId: id, WorkerId: "h", Attempt: 1, Status: wardv1.JobState_JOB_STATE_FAILED, ErrorCode: string(reason.Internal)})
	waitMetric(t, "attempt 1's failure refused", func() float64 { return refusedReports("result", reason.StaleResult) }, refused+2)
	// A result that names no attempt.
	h.publish(&wardv1.JobResult{JobId: id, WorkerId: "h", Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: "stale"})
	waitMetric(t, "a result without its attempt refused", func() float64 { return refusedReports("result", reason.StaleResult) }, refused+3)
	// Attempt 1's late output is not forwarded.
	progress := refusedReports("progress", reason.StaleResult)
	h.publish(&wardv1.JobProgress{JobId: id, WorkerId: "h", Attempt: 1, Kind: wardv1.JobProgress_KIND_OUTPUT, Seq: 1, Output: []byte("attempt 1")})
	waitMetric(t, "attempt 1's output refused", func() float64 { return refusedReports("progress", reason.StaleResult) }, progress+1)

	j := e.job(id)
	if j.State != jobstore.Running || j.Attempt != 2 || j.ResultPtr != "" || len(e.events(id)) != nEvents {
		t.Fatalf("after attempt 1's late reports: %s, attempt %d, result %q, %d events (was %d)", j.State, j.Attempt, j.ResultPtr, len(e.events(id)), nEvents)
	}
	if e.quarantined("h") {
		t.Fatal("attempt 1's late failure was counted against the host")
	}

	// Attempt 2's output is forwarded, and its result applied.
	h.publish(&wardv1.JobProgress{JobId: id, WorkerId: "h", Attempt: 2, Kind: wardv1.JobProgress_KIND_OUTPUT, Seq: 1, Output: []byte("attempt 2")})
	h.releaseAll()
	j = e.waitState(id, jobstore.Succeeded)
	if b, err := e.store.Blob(context.Background(), j.ResultPtr); err != nil || string(b) != "done by h" || j.Attempt != 2 {
		t.Fatalf("attempt 2's result: %q %v, attempt %d", b, err, j.Attempt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var outputs []string
	if _, err := e.client.Wait(ctx, id, w, func(ev *wardv1.JobEvent) {
		if p := ev.GetProgress(); p.GetKind() == wardv1.JobProgress_KIND_OUTPUT {
			outputs = append(outputs, string(p.GetOutput()))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(outputs, []string{"attempt 2"}) {
		t.Fatalf("output forwarded: %q", outputs)
	}
}

// TestHeartbeatAdmission: a heartbeat that names another worker than its
// subject, or carries no credential, leaves its host unknown; pools and GPU
// claims the credential does not allow are dropped. Jobs are not placed
// where the refused claims would have put them, and are once the claims
// are the credential's.
func TestHeartbeatAdmission(t *testing.T) {
	e := start(t, options{pools: `
topics:
  job.a: a
  job.b: b
  job.cuda: cuda
pools:
  a: {}
  b: {}
  cuda: {requires: [gpu]}
`})
	refusedBeats := func() float64 { return refusedReports("heartbeat", reason.HostNotAdmitted) }
	// noWorkers submits a job for topic and requires that it fails for
	// want of a host, having run nowhere.
	noWorkers := func(topic string) {
		t.Helper()
		id := e.mustSubmit(&wardv1.JobRequest{Topic: topic})
		if j := e.waitEnd(id); j.State != jobstore.Failed || j.Reason != string(reason.NoWorkers) || j.WorkerID != "" {
			t.Fatalf("%s: %s %s on %q, want FAILED no_workers", topic, j.State, j.Reason, j.WorkerID)
		}
	}
	// ranOn submits a job for topic and requires that it succeeds on host.
	ranOn := func(topic, host string) {
		t.Helper()
		id := e.mustSubmit(&wardv1.JobRequest{Topic: topic})
		if j := e.waitEnd(id); j.State != jobstore.Succeeded || j.WorkerID != host {
			t.Fatalf("%s: %s %s on %q, want SUCCEEDED on %s", topic, j.State, j.Reason, j.WorkerID, host)
		}
	}
	unknown := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if _, ok := e.scheds[0].Hosts().Get(id); ok {
				t.Fatalf("host %s admitted", id)
			}
		}
	}

	// A heartbeat naming another worker than its subject's.
	{
		before := refusedBeats()
		liar := e.startHost(hostSpec{hb: hb("liar", "a"), cred: auth.IssueOptions{GPU: true},
			mangle: func(hb *wardv1.Heartbeat) { hb.WorkerId = "victim" }})
		waitMetric(t, "the liar's heartbeat refused", refusedBeats, before+1)
		unknown("liar", "victim")
		noWorkers("job.a")
		if n, _ := liar.got(); n != 0 {
			t.Fatalf("the liar got %d jobs", n)
		}
		// Its own name: admitted.
		liar.setMangle(nil)
		e.waitWorkers("liar")
		ranOn("job.a", "liar")
		liar.stop()
		poll.Until(t, 10*time.Second, "liar gone", func() bool { _, ok := e.scheds[0].Hosts().Get("liar"); return !ok })
	}

	// A heartbeat without a credential, or with another host's.
	{
		before := refusedBeats()
		anon := e.startHost(hostSpec{hb: hb("anon", "a"), cred: auth.IssueOptions{GPU: true},
			mangle: func(hb *wardv1.Heartbeat) { hb.Credential = "" }})
		waitMetric(t, "the heartbeat without a credential refused", refusedBeats, before+1)
		unknown("anon")
		noWorkers("job.a")
		// Another host's credential is no better.
		other := e.secure.Creds(auth.Host, "other", auth.IssueOptions{GPU: true})
		_, otherJWT, err := auth.ReadIdentity(other)
		if err != nil {
			t.Fatal(err)
		}
		before = refusedBeats()
		anon.setMangle(func(hb *wardv1.Heartbeat) { hb.Credential = otherJWT })
		waitMetric(t, "the heartbeat with another host's credential refused", refusedBeats, before+1)
		unknown("anon")
		noWorkers("job.a")
		if n, _ := anon.got(); n != 0 {
			t.Fatalf("the host without a credential got %d jobs", n)
		}
		// With its own: admitted.
		anon.setMangle(nil)
		e.waitWorkers("anon")
		ranOn("job.a", "anon")
		anon.stop()
		poll.Until(t, 10*time.Second, "anon gone", func() bool { _, ok := e.scheds[0].Hosts().Get("anon"); return !ok })
	}

	// Claims of pools and GPUs that the credential does not allow.
	{
		claims := func(id string) *wardv1.Heartbeat {
			return &wardv1.Heartbeat{WorkerId: id, Pools: []string{"a", "b", "cuda"}, Capabilities: []string{"gpu"}, Type: "gpu", MaxParallelJobs: 4}
		}
		narrow := e.startHost(hostSpec{hb: claims("narrow"), cred: auth.IssueOptions{Pools: []string{"b", "cuda"}}})
		e.waitWorkers("narrow")
		// Pool a is not its credential's, and neither are GPUs.
		noWorkers("job.a")
		noWorkers("job.cuda")
		if n, _ := narrow.got(); n != 0 {
			t.Fatalf("narrow got %d jobs", n)
		}
		// Pool b is.
		ranOn("job.b", "narrow")
		// A host whose credential allows GPUs serves cuda.
		e.startHost(hostSpec{hb: claims("gpu-host"), cred: auth.IssueOptions{Pools: []string{"cuda"}, GPU: true}})
		e.waitWorkers("gpu-host")
		ranOn("job.cuda", "gpu-host")
		noWorkers("job.a")
	}
}

// TestTenantMismatchIsRefused: a submission naming a tenant other than
// the one its subject (its credential) names is refused tenant_mismatch
// and stores nothing; naming its own tenant, or none, it is accepted.
func TestTenantMismatchIsRefused(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: "j1", Topic: "job.a", TenantId: "beta"})
	if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.TenantMismatch) {
		t.Fatalf("acme submitting for beta: %v %v", reply, err)
	}
	if _, err := e.store.Get(ctx, "j1"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("the refused job was stored: %v", err)
	}
	// The same job for its own tenant.
	if _, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: "j1", Topic: "job.a", TenantId: "acme"}); err != nil {
		t.Fatal(err)
	}
	if j := e.waitState("j1", jobstore.Succeeded); j.Tenant != "acme" {
		t.Fatalf("tenant %q", j.Tenant)
	}
	// Naming none, a tenant's job is its credential's.
	beta, err := e.tenant("beta")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := beta.Submit(ctx, &wardv1.JobRequest{JobId: "j2", Topic: "job.a"}); err != nil {
		t.Fatal(err)
	}
	if j := e.waitState("j2", jobstore.Succeeded); j.Tenant != "beta" {
		t.Fatalf("tenant %q", j.Tenant)
	}
}

// TestTenantsSeeTheirOwnJobs: another tenant's get and cancel of a job
// answer "not found" and change nothing, and its list leaves the job out;
// the job's tenant and the admin see it, and its tenant cancels it.
func TestTenantsSeeTheirOwnJobs(t *testing.T) {
	e := start(t, options{})
	h := e.addHost(hb("h", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{hold: true} })
	e.waitWorkers("h")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	e.waitState(id, jobstore.Running)
	nEvents := len(e.events(id))
	beta, err := e.tenant("beta")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(c *client.Client) bool {
		t.Helper()
		jobs, err := c.List(ctx, 100, wardv1.JobState_JOB_STATE_UNSPECIFIED)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(jobs, func(r *wardv1.JobRecord) bool { return r.GetJobId() == id })
	}

	if rec, err := beta.Get(ctx, id, false); err == nil || !strings.Contains(err.Error(), "not found") || rec != nil {
		t.Fatalf("beta's get of acme's job: %v %v", rec, err)
	}
	if rec, err := beta.Cancel(ctx, id, "mine now"); err == nil || !strings.Contains(err.Error(), "not found") || rec != nil {
		t.Fatalf("beta's cancel of acme's job: %v %v", rec, err)
	}
	if listed(beta) {
		t.Fatal("beta's list shows acme's job")
	}
	if j := e.job(id); j.State != jobstore.Running || len(e.events(id)) != nEvents {
		t.Fatalf("after beta's cancel: %s, %d events (was %d)", j.State, len(e.events(id)), nEvents)
	}
	if n := len(h.runningNow()); n != 1 {
		t.Fatalf("the host runs %d jobs", n)
	}

	// Its tenant and the admin see it; its tenant cancels it.
	for name, c := range map[string]*client.Client{"acme": e.client, "admin": e.admin} {
		if rec, err := c.Get(ctx, id, false); err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_RUNNING {
			t.Fatalf("%s's get: %v %v", name, rec, err)
		}
		if !listed(c) {
			t.Fatalf("%s's list lacks the job", name)
		}
	}
	if rec, err := e.client.Cancel(ctx, id, ""); err != nil || rec.GetState() != wardv1.JobState_JOB_STATE_CANCELLED {
		t.Fatalf("acme's cancel: %v %v", rec, err)
	}
	poll.Until(t, 10*time.Second, "the host stopped the job", func() bool { return len(h.runningNow()) == 0 })
}

// TestJobFaultsDoNotQuarantine: attempts that fail on the job's own input
// or module (module_error, exit, trap ...) are counted against the tenant
// and the module, not the host, which stays eligible however many there
// are; failures of the host's own (internal) quarantine it.
func TestJobFaultsDoNotQuarantine(t *testing.T) {
	e := start(t, options{sched: "failure_domains: {quarantine_failures: 3, quarantine_cooldown: 1h, min_samples: 1000}\n"})
	h := e.addHost(hb("h", "a"), func(req *wardv1.JobRequest, _ int) outcome {
		if code, ok := strings.CutPrefix(req.GetJobId(), "fail-"); ok {
			code, _, _ = strings.Cut(code, "-")
			return outcome{fail: true, code: code}
		}
		return outcome{}
	})
	e.waitWorkers("h")
	jobFailures := func(code reason.Code) float64 {
		return metric("ward_scheduler_job_failures_total", "tenant", "acme", "module", "a", "code", string(code))
	}
	before := jobFailures(reason.ModuleError)
	for i := range 5 {
		id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "fail-module_error-" + string(rune('0'+i))})
		if j := e.waitState(id, jobstore.Failed); j.ErrorCode != string(reason.ModuleError) || j.WorkerID != "h" {
			t.Fatalf("module error: %s %s on %q", j.State, j.ErrorCode, j.WorkerID)
		}
	}
	for _, code := range []reason.Code{reason.Exit, reason.Trap} {
		e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "fail-" + string(code) + "-0"}), jobstore.Failed)
	}
	if got := jobFailures(reason.ModuleError); got != before+5 {
		t.Errorf("module_error failures counted %v, want %v", got, before+5)
	}
	if e.quarantined("h") {
		t.Fatal("the job's own failures quarantined the host")
	}
	// The host still serves.
	if j := e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"}), jobstore.Succeeded); j.WorkerID != "h" {
		t.Fatalf("ran on %q", j.WorkerID)
	}

	// Its own failures count: three quarantine it.
	for i := range 3 {
		e.waitState(e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "fail-internal-" + string(rune('0'+i))}), jobstore.Failed)
	}
	poll.Until(t, 10*time.Second, "h quarantined", func() bool { return e.quarantined("h") })
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	poll.Until(t, 10*time.Second, "job waits", func() bool { return e.job(id).Waiting == "queue:a" })
	if ev := lastEvent(e.events(id), jobstore.Pending); !strings.Contains(ev.Message, "h=quarantined") {
		t.Errorf("queued event %q", ev.Message)
	}
	if n, _ := h.got(); n != 11 {
		t.Errorf("the host got %d jobs, want 11", n)
	}
	_, _ = e.client.Cancel(context.Background(), id, "")
}

// TestInsecure: without auth (--insecure) jobs run on unsigned dispatches
// and heartbeats carry no credential, but a heartbeat must still name the
// worker of its subject, and a report the host of its subject.
func TestInsecure(t *testing.T) {
	e := start(t, options{insecure: true})
	before := refusedReports("heartbeat", reason.HostNotAdmitted)
	h := e.startHost(hostSpec{hb: hb("h", "a"), mangle: func(hb *wardv1.Heartbeat) { hb.WorkerId = "victim" }})
	waitMetric(t, "the heartbeat naming another worker refused", func() float64 { return refusedReports("heartbeat", reason.HostNotAdmitted) }, before+1)
	if _, ok := e.scheds[0].Hosts().Get("victim"); ok {
		t.Fatal("victim admitted")
	}
	h.setMangle(nil)
	e.waitWorkers("h")
	id := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Succeeded); j.WorkerID != "h" || j.Tenant != "acme" {
		t.Fatalf("ran on %q for %q", j.WorkerID, j.Tenant)
	}
}
