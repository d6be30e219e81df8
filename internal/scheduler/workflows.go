package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/api/reason"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/workflow"
)

// Workflow runs (package workflow): the replica that accepts a run drives
// it. Each assignment the engine makes becomes an ordinary job — checked
// by the policy, placed, retried, recorded — whose id is the run's and
// the task's ("<run>-<task>"), so that it is made once however often it
// is asked for. Each job's end goes back to the engine. Every event the
// engine logs is appended to the run's log in the job store (RunStore)
// by the replica holding the run's claim, and published on
// sys.workflow.event.<tenant>.<run>. A replica that dies leaves its runs'
// claims to run out; another claims them (OrphanRuns), rebuilds their
// engines from their logs (workflow.Resume), takes the ends of the jobs
// that ended meanwhile, and carries them on.

// Labels a workflow step's job carries.
const (
	LabelRun  = "ward.run"
	LabelTask = "ward.task"
)

// runHost is what the workflow runs use of the scheduler replica that
// holds them: its id, logger, job store, bus, safety kernel, admins and
// settings, and the job operations a run asks of it. The runner holds no
// *Scheduler: the scheduler tells it of the jobs that end through the
// hook it registers at construction (runner.jobEnded).
type runHost struct {
	id       string // the replica's: the owner of the runs' claims
	log      *slog.Logger
	store    jobstore.Store
	bus      *bus.Conn
	safety   SafetyChecker
	admin    *admins          // a cancel for every tenant (admin.go)
	settings func() *settings // the configuration in force
	// refuseMode is the mode's refusal of a submission of priority, or "".
	refuseMode func(priority int32) (reason.Code, string)
	// submitJob accepts a step's job, taking no token of its tenant's rate
	// bucket, and returns the reply and, when it stored a new job, the
	// job's admission, to run next.
	submitJob func(ctx context.Context, req *wardv1.JobRequest) (*wardv1.SubmitReply, func())
	// cancelJob cancels a step's job (any tenant's) and tells its host.
	cancelJob func(ctx context.Context, id, why string) error
	// objects opens the tenants' object stores (a step's large result).
	objects func() (*bus.Objects, error)
	// jobRunEnded ends the job that follows a run, as the run ended
	// (jobruns.go).
	jobRunEnded func(ctx context.Context, id, tenant, name string, st workflow.RunState, why string, outputs any)
}

// runner drives the runs this replica holds.
type runner struct {
	runHost
	mu   sync.Mutex // guards the 3 following fields
	runs map[string]*liveRun
	jobs map[string]childRef // a step's job id → its run and task
	defs map[string][]byte   // definitions by name (config/workflows)
	// children are the child runs (job.workflow.run steps) of runs this
	// replica drives, by child run id, with the plan each was made from.
	children   map[string]childRef
	childPlans map[string]map[string]any
	wg         sync.WaitGroup // drive and finish goroutines
}

type childRef struct{ run, task string }

// liveRun is a run this replica drives.
type liveRun struct {
	mu       sync.Mutex // serializes the engine, saved and the log's appends
	id       string
	tenant   string
	name     string
	eng      *workflow.Engine
	saved    int // events stored
	timer    *time.Timer
	deadline time.Time
	step     time.Duration // a step's default timeout
	retries  int           // a step's default retries
	gone     bool          // ended, or taken over by another replica
	forJob   int           // whether it follows a job (jobruns.go): jobRunUnknown, jobRunYes, jobRunNo
}

func newRunner(h runHost, sources map[string][]byte) *runner {
	r := &runner{runHost: h, runs: map[string]*liveRun{}, jobs: map[string]childRef{}, children: map[string]childRef{},
		childPlans: map[string]map[string]any{}}
	r.load(sources)
	return r
}

// load puts the definitions of sources (by file) in force, by name: one
// that does not parse or compile is logged and left out (a run naming it
// is refused), one whose name another file has is logged and the first
// in file order kept. Runs already started keep their own definition.
func (r *runner) load(sources map[string][]byte) {
	files := make([]string, 0, len(sources))
	for f := range sources {
		files = append(files, f)
	}
	slices.Sort(files)
	defs := map[string][]byte{}
	for _, file := range files {
		src := sources[file]
		d, err := workflow.Parse(src)
		if err == nil {
			_, err = workflow.Compile(d, workflow.Options{})
		}
		if err != nil {
			r.log.Error("workflow definition not loaded", "file", file, "err", err)
			workflowReloads.WithLabelValues("error").Inc()
			continue
		}
		if _, dup := defs[d.Name]; dup {
			r.log.Error("workflow defined twice; the first kept", "workflow", d.Name, "file", file)
			continue
		}
		defs[d.Name] = src
	}
	r.mu.Lock()
	r.defs = defs
	r.mu.Unlock()
	workflowReloads.WithLabelValues("ok").Inc()
}

