package assembly_test

// Attacks on a running system, the way an outsider, a malicious tenant and
// a compromised host would make them: each is refused with nothing changed
// and nothing lost, and the legitimate path is checked in the same test so
// that a refusal cannot come from a typo.

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/testing/natstest"
)

// refusals collects the permission errors the server sends a connection.
type refusals struct {
	mu   sync.Mutex
	errs []string
}

func (r *refusals) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err.Error())
}

func (r *refusals) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// raw connects with a credential of role and name, collecting refusals.
func (e *env) raw(t testing.TB, role auth.Role, name string) (*nats.Conn, *refusals) {
	t.Helper()
	opts, err := auth.Options(e.sec.Creds(role, name))
	if err != nil {
		t.Fatal(err)
	}
	r := &refusals{}
	nc, err := nats.Connect(e.natsURL, append(opts, nats.ErrorHandler(r.handler))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, r
}

// counter sums the series of a counter of the default registry whose
// label has value; with no label, every series.
func counter(t testing.TB, name, label, value string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if label == "" || (l.GetName() == label && l.GetValue() == value) {
					sum += m.GetCounter().GetValue()
					break
				}
			}
			if label == "" && len(m.GetLabel()) == 0 {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestAttackOutsider(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	if nc, err := nats.Connect(e.natsURL); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected")
	}
	stranger := natstest.StartSecure(t) // another installation's keys
	opts, _ := auth.Options(stranger.Creds(auth.Admin, "admin"))
	if nc, err := nats.Connect(e.natsURL, opts...); err == nil {
		nc.Close()
		t.Fatal("another installation's admin connected")
	}
	// The system's own tenant is served.
	acme := e.clientAs(t, auth.Tenant, "acme")
	runAs(t, acme, "hello")
}

// runAs submits an echo job as c and checks that it SUCCEEDED with its
// payload back.
func runAs(t *testing.T, c *client.Client, payload string) *wardv1.JobRecord {
	t.Helper()
	rec := submitAndWait(t, c, &wardv1.JobRequest{Topic: "job.echo", Payload: []byte(payload)})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || !bytes.Equal(rec.GetResult(), []byte(payload)) {
		t.Fatalf("%s's job: %s %q", c.Tenant(), rec.GetState(), rec.GetResult())
	}
	return rec
}

func TestAttackTenantOnTenant(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acme := e.clientAs(t, auth.Tenant, "acme")
	rec := runAs(t, acme, "acme's secret")

	evil, refused := e.raw(t, auth.Tenant, "globex")
	gc := e.clientAs(t, auth.Tenant, "globex")

	// Submit as acme: in the payload (refused with a reason), on acme's
	// subject (refused by the server: nothing arrives).
	if reply, err := gc.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme"}); !errors.Is(err, client.ErrRefused) ||
		reply.GetReason() != string(reason.TenantMismatch) {
		t.Fatalf("globex submitting for acme: %v", err)
	}
	forged := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", TenantId: "acme", Payload: []byte("as acme")}
	data, _ := proto.Marshal(forged)
	if _, err := evil.Request(bus.TenantSubject(bus.SubjectSubmit, "acme"), data, time.Second); err == nil {
		t.Fatal("globex's submission on acme's subject was answered")
	}
	// Read, list, cancel and follow acme's job.
	if _, err := gc.Get(ctx, rec.GetJobId(), true); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("globex reading acme's job: %v", err)
	}
	if jobs, err := gc.List(ctx, 100, wardv1.JobState_JOB_STATE_UNSPECIFIED); err != nil || len(jobs) != 0 {
		t.Fatalf("globex lists %d jobs, %v", len(jobs), err)
	}
	if _, err := gc.Cancel(ctx, rec.GetJobId(), "mine now"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("globex cancelling acme's job: %v (must be 'not found': nothing about it leaks)", err)
	}
	for _, subj := range []string{">", bus.EventSubject("acme", ">"), bus.SubjectEvents, "_INBOX.>", bus.WorkerJobsSubject(">")} {
		if _, err := evil.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
	}
	// A large input of acme's, in acme's bucket: globex can neither read
	// it nor submit its pointer.
	big := bytes.Repeat([]byte("a"), bus.InlineContextMax+1)
	bigReq := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: big}
	if _, err := acme.Submit(ctx, bigReq); err != nil {
		t.Fatal(err)
	}
	ptr := bigReq.GetContextPtr()
	if !strings.HasPrefix(ptr, bus.ObjectScheme+bus.ContextBucketOf("acme")+"/") {
		t.Fatalf("acme's large input went to %q", ptr)
	}
	objs, err := bus.NewObjects(gc.Bus())
	if err != nil {
		t.Fatal(err)
	}
	// The server refuses the JetStream API request: no answer comes.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := objs.Get(short, ptr, 1<<30); err == nil {
		t.Fatal("globex read acme's large input")
	}
	if _, err := gc.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", ContextPtr: ptr}); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("globex submitting acme's pointer: %v", err)
	}
	if err := evil.Flush(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 5*time.Second, func() bool {
		return refused.saw(`Publish to "sys.job.submit.acme"`) && refused.saw(`Subscription to ">"`) &&
			refused.saw(`Subscription to "sys.job.event.acme.>"`)
	})
	// Nothing changed: acme's job is as it was, and no job was made from
	// the forged submission.
	admin := e.client
	if got, err := admin.Get(ctx, rec.GetJobId(), true); err != nil || got.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED ||
		string(got.GetResult()) != "acme's secret" {
		t.Fatalf("acme's job after the attacks: %v %v", got, err)
	}
	if _, err := admin.Get(ctx, forged.GetJobId(), false); err == nil {
		t.Fatal("the forged submission made a job")
	}
	// acme's large-input job is acme's.
	if got, err := acme.Get(ctx, bigReq.JobId, false); err != nil || got.GetTenantId() != "acme" {
		t.Fatalf("acme's large job: %v %v", got, err)
	}
}