// def returns the definition named name.
func (r *runner) def(name string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.defs[name]
}

// childJobID is the id of task's job in run.
func childJobID(run, task string) string { return run + "-" + task }

// handleWorkflowRun starts a run: the definition compiled against the
// pools in force, the run checked by the policy as a whole, stored with
// its first events, then driven.
func (r *runner) handleWorkflowRun(ctx context.Context, msg *nats.Msg, req *wardv1.WorkflowRunRequest) {
	reply := r.start(ctx, bus.TenantOf(msg.Subject), req)
	if err := r.bus.Reply(msg, reply); err != nil {
		r.log.Warn("workflow run reply failed", "run", reply.GetRunId(), "err", err)
	}
}

func refuseRun(code reason.Code, format string, args ...any) *wardv1.WorkflowRunReply {
	submitsRefused.WithLabelValues(string(code)).Inc()
	return &wardv1.WorkflowRunReply{Reason: string(code), Message: fmt.Sprintf(format, args...)}
}

func (r *runner) start(ctx context.Context, tenant string, req *wardv1.WorkflowRunRequest) *wardv1.WorkflowRunReply {
	switch {
	case tenant == bus.AllTenants && req.GetTenantId() == "":
		return refuseRun(reason.BadRequest, "a run is for a tenant: name it (tenant_id) or submit on %s", bus.TenantSubject(bus.SubjectWorkflowRun, "<tenant>"))
	case tenant == bus.AllTenants:
		tenant = req.GetTenantId()
	case req.GetTenantId() != "" && req.GetTenantId() != tenant:
		return refuseRun(reason.TenantMismatch, "the run names tenant %q, its credential is tenant %q's", req.GetTenantId(), tenant)
	case strings.ContainsAny(req.GetRunId(), " .*>\t\r\n"):
		return refuseRun(reason.BadRequest, "run id %q may not contain spaces, dots or wildcards", req.GetRunId())
	}
	if code, m := r.refuseMode(0); code != "" {
		return refuseRun(code, "%s", m)
	}
	src := req.GetDefinition()
	var prev *previousRun
	if req.GetRerunOf() != "" {
		var refusal *wardv1.WorkflowRunReply
		if prev, refusal = r.previous(ctx, tenant, req.GetRerunOf()); refusal != nil {
			return refusal
		}
		if len(src) == 0 {
			src = prev.run.Definition
		}
		if len(req.GetInput()) == 0 {
			req.Input = prev.run.Input
		}
	}
	if len(src) == 0 {
		name := strings.TrimPrefix(req.GetName(), "job.workflow.")
		if src = r.def(name); src == nil {
			return refuseRun(reason.WorkflowUnknown, "no workflow is named %q (known: %s)", req.GetName(), strings.Join(r.names(), ", "))
		}
	}
	def, err := workflow.Parse(src)
	if err != nil {
		return refuseRun(reason.WorkflowInvalid, "%v", err)
	}
	c := r.settings()
	plan, err := workflow.Compile(def, workflow.Options{Served: func(topic string) bool {
		_, named := r.workflowOf(topic) // a step that runs a workflow (jobruns.go)
		return topic == TopicWorkflowRun || named || len(c.pools.PoolsFor(topic)) > 0
	}})
	if err != nil {
		return refuseRun(reason.WorkflowInvalid, "%v", err)
	}
	input := map[string]any{}
	if len(req.GetInput()) > 0 {
		if err := json.Unmarshal(req.GetInput(), &input); err != nil {
			return refuseRun(reason.BadRequest, "input is not a JSON object: %v", err)
		}
	}
	wt := c.timeouts.Workflows
	if n := r.running(tenant); n >= wt.MaxRunningRuns {
		return refuseRun(reason.WorkflowBusy, "tenant %s has %d runs running (workflows.max_running_runs)", tenant, n)
	}
	id := req.GetRunId()
	if id == "" {
		id = "run-" + uuid.NewString()
	}
	// The policy sees the whole run before anything of it starts.
	check := &safetyv1.CheckRequest{JobId: id, Topic: "job.workflow." + def.Name, TenantId: tenant,
		Workflow: &safetyv1.WorkflowRequest{Name: def.Name}}
	for _, sid := range plan.Steps() {
		st, _ := plan.Step(sid)
		check.Workflow.Steps = append(check.Workflow.Steps, &safetyv1.WorkflowStep{Id: st.ID, Topic: st.Topic, DependsOn: st.DependsOn, ForEach: st.ForEach != ""})
	}
	d, err := r.safety.Check(ctx, check)
	switch {
	case err != nil:
		return refuseRun(reason.SafetyUnavailable, "the safety kernel did not answer: %v", err)
	case d.GetDecision() == safetyv1.Decision_DECISION_DENY:
		return refuseRun(reason.SafetyDenied, "the policy denies the run: %s", strings.Join(d.GetReasons(), "; "))
	}
	var re workflow.Rerun
	if prev != nil {
		if _, ok := plan.Step(req.GetFromStep()); !ok {
			return refuseRun(reason.BadRequest, "rerun from step %q: %s has no such step", req.GetFromStep(), def.Name)
		}
		down := plan.Downstream(req.GetFromStep())
		re = workflow.Rerun{Of: prev.run.ID, Outputs: map[string]any{}}
		for _, st := range prev.eng.Steps() {
			if _, ok := plan.Step(st.ID); ok && !down[st.ID] && st.State == workflow.Succeeded {
				re.Outputs[st.ID] = st.Output
			}
		}
	}
	eng, err := workflow.StartRun(plan, id, input, re)
	if err != nil {
		return refuseRun(reason.BadRequest, "%v", err)
	}
	now := time.Now()
	runTimeout := wt.RunTimeout
	if def.Timeout > 0 {
		runTimeout = def.Timeout.Std()
	}
	inJSON, _ := json.Marshal(input)
	lr := &liveRun{id: id, tenant: tenant, name: def.Name, eng: eng, deadline: now.Add(runTimeout), step: wt.StepTimeout, retries: wt.StepRetries}
	events, err := encodeEvents(eng.Log().Events())
	if err != nil {
		return refuseRun(reason.Internal, "%v", err)
	}
	// A run may end as it starts (every step skipped or failed at once).
	st, why := eng.State()
	err = r.store.CreateRun(ctx, &jobstore.Run{ID: id, Tenant: tenant, Workflow: def.Name, Definition: src, Input: inJSON,
		State: string(st), Reason: why, Owner: r.id, OwnedUntil: now.Add(r.claimTTL()), Deadline: lr.deadline}, events)
	switch {
	case errors.Is(err, jobstore.ErrExists):
		// The same run asked for again (a client's retry): accepted once.
		// Another tenant's id says nothing of that run.
		if prev, _, gerr := r.store.GetRun(ctx, id); gerr == nil && prev.Tenant == tenant {
			return &wardv1.WorkflowRunReply{RunId: id, Accepted: true, Duplicate: true, Steps: plan.Steps()}
		}
		return refuseRun(reason.BadRequest, "run id %q cannot be used: pick another", id)
	case err != nil:
		logStoreFailure(r.log, "create run", id, err)
		return refuseRun(reason.StoreError, "job store unavailable")
	}
	lr.saved = len(events)
	r.publish(lr, eng.Log().Events())
	if st != workflow.RunRunning {
		r.childEnded(lr)
		r.runEnded(lr)
		return &wardv1.WorkflowRunReply{RunId: id, Accepted: true, Steps: plan.Steps()}
	}
	r.adopt(lr)
	r.log.Info("workflow run started", "run", id, "workflow", def.Name, "tenant", tenant, "steps", len(def.Steps))
	r.goDrive(lr)
	return &wardv1.WorkflowRunReply{RunId: id, Accepted: true, Steps: plan.Steps()}
}

// previousRun is a run a rerun reuses, rebuilt from its log.
type previousRun struct {
	run *jobstore.Run
	eng *workflow.Engine
}

// previous reads run id of tenant for a rerun.
func (r *runner) previous(ctx context.Context, tenant, id string) (*previousRun, *wardv1.WorkflowRunReply) {
	run, raw, err := r.store.GetRun(ctx, id)
	switch {
	case errors.Is(err, jobstore.ErrNotFound) || (err == nil && run.Tenant != tenant):
		return nil, refuseRun(reason.BadRequest, "rerun: run %s not found", id)
	case err != nil:
		logStoreFailure(r.log, "get run", id, err)
		return nil, refuseRun(reason.StoreError, "job store unavailable")
	case run.State == jobstore.RunRunning:
		return nil, refuseRun(reason.BadRequest, "rerun: run %s is still running", id)
	}
	events := make([]workflow.Event, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &events[i]); err != nil {
			return nil, refuseRun(reason.Internal, "rerun: run %s's log does not decode: %v", id, err)
		}
	}
	def, err := workflow.Parse(run.Definition)
	if err != nil {
		return nil, refuseRun(reason.Internal, "rerun: %v", err)
	}
	plan, err := workflow.Compile(def, workflow.Options{})
	if err != nil {
		return nil, refuseRun(reason.Internal, "rerun: %v", err)
	}
	eng, err := workflow.Resume(plan, events)
	if err != nil {
		return nil, refuseRun(reason.Internal, "rerun: run %s's log does not hold: %v", id, err)
	}
	return &previousRun{run: run, eng: eng}, nil
}