func TestAttackDispatch(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hostID := e.n.Host.ID()

	// A tenant may not dispatch at all.
	tenant, refused := e.raw(t, auth.Tenant, "acme")
	_ = tenant.Publish(bus.WorkerJobsSubject(hostID), []byte("x"))
	_ = tenant.Flush()
	checkFor(t, 5*time.Second, func() bool { return refused.saw(`Publish to "worker.` + hostID + `.jobs"`) })

	// An admin connection sees the real dispatches (admins may read
	// anything) and publishes forged ones: the host's ticket check is
	// what refuses them.
	admin := e.client.Bus().NATS()
	captured := make(chan []byte, 4)
	sub, err := admin.Subscribe(bus.WorkerJobsSubject(hostID), func(m *nats.Msg) {
		select {
		case captured <- m.Data:
		default: // the forged ones below come here too
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = admin.Flush()
	runAs(t, e.clientAs(t, auth.Tenant, "acme"), "legit")
	var real []byte
	select {
	case real = <-captured:
	case <-ctx.Done():
		t.Fatal("no dispatch seen")
	}

	refusedBy := func(code reason.Code) float64 {
		return counter(t, "ward_host_dispatches_refused_total", "reason", string(code))
	}
	job := func(grants *wardv1.Grants) *wardv1.DispatchTicket {
		return &wardv1.DispatchTicket{HostId: hostID, Module: "echo", Job: &wardv1.JobRequest{
			JobId: uuid.NewString(), Topic: "job.echo", TenantId: "acme", Attempt: 1, Pool: "echo",
			Constraints: &wardv1.Constraints{Grants: grants}}}
	}
	invented := &wardv1.Grants{HttpHosts: []string{"*"}, MemoryLimitBytes: 4 << 30, EnvKeys: []string{"HOME", "PATH"}}
	unsigned, _ := auth.Unsigned(job(invented), time.Now())
	wrongKey, _ := auth.NewSigner([]byte("0123456789abcdef0123456789abcdef-not-the-secret"), 0).Sign(job(invented), time.Now())
	otherHost, _ := auth.NewSigner(e.creds.DispatchSecret, 0).Sign(&wardv1.DispatchTicket{HostId: "elsewhere", Job: job(invented).Job}, time.Now())
	var altered wardv1.Dispatch
	_ = proto.Unmarshal(real, &altered)
	var tk wardv1.DispatchTicket
	_ = proto.Unmarshal(altered.Ticket, &tk)
	tk.Job.Constraints = &wardv1.Constraints{Grants: invented}
	tk.Job.Attempt++ // not a replay: an altered ticket
	altered.Ticket, _ = proto.Marshal(&tk)
	expired, _ := auth.NewSigner(e.creds.DispatchSecret, time.Millisecond).Sign(job(invented), time.Now().Add(-time.Minute))

	for _, c := range []struct {
		name string
		code reason.Code
		data func() []byte
	}{
		{"unsigned with invented grants", reason.TicketUnsigned, func() []byte { b, _ := proto.Marshal(unsigned); return b }},
		{"signed with another key", reason.TicketForged, func() []byte { b, _ := proto.Marshal(wrongKey); return b }},
		{"signed for another host", reason.TicketForged, func() []byte { b, _ := proto.Marshal(otherHost); return b }},
		{"altered after signing", reason.TicketForged, func() []byte { b, _ := proto.Marshal(&altered); return b }},
		{"expired", reason.TicketExpired, func() []byte { b, _ := proto.Marshal(expired); return b }},
		{"replayed", reason.TicketReplayed, func() []byte { return real }},
	} {
		before := refusedBy(c.code)
		if err := admin.Publish(bus.WorkerJobsSubject(hostID), c.data()); err != nil {
			t.Fatal(err)
		}
		checkFor(t, 10*time.Second, func() bool { return refusedBy(c.code) > before })
		t.Logf("%s: refused (%s)", c.name, c.code)
	}
	// None of them ran: the host reports no result, and no job exists.
	for _, d := range []*wardv1.Dispatch{unsigned, wrongKey} {
		var tk wardv1.DispatchTicket
		_ = proto.Unmarshal(d.Ticket, &tk)
		if _, err := e.client.Get(ctx, tk.GetJob().GetJobId(), false); err == nil {
			t.Errorf("a job exists for a forged dispatch")
		}
	}
	// The host still serves.
	runAs(t, e.clientAs(t, auth.Tenant, "acme"), "still serving")
}

func TestAttackHostReports(t *testing.T) {
	to, err := config.ParseTimeouts("test", []byte("reconciler:\n  dispatch_timeout: 1m\n  running_timeout: 1m\n  scan_interval: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: to}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// ghost is an admitted host that takes jobs and holds them; rogue is
	// another admitted host, compromised.
	ghost := e.conn(t, auth.Host, "ghost")
	_, ghostJWT, _ := auth.ReadIdentity(e.sec.Creds(auth.Host, "ghost"))
	tickets := auth.NewVerifier("ghost", auth.HostKey(e.creds.DispatchSecret, "ghost"))
	took := make(chan *wardv1.DispatchTicket, 1)
	sub, err := ghost.NATS().Subscribe(bus.WorkerJobsSubject("ghost"), func(m *nats.Msg) {
		var d wardv1.Dispatch
		if proto.Unmarshal(m.Data, &d) == nil {
			if tk, err := tickets.Open(&d, time.Now()); err == nil {
				_ = ghost.Publish(bus.ProgressSubject("ghost"), &wardv1.JobProgress{JobId: tk.GetJob().GetJobId(), WorkerId: "ghost",
					Kind: wardv1.JobProgress_KIND_STARTED, Attempt: tk.GetJob().GetAttempt()})
				took <- tk
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := ghost.Publish(bus.HeartbeatSubject("ghost"), &wardv1.Heartbeat{WorkerId: "ghost", Pools: []string{"echo"},
		MaxParallelJobs: 4, SentAtUnixMs: time.Now().UnixMilli(), Credential: ghostJWT}); err != nil {
		t.Fatal(err)
	}
	e.waitWorkers(t, 1)

	acme := e.clientAs(t, auth.Tenant, "acme")
	req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: []byte("x")}
	if _, err := acme.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var tk *wardv1.DispatchTicket
	select {
	case tk = <-took:
	case <-ctx.Done():
		t.Fatal("ghost got no job")
	}
	checkFor(t, 10*time.Second, func() bool {
		j, err := e.client.Get(ctx, req.JobId, false)
		return err == nil && j.GetState() == wardv1.JobState_JOB_STATE_RUNNING
	})
	stale := func() float64 {
		return counter(t, "ward_scheduler_refused_reports_total", "reason", string(reason.StaleResult))
	}
	succeeded := func(worker string, attempt int32) *wardv1.JobResult {
		return &wardv1.JobResult{JobId: req.JobId, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, WorkerId: worker, Attempt: attempt,
			ResultPtr: "redis://res:" + req.JobId}
	}
	rogue, refused := e.raw(t, auth.Host, "rogue")
	// The rogue host on ghost's subject: the server refuses it.
	b, _ := proto.Marshal(succeeded("ghost", tk.GetJob().GetAttempt()))
	_ = rogue.Publish(bus.ResultSubject("ghost"), b)
	_ = rogue.Flush()
	checkFor(t, 5*time.Second, func() bool { return refused.saw(`Publish to "sys.job.result.ghost"`) })
	// On its own subject, claiming to be ghost, then as itself.
	rc := e.conn(t, auth.Host, "rogue")
	before := stale()
	_ = rc.Publish(bus.ResultSubject("rogue"), succeeded("ghost", tk.GetJob().GetAttempt()))
	checkFor(t, 5*time.Second, func() bool { return stale() > before })
	_ = rc.Publish(bus.ResultSubject("rogue"), succeeded("rogue", tk.GetJob().GetAttempt()))
	// ghost itself, for an attempt the job is not at.
	before = stale()
	_ = ghost.Publish(bus.ResultSubject("ghost"), succeeded("ghost", tk.GetJob().GetAttempt()+1))
	checkFor(t, 5*time.Second, func() bool { return stale() > before })
	_ = rc.Flush()
	_ = ghost.Flush()
	if j, err := e.client.Get(ctx, req.JobId, false); err != nil || j.GetState() != wardv1.JobState_JOB_STATE_RUNNING || j.GetWorkerId() != "ghost" {
		t.Fatalf("after forged and stale results the job is %v (%v), want RUNNING on ghost", j.GetState(), err)
	}
	// The real result of the real attempt is applied.
	_ = ghost.Publish(bus.ResultSubject("ghost"), &wardv1.JobResult{JobId: req.JobId, Status: wardv1.JobState_JOB_STATE_FAILED,
		WorkerId: "ghost", Attempt: tk.GetJob().GetAttempt(), ErrorCode: string(reason.ModuleError), ErrorMessage: "ghost's own"})
	checkFor(t, 10*time.Second, func() bool {
		j, err := e.client.Get(ctx, req.JobId, false)
		return err == nil && j.GetState() == wardv1.JobState_JOB_STATE_FAILED && j.GetErrorMessage() == "ghost's own"
	})
}

func TestAttackFakeHosts(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	now := time.Now()
	serves := func(pool string) bool { return e.n.Scheduler.Hosts().Serves(pool, time.Now()) }
	beat := func(c *bus.Conn, id, pool, cred string) {
		t.Helper()
		if err := c.Publish(bus.HeartbeatSubject(id), &wardv1.Heartbeat{WorkerId: id, Pools: []string{pool}, MaxParallelJobs: 64,
			Capabilities: []string{"gpu", "ollama"}, SentAtUnixMs: now.UnixMilli(), Credential: cred}); err != nil {
			t.Fatal(err)
		}
		_ = c.Flush()
	}
	jwtOf := func(role auth.Role, name string, o auth.IssueOptions) string {
		_, tok, err := auth.ReadIdentity(e.sec.Creds(role, name, o))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	before := counter(t, "ward_scheduler_refused_reports_total", "kind", "heartbeat")
	// No credential, from the admin's connection (admins may publish
	// anywhere; a heartbeat still needs a host's credential).
	beat(e.client.Bus(), "fake", "chat-simple", "")
	// A tenant's credential in the heartbeat of its own host id.
	beat(e.client.Bus(), "acme", "chat-simple", jwtOf(auth.Tenant, "acme", auth.IssueOptions{}))
	// Another host's credential.
	beat(e.client.Bus(), "fake2", "chat-simple", jwtOf(auth.Host, "other", auth.IssueOptions{}))
	checkFor(t, 5*time.Second, func() bool {
		return counter(t, "ward_scheduler_refused_reports_total", "kind", "heartbeat") >= before+3
	})
	// A host whose credential allows pool echo only, claiming chat-simple.
	limited := e.conn(t, auth.Host, "limited")
	beat(limited, "limited", "chat-simple", jwtOf(auth.Host, "limited", auth.IssueOptions{Pools: []string{"echo"}}))
	// The legitimate path: a host allowed chat-simple is admitted for it.
	allowed := e.conn(t, auth.Host, "allowed")
	beat(allowed, "allowed", "chat-simple", jwtOf(auth.Host, "allowed", auth.IssueOptions{Pools: []string{"chat-simple"}}))
	checkFor(t, 5*time.Second, func() bool { return serves("chat-simple") })
	// Only "allowed" made chat-simple servable: with it gone, nothing does.
	// (Its credential also does not allow GPUs: the claim is dropped.)
	if e.n.Scheduler.Hosts().Len() != 3 { // test-host, limited (for no pool), allowed
		t.Errorf("the scheduler knows %d hosts, want 3 (test-host, limited, allowed)", e.n.Scheduler.Hosts().Len())
	}
}

func TestAttackGuardedBuckets(t *testing.T) {
	keys, err := assembly.EnsureSigningKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Safety: assembly.SafetyConfig{PolicyPubKey: keys.PolicyPub}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	destroy := func() *wardv1.JobRequest { return &wardv1.JobRequest{Topic: "sys.destroy", TenantId: "acme"} }
	if _, rec := e.run(t, destroy()); rec.GetState() != wardv1.JobState_JOB_STATE_DENIED {
		t.Fatalf("sys.destroy: %s", rec.GetState())
	}
	// The attacker's bundle: the default without its sys.destroy rule (and
	// without the tests that would catch it).
	allowAll := defaultBundleWith(t, nil)
	allowAll.Files["ward.rego"] = []byte(strings.Replace(string(allowAll.Files["ward.rego"]),
		`deny contains "topic sys.destroy is forbidden" if input.topic == "sys.destroy"`, "", 1))
	for k := range allowAll.Files {
		if strings.HasSuffix(k, "_test.rego") {
			delete(allowAll.Files, k)
		}
	}
	// Every non-admin credential: writing the policy or the module
	// registry is refused by the server.
	for _, who := range []struct {
		role auth.Role
		name string
	}{{auth.Tenant, "acme"}, {auth.Host, "h9"}, {auth.Scheduler, "s9"}, {auth.Safety, "k9"}} {
		nc, refused := e.raw(t, who.role, who.name)
		js, _ := jetstream.New(nc)
		// A refused publish gets no acknowledgement: each waits a second.
		for _, subj := range []string{"$KV.ward_policy.bundle", "$KV.ward_modules.mod.echo.active", "$O.ward_modules.C.x"} {
			one, cancelOne := context.WithTimeout(context.Background(), time.Second)
			if _, err := js.Publish(one, subj, []byte("x")); err == nil {
				t.Errorf("%s %s wrote %s", who.role, who.name, subj)
			}
			cancelOne()
		}
		one, cancelOne := context.WithTimeout(context.Background(), time.Second)
		if err := js.DeleteStream(one, "KV_ward_policy"); err == nil {
			t.Errorf("%s deleted the policy bucket", who.role)
		}
		cancelOne()
		checkFor(t, 5*time.Second, func() bool { return refused.saw(`Publish to "$KV.ward_policy.bundle"`) })
	}
	// The admin may write the bucket, but the kernel takes signed bundles
	// only: an allow-all bundle written unsigned is refused.
	if _, err := safety.Push(ctx, e.client.Bus().NATS(), "", allowAll, safety.PushOptions{By: "attacker", Unsigned: true}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() bool { return e.n.Safety.Status().GetRefusedRevision() == allowAll.Revision() })
	if _, rec := e.run(t, destroy()); rec.GetState() != wardv1.JobState_JOB_STATE_DENIED {
		t.Fatalf("after an unsigned allow-all bundle, sys.destroy: %s", rec.GetState())
	}
	// Signed with the trusted key, the same push is enforced.
	key, err := safety.LoadPolicySigningKey(keys.PolicyKey)
	if err != nil {
		t.Fatal(err)
	}
	good := defaultBundleWith(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest})
	res, err := safety.Push(ctx, e.client.Bus().NATS(), "", good, safety.PushOptions{By: "admin", SigningKey: key})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })
	if _, rec := e.run(t, echoJob("blocked")); rec.GetState() != wardv1.JobState_JOB_STATE_DENIED {
		t.Fatalf("the signed bundle is not enforced: %s", rec.GetState())
	}
}