func (r *runner) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.defs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// running counts tenant's runs this replica drives.
func (r *runner) running(tenant string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, lr := range r.runs {
		if lr.tenant == tenant {
			n++
		}
	}
	return n
}

// claimTTL is how long a run's claim lasts unrenewed: the reconciler's
// lease's.
func (r *runner) claimTTL() time.Duration { return r.settings().timeouts.Reconciler.LeaseTTL }

// adopt makes lr one of this replica's runs and arms its timeout.
func (r *runner) adopt(lr *liveRun) {
	r.mu.Lock()
	r.runs[lr.id] = lr
	for _, task := range lr.eng.Running() {
		r.jobs[childJobID(lr.id, task)] = childRef{run: lr.id, task: task}
	}
	r.mu.Unlock()
	lr.timer = time.AfterFunc(time.Until(lr.deadline), func() { r.timeOut(lr) })
}

// forget drops lr: it ended, or another replica drives it now.
func (r *runner) forget(lr *liveRun) {
	lr.gone = true
	if lr.timer != nil {
		lr.timer.Stop()
	}
	r.mu.Lock()
	delete(r.runs, lr.id)
	for job, ref := range r.jobs {
		if ref.run == lr.id {
			delete(r.jobs, job)
		}
	}
	r.mu.Unlock()
}

func (r *runner) goDrive(lr *liveRun) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.drive(context.Background(), lr)
	}()
}

// drive makes the jobs of every task the engine assigns, and stores what
// it logged.
func (r *runner) drive(ctx context.Context, lr *liveRun) {
	for {
		lr.mu.Lock()
		if lr.gone {
			lr.mu.Unlock()
			return
		}
		var as []*workflow.Assignment
		for {
			a, ok := lr.eng.Next()
			if !ok {
				break
			}
			as = append(as, a)
		}
		if len(as) > 0 {
			r.mu.Lock()
			for _, a := range as {
				r.jobs[childJobID(lr.id, a.Task)] = childRef{run: lr.id, task: a.Task}
			}
			r.mu.Unlock()
		}
		ok := r.save(ctx, lr)
		lr.mu.Unlock()
		if !ok || len(as) == 0 {
			return
		}
		for _, a := range as {
			r.submit(ctx, lr, a)
		}
	}
}

// submit makes task a's job, through admission as any job: the policy
// checks it, a host is chosen, it is retried and recorded.
func (r *runner) submit(ctx context.Context, lr *liveRun, a *workflow.Assignment) {
	if a.Topic == TopicWorkflowRun {
		r.startChild(ctx, lr, a)
		return
	}
	retries := lr.retries
	if a.Retries != nil {
		retries = *a.Retries
	}
	timeout := lr.step
	if a.Timeout > 0 {
		timeout = a.Timeout.Std()
	}
	// Its id is its idempotency key too: asked for again (a takeover, a
	// retried drive), it is the same job.
	req := &wardv1.JobRequest{JobId: childJobID(lr.id, a.Task), IdempotencyKey: childJobID(lr.id, a.Task), TenantId: lr.tenant, Topic: a.Topic, Payload: a.Payload,
		Labels: map[string]string{LabelRun: lr.id, LabelTask: a.Task},
		Budget: &wardv1.Budget{MaxRetries: int32(retries), DeadlineMs: timeout.Milliseconds()}}
	reply, admit := r.submitJob(ctx, req)
	// The store unreachable for a moment (a Redis restart, a cluster
	// master's failover) is no reason to fail the step: ask again, the
	// id being the idempotency key, for up to about 15 s.
	for wait := 250 * time.Millisecond; !reply.GetAccepted() && reply.GetReason() == string(reason.StoreError) && wait <= 4*time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if ctx.Err() != nil {
			break
		}
		reply, admit = r.submitJob(ctx, req)
	}
	switch {
	case reply.GetDuplicate():
		return // made before (a replica that died, a retried drive): its end comes as any job's
	case !reply.GetAccepted():
		r.complete(lr, a.Task, workflow.Result{Error: reply.GetReason() + ": " + reply.GetMessage(), JobID: req.JobId})
		return
	}
	admit() // its placement, at once or from a queue later, is logged by taskPlaced
}

// taskPlaced logs where a run's task's job was placed, as the scheduler
// dispatches it (schedule): the policy decision it rests on and the
// placement's reasoning, once a task (its job's first placement, at
// admission or from a queue). A run another replica drives is that
// replica's to log; a task that ended meanwhile logs nothing.
func (r *runner) taskPlaced(ctx context.Context, run, task string, p workflow.Placement) {
	r.mu.Lock()
	lr := r.runs[run]
	r.mu.Unlock()
	if lr == nil {
		return
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.gone || !lr.eng.Unplaced(task) || lr.eng.Placed(task, p) != nil {
		return
	}
	r.save(ctx, lr)
}

// jobEnded takes the end of a job this replica moved: a step's job of a
// run it drives goes back to the run's engine.
func (r *runner) jobEnded(job *jobstore.Job) {
	r.stopRunOfJob(job)
	r.mu.Lock()
	ref, ok := r.jobs[job.ID]
	lr := r.runs[ref.run]
	if ok {
		delete(r.jobs, job.ID)
	}
	r.mu.Unlock()
	if !ok || lr == nil {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.finish(context.Background(), lr, ref.task, job.ID)
		r.drive(context.Background(), lr)
	}()
}

// finish reads how task's job ended and hands it to the engine.
func (r *runner) finish(ctx context.Context, lr *liveRun, task, jobID string) {
	job, err := r.store.Get(ctx, jobID)
	if err != nil {
		logStoreFailure(r.log, "workflow step", jobID, err)
		return
	}
	res := workflow.Result{OK: job.State == jobstore.Succeeded, JobID: jobID}
	if job.Safety != nil {
		res.DecisionID = job.Safety.DecisionID
	}
	if res.OK {
		out, err := r.output(ctx, job)
		if err != nil {
			res.OK, res.Error = false, "its result could not be read: "+err.Error()
		}
		res.Output = out
	} else {
		res.Error = string(job.State)
		switch {
		case job.ErrorCode != "":
			res.Error += ": " + job.ErrorCode + ": " + job.ErrorMessage
		case job.Reason != "":
			res.Error += ": " + job.Reason
		}
	}
	r.complete(lr, task, res)
}

// output is a succeeded job's result, decoded (workflow.DecodeOutput).
func (r *runner) output(ctx context.Context, job *jobstore.Job) (any, error) {
	if job.ResultPtr == "" {
		return nil, nil
	}
	var b []byte
	var err error
	if isObjectResult(job) {
		var objs *bus.Objects
		if objs, err = r.objects(); err != nil {
			return nil, err
		}
		b, err = objs.GetResult(ctx, job.Tenant, job.ResultPtr, job.ResultDigest, maxStepOutput)
	} else {
		b, err = r.store.Blob(ctx, job.ResultPtr)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxStepOutput {
		return nil, fmt.Errorf("%d bytes, more than the %d a step's output may hold", len(b), maxStepOutput)
	}
	return workflow.DecodeOutput(b), nil
}

// maxStepOutput bounds a step's output the engine keeps (and logs).
const maxStepOutput = 8 << 20

// complete hands a task's end to the engine and stores what it logged.
func (r *runner) complete(lr *liveRun, task string, res workflow.Result) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.gone {
		return
	}
	if err := lr.eng.Complete(task, res); err != nil {
		r.log.Debug("workflow step end not taken", "run", lr.id, "task", task, "err", err)
		return
	}
	r.save(context.Background(), lr)
}

// save appends what the engine logged since the last save to the run's
// log, with the run's state, and publishes it. It reports false when the
// run is no longer this replica's to drive. lr.mu is held.
func (r *runner) save(ctx context.Context, lr *liveRun) bool {
	all := lr.eng.Log().Events()
	if lr.saved == len(all) {
		return !lr.gone
	}
	fresh := all[lr.saved:]
	events, err := encodeEvents(fresh)
	if err != nil {
		r.log.Error("workflow events not encoded", "run", lr.id, "err", err)
		return false
	}
	st, why := lr.eng.State()
	err = r.store.AppendRun(ctx, lr.id, r.id, lr.saved, events, string(st), why)
	switch {
	case errors.Is(err, jobstore.ErrNotOwner), errors.Is(err, jobstore.ErrRunEnded), errors.Is(err, jobstore.ErrLogMoved), errors.Is(err, jobstore.ErrNotFound):
		r.log.Warn("workflow run no longer driven here", "run", lr.id, "err", err)
		r.forget(lr)
		return false
	case err != nil:
		// Kept: the next save sends these events with its own.
		logStoreFailure(r.log, "append run", lr.id, err)
		return true
	}
	lr.saved = len(all)
	r.publish(lr, fresh)
	if st != workflow.RunRunning {
		r.log.Info("workflow run ended", "run", lr.id, "state", string(st), "reason", why)
		r.forget(lr)
		r.childEnded(lr)
		r.runEnded(lr)
	}
	return true
}

// publish tells the run's followers of its events.
func (r *runner) publish(lr *liveRun, events []workflow.Event) {
	for _, e := range events {
		if err := r.bus.Publish(bus.WorkflowEventSubject(lr.tenant, lr.id), eventMessage(e)); err != nil {
			r.log.Debug("workflow event publish failed", "run", lr.id, "err", err)
		}
	}
}

// stop ends lr (cancelled or timed out) with the engine's stop and
// cancels its running steps' jobs: their modules are interrupted.
func (r *runner) stop(lr *liveRun, stop func(string) []string, why string) []string {
	lr.mu.Lock()
	if lr.gone {
		lr.mu.Unlock()
		return nil
	}
	running := stop(why)
	r.save(context.Background(), lr)
	lr.mu.Unlock()
	for _, task := range running {
		id := childJobID(lr.id, task)
		r.mu.Lock()
		child := r.runs[id]
		r.mu.Unlock()
		if child != nil { // a job.workflow.run step: its child run stops too
			r.stop(child, child.eng.Cancel, "its parent run "+lr.id+" stopped: "+why)
			continue
		}
		if err := r.cancelJob(context.Background(), id, "workflow run "+lr.id+": "+why); err != nil && !errors.Is(err, jobstore.ErrNotFound) {
			// Ended already (logged at debug), or the store failed
			// (logged and counted): the step's job then runs to its end
			// and the stopped run ignores its result.
			logStoreFailure(r.log, "cancel step", id, err)
		}
	}
	return running
}

func (r *runner) timeOut(lr *liveRun) {
	r.stop(lr, lr.eng.TimeOut, fmt.Sprintf("the run's timeout passed (%s)", lr.deadline.Format(time.RFC3339)))
}

// handleWorkflowCancel cancels a run this replica drives; the others stay
// silent (the one driving it answers).
func (r *runner) handleWorkflowCancel(ctx context.Context, msg *nats.Msg, q *wardv1.WorkflowCancelRequest) {
	r.mu.Lock()
	lr := r.runs[q.GetRunId()]
	r.mu.Unlock()
	tenant := tenantOf(msg)
	actor := ""
	if tenant == "" {
		// An admin's cancel of any tenant's run: identified and audited
		// (admin.go). Every replica hears it; the one driving the run
		// answers a refusal, the others stay silent.
		var err error
		if actor, err = r.admin.of(msg); err != nil {
			if lr != nil {
				if rerr := r.bus.Reply(msg, &wardv1.WorkflowGetReply{Error: err.Error()}); rerr != nil {
					r.log.Debug("workflow cancel reply failed", "err", rerr)
				}
			}
			return
		}
	}
	if lr == nil {
		// Nobody drives it (its replica died, its claim ran out): one
		// replica claims it now, rebuilds it, and cancels it.
		lr = r.claimOrphan(ctx, q.GetRunId())
	}
	if lr == nil || (tenant != "" && lr.tenant != tenant) {
		return
	}
	why := q.GetReason()
	if why == "" {
		why = "cancelled on request"
	}
	r.stop(lr, lr.eng.Cancel, why)
	r.log.Info("workflow run cancelled", "run", lr.id, "reason", why)
	if tenant == "" {
		r.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.WorkflowCancel, Target: lr.id,
			Detail: map[string]string{"tenant": lr.tenant, "reason": q.GetReason()}})
	}
	reply := &wardv1.WorkflowGetReply{}
	if run, err := runRecord(ctx, r.store, r.log, lr.id, tenant, false); err != nil {
		reply.Error = err.Error()
	} else {
		reply.Run = run
	}
	if err := r.bus.Reply(msg, reply); err != nil {
		r.log.Debug("workflow cancel reply failed", "err", err)
	}
}

// runRecord reads run id (of tenant, "" any) and its tasks.
func runRecord(ctx context.Context, store jobstore.Store, log *slog.Logger, id, tenant string, withEvents bool) (*wardv1.WorkflowRun, error) {
	run, raw, err := store.GetRun(ctx, id)
	if errors.Is(err, jobstore.ErrNotFound) || (err == nil && tenant != "" && run.Tenant != tenant) {
		return nil, fmt.Errorf("run %s not found", id)
	}
	if err != nil {
		logStoreFailure(log, "get run", id, err)
		return nil, errors.New("job store unavailable")
	}
	rec := runMessage(run)
	events := make([]workflow.Event, 0, len(raw))
	for _, b := range raw {
		var e workflow.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("run %s: its log does not decode: %v", id, err)
		}
		events = append(events, e)
	}
	if withEvents {
		rec.Definition = run.Definition
		for _, e := range events {
			rec.Events = append(rec.Events, eventMessage(e))
		}
	}
	// The tasks, as the engine left them: the log replayed.
	def, err := workflow.Parse(run.Definition)
	if err == nil {
		var plan *workflow.Plan
		if plan, err = workflow.Compile(def, workflow.Options{}); err == nil {
			var eng *workflow.Engine
			if eng, err = workflow.Resume(plan, events); err == nil {
				for _, t := range eng.Tasks() {
					wt := &wardv1.WorkflowTask{Id: t.ID, Step: t.Step, Index: int32(t.Index), State: string(t.State), Error: t.Error}
					if t.Assigned {
						wt.JobId = childJobID(id, t.ID)
					}
					if t.Output != nil {
						wt.Output, _ = json.Marshal(t.Output)
					}
					rec.Tasks = append(rec.Tasks, wt)
				}
				if out := eng.Outputs(); out != nil {
					rec.Outputs, _ = json.Marshal(out)
				}
			}
		}
	}
	if err != nil {
		rec.Reason = strings.TrimSpace(rec.Reason + " (its log does not replay: " + err.Error() + ")")
	}
	return rec, nil
}

func runMessage(r *jobstore.Run) *wardv1.WorkflowRun {
	return &wardv1.WorkflowRun{RunId: r.ID, TenantId: r.Tenant, Workflow: r.Workflow, State: r.State, Reason: r.Reason,
		CreatedAtUnixMs: r.CreatedAt.UnixMilli(), UpdatedAtUnixMs: r.UpdatedAt.UnixMilli(), Owner: r.Owner}
}

func eventMessage(e workflow.Event) *wardv1.WorkflowEvent {
	return &wardv1.WorkflowEvent{Seq: e.Seq, Kind: e.Kind, Run: e.Run, Task: e.Task, Data: e.Data, PayloadHash: e.PayloadHash,
		PriorState: e.PriorState, PostState: e.PostState, DecisionId: e.DecisionID, Prev: e.Prev, Hash: e.Hash}
}

// EventOf is a WorkflowEvent as the workflow package logs it.
func EventOf(m *wardv1.WorkflowEvent) workflow.Event {
	return workflow.Event{Seq: m.GetSeq(), Kind: m.GetKind(), Run: m.GetRun(), Task: m.GetTask(), Data: m.GetData(),
		PayloadHash: m.GetPayloadHash(), PriorState: m.GetPriorState(), PostState: m.GetPostState(), DecisionID: m.GetDecisionId(),
		Prev: m.GetPrev(), Hash: m.GetHash()}
}

func encodeEvents(events []workflow.Event) ([][]byte, error) {
	out := make([][]byte, len(events))
	for i, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// runsLoop renews the claims of the runs this replica drives and carries
// on the runs a dead replica left (their claims ran out).
func (r *runner) runsLoop(lctx context.Context) {
	ttl := r.claimTTL()
	t := time.NewTicker(max(ttl/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-lctx.Done():
			return
		case now := <-t.C:
			r.renew(lctx, now)
			r.takeOver(lctx, now)
		}
	}
}

// renew extends this replica's claims; a run another replica claimed is
// dropped.
func (r *runner) renew(ctx context.Context, now time.Time) {
	r.mu.Lock()
	runs := make([]*liveRun, 0, len(r.runs))
	for _, lr := range r.runs {
		runs = append(runs, lr)
	}
	r.mu.Unlock()
	for _, lr := range runs {
		ok, err := r.store.ClaimRun(ctx, lr.id, r.id, now.Add(r.claimTTL()))
		if err == nil && !ok {
			lr.mu.Lock()
			r.forget(lr)
			lr.mu.Unlock()
			continue
		}
		r.poll(ctx, lr)
		r.pollJob(ctx, lr)
	}
}

// poll takes the ends of lr's steps' jobs that another replica moved
// (this one hears only of its own moves), or whose end it missed.
func (r *runner) poll(ctx context.Context, lr *liveRun) {
	lr.mu.Lock()
	running := lr.eng.Running()
	lr.mu.Unlock()
	ended := false
	for _, task := range running {
		jobID := childJobID(lr.id, task)
		job, err := r.store.Get(ctx, jobID)
		if errors.Is(err, jobstore.ErrNotFound) {
			ended = r.pollChild(ctx, lr, task, jobID) || ended
			continue
		}
		if err != nil || !job.State.Terminal() {
			continue
		}
		r.mu.Lock()
		delete(r.jobs, jobID)
		r.mu.Unlock()
		r.finish(ctx, lr, task, jobID)
		ended = true
	}
	if ended {
		r.drive(ctx, lr)
	}
}

// takeOver claims the runs whose claims ran out and carries them on.
func (r *runner) takeOver(ctx context.Context, now time.Time) {
	ids, err := r.store.OrphanRuns(ctx, now, 16)
	if err != nil {
		logStoreFailure(r.log, "orphan runs", "", err)
		return
	}
	for _, id := range ids {
		r.mu.Lock()
		_, mine := r.runs[id]
		r.mu.Unlock()
		if mine {
			continue
		}
		if ok, err := r.store.ClaimRun(ctx, id, r.id, now.Add(r.claimTTL())); err != nil || !ok {
			continue
		}
		if err := r.resume(ctx, id); err != nil {
			r.log.Error("workflow run not carried on", "run", id, "err", err)
		}
	}
}

// claimOrphan claims run id when its claim ran out, and returns it rebuilt
// and carried on by this replica; nil when another holds it (or won the
// claim), or it ended.
func (r *runner) claimOrphan(ctx context.Context, id string) *liveRun {
	run, _, err := r.store.GetRun(ctx, id)
	if err != nil || run.State != jobstore.RunRunning || time.Now().Before(run.OwnedUntil) {
		return nil
	}
	if ok, err := r.store.ClaimRun(ctx, id, r.id, time.Now().Add(r.claimTTL())); err != nil || !ok {
		return nil
	}
	if err := r.resume(ctx, id); err != nil {
		r.log.Error("workflow run not carried on", "run", id, "err", err)
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

// resume rebuilds a run this replica just claimed and carries it on: the
// steps whose jobs ended meanwhile are taken, the ones whose jobs were
// never made are made.
func (r *runner) resume(ctx context.Context, id string) error {
	run, raw, err := r.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	events := make([]workflow.Event, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &events[i]); err != nil {
			return err
		}
	}
	def, err := workflow.Parse(run.Definition)
	if err != nil {
		return err
	}
	plan, err := workflow.Compile(def, workflow.Options{})
	if err != nil {
		return err
	}
	eng, err := workflow.Resume(plan, events)
	if err != nil {
		return err
	}
	wt := r.settings().timeouts.Workflows
	lr := &liveRun{id: id, tenant: run.Tenant, name: run.Workflow, eng: eng, saved: len(events), deadline: run.Deadline,
		step: wt.StepTimeout, retries: wt.StepRetries}
	if lr.deadline.IsZero() {
		lr.deadline = run.CreatedAt.Add(wt.RunTimeout)
	}
	r.adopt(lr)
	r.log.Info("workflow run carried on", "run", id, "from", run.Owner, "events", len(events))
	for _, task := range eng.Running() {
		jobID := childJobID(id, task)
		job, err := r.store.Get(ctx, jobID)
		switch {
		case errors.Is(err, jobstore.ErrNotFound):
			// Assigned, but its job was never made: make it.
			a, ok := lr.assignment(task)
			if ok {
				r.submit(ctx, lr, a)
			}
		case err == nil && job.State.Terminal():
			r.mu.Lock()
			delete(r.jobs, jobID)
			r.mu.Unlock()
			r.finish(ctx, lr, task, jobID)
		}
	}
	r.goDrive(lr)
	return nil
}

// pollChild completes task, a job.workflow.run step of lr, when its child
// run ended (driven by another replica, or by this one before it knew of
// the parent), and reports whether it did.
func (r *runner) pollChild(ctx context.Context, lr *liveRun, task, id string) bool {
	r.mu.Lock()
	_, known := r.children[id]
	r.mu.Unlock()
	if known {
		return false // its end comes in process
	}
	rec, err := runRecord(ctx, r.store, r.log, id, lr.tenant, false)
	if err != nil || rec.GetState() == string(workflow.RunRunning) {
		return false
	}
	var outs any
	_ = json.Unmarshal(rec.GetOutputs(), &outs)
	res := workflow.Result{OK: rec.GetState() == string(workflow.RunSucceeded), JobID: id,
		Output: map[string]any{"run": id, "state": rec.GetState(), "outputs": outs}}
	if !res.OK {
		res.Error = fmt.Sprintf("child run %s ended %s: %s", id, rec.GetState(), rec.GetReason())
	}
	r.complete(lr, task, res)
	return true
}

// assignment rebuilds the assignment of a running task from the engine.
func (lr *liveRun) assignment(task string) (*workflow.Assignment, bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.eng.Reassign(task)
}

// close stops the runs' timers; they are not cancelled: another replica,
// or this one restarted, carries them on once their claims run out.
func (r *runner) close() {
	r.mu.Lock()
	for _, lr := range r.runs {
		if lr.timer != nil {
			lr.timer.Stop()
		}
	}
	r.mu.Unlock()
	r.wg.Wait()
}
