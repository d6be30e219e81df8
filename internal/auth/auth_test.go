package auth_test

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// violations collects the permission errors the server sends a connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

func (v *violations) has(sub string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

func connect(t *testing.T, s *natstest.Secure, creds string, v *violations) *nats.Conn {
	t.Helper()
	opts, err := auth.Options(creds)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		opts = append(opts, nats.ErrorHandler(v.handler))
	}
	nc, err := nats.Connect(s.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestAnonymousAndForeignCredentialsAreRefused(t *testing.T) {
	s := natstest.StartSecure(t)
	if nc, err := nats.Connect(s.URL); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected")
	}
	// A credential of another installation: same shape, other keys.
	other := natstest.StartSecure(t)
	opts, _ := auth.Options(other.Creds(auth.Admin, "admin"))
	if nc, err := nats.Connect(s.URL, opts...); err == nil {
		nc.Close()
		t.Fatal("a credential of another installation connected")
	}
	// The legitimate path, in the same test.
	connect(t, s, s.Creds(auth.Admin, "admin"), nil)
}

// A tenant publishes and hears only on its own subjects: the scheduler
// reads the tenant from the subject, so this is what makes the tenant's
// identity its credential's.
func TestTenantReachesItsOwnSubjectsOnly(t *testing.T) {
	s := natstest.StartSecure(t)
	sched := connect(t, s, s.Creds(auth.Scheduler, "s1"), nil)
	got := make(chan string, 16)
	if _, err := sched.Subscribe(bus.TenantSubject(bus.SubjectSubmit, "*"), func(m *nats.Msg) { got <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	// A shard owner's submissions (bus.SubmitSubject).
	if _, err := sched.Subscribe(bus.SubmitSubject("*", "*"), func(m *nats.Msg) { got <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := sched.Flush(); err != nil {
		t.Fatal(err)
	}

	var v violations
	acme := connect(t, s, s.Creds(auth.Tenant, "acme"), &v)
	for _, subj := range []string{bus.TenantSubject(bus.SubjectSubmit, "globex"), bus.TenantSubject(bus.SubjectSubmit, bus.AllTenants),
		// Nor to another tenant's shard owner, nor its forwards.
		bus.SubmitSubject("globex", "0"), bus.ShardSubject(0, bus.TenantSubject(bus.SubjectSubmit, "acme")),
		bus.ShardedTenantSubject(bus.SubjectJobGet, "globex", "0"), bus.ShardedTenantSubject(bus.SubjectJobList, "globex", "0"),
		bus.ShardedTenantSubject(bus.SubjectCancel, "globex", "0"), bus.ShardedTenantSubject(bus.SubjectJobGet, bus.AllTenants, "0"),
		bus.WorkerJobsSubject("h1"), bus.HeartbeatSubject("h1"), bus.ResultSubject("h1"), bus.SubjectHostCancel,
		"$KV.ward_policy.bundle", "$JS.API.STREAM.INFO.OBJ_WARD_CTX_globex",
		// Another tenant's buckets are a scheduler's to make, on that
		// tenant's asking only.
		bus.TenantSubject(bus.SubjectBuckets, "globex"),
		// The DLQ, the mode and the replicas' status are an admin's: no
		// tenant retries, drops or lists, or asks.
		bus.SubjectDLQList, bus.SubjectDLQRetry, bus.SubjectDLQDrop, bus.SubjectMode, bus.SubjectSchedulerStatus,
		// So are the store's counts and draining a host.
		bus.SubjectStats, bus.SubjectHostDrain,
		// Job events are the schedulers': a tenant cannot forge one of its
		// own jobs' (a state, or the creation an event tells).
		bus.EventSubject("acme", "j1")} {
		if err := acme.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// Its own submit subjects, last: the scheduler must hear these only.
	if err := acme.Publish(bus.TenantSubject(bus.SubjectSubmit, "acme"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := acme.Publish(bus.SubmitSubject("acme", "3"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{">", "sys.job.event.globex.>", "worker.h1.jobs", "_INBOX.>"} {
		if _, err := acme.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
	}
	if err := acme.Flush(); err != nil {
		t.Fatal(err)
	}
	heard := map[string]bool{}
	for range 2 {
		select {
		case subj := <-got:
			heard[subj] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("the tenant's own submissions did not arrive (heard %v)", heard)
		}
	}
	if !heard["sys.job.submit.acme"] || !heard["sys.job.submit.acme.3"] {
		t.Fatalf("the scheduler heard %v, want the tenant's own two submissions", heard)
	}
	select {
	case subj := <-got:
		t.Fatalf("the scheduler heard %s too", subj)
	case <-time.After(100 * time.Millisecond):
	}
	poll.Until(t, 5*time.Second, "permission violations reported to the tenant", func() bool {
		return v.has(`Publish to "sys.job.submit.globex"`) && v.has(`Subscription to ">"`) &&
			v.has(`Publish to "worker.h1.jobs"`) && v.has(`Subscription to "_INBOX.>"`) &&
			v.has(`Publish to "sys.dlq.drop"`) && v.has(`Publish to "sys.dlq.retry"`) &&
			v.has(`Publish to "sys.job.event.acme.j1"`) && v.has(`Publish to "sys.job.buckets.globex"`) &&
			v.has(`Publish to "sys.scheduler.stats"`) && v.has(`Publish to "sys.host.drain"`)
	})
}

// A host may speak only as itself, and hears only its own dispatches.
func TestHostSpeaksOnlyAsItself(t *testing.T) {
	s := natstest.StartSecure(t)
	sched := connect(t, s, s.Creds(auth.Scheduler, "s1"), nil)
	beats := make(chan string, 8)
	if _, err := sched.Subscribe(bus.SubjectHeartbeats, func(m *nats.Msg) { beats <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if _, err := sched.Subscribe(bus.ResultSubject("*"), func(m *nats.Msg) { beats <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	// A shard owner's forwards: only schedulers may send them.
	if _, err := sched.Subscribe(bus.SubjectShard+".>", func(m *nats.Msg) { beats <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	_ = sched.Flush()

	var v violations
	h1 := connect(t, s, s.Creds(auth.Host, "h1"), &v)
	for _, subj := range []string{bus.HeartbeatSubject("h2"), bus.ResultSubject("h2"), bus.WorkerJobsSubject("h2"),
		bus.TenantSubject(bus.SubjectSubmit, "acme"), "$KV.ward_modules.mod.echo.active",
		// A host cannot undrain itself, nor drain another.
		bus.SubjectHostDrain,
		// Nor pass its result, or another's, off as a scheduler's forward.
		bus.ShardSubject(0, bus.ResultSubject("h2")), bus.ShardSubject(0, bus.ResultSubject("h1")),
		// Nor report another host's job to a shard's owner.
		bus.ReportSubject(bus.ResultSubject("h2"), "0")} {
		_ = h1.Publish(subj, []byte("x"))
	}
	_ = h1.Publish(bus.HeartbeatSubject("h1"), []byte("x"))
	if _, err := h1.SubscribeSync(bus.WorkerJobsSubject("h2")); err != nil {
		t.Fatal(err)
	}
	_ = h1.Flush()
	select {
	case subj := <-beats:
		if subj != "sys.heartbeat.h1" {
			t.Fatalf("the scheduler heard %s", subj)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the host's own heartbeat did not arrive")
	}
	select {
	case subj := <-beats:
		t.Fatalf("the scheduler heard %s too", subj)
	case <-time.After(100 * time.Millisecond):
	}
	poll.Until(t, 5*time.Second, "permission violations reported to the host", func() bool {
		return v.has(`Publish to "sys.heartbeat.h2"`) && v.has(`Subscription to "worker.h2.jobs"`) &&
			v.has(`Publish to "$KV.ward_modules.mod.echo.active"`) && v.has(`Publish to "sys.host.drain"`) &&
			v.has(`Publish to "sys.scheduler.shard.0.sys.job.result.h1"`) && v.has(`Publish to "sys.job.result.h2.0"`)
	})
}

// A revoked tenant is cut off at once, without restarting the server, and
// cannot come back; a tenant added later connects without a restart.
func TestRevokeAndAddWithoutRestart(t *testing.T) {
	s := natstest.StartSecure(t)
	creds := s.Creds(auth.Tenant, "acme")
	acme := connect(t, s, creds, nil)
	closed := make(chan struct{})
	acme.SetClosedHandler(func(*nats.Conn) { close(closed) })
	acme.SetReconnectHandler(func(*nats.Conn) {})

	n, accountJWT, err := s.Auth.Revoke(auth.Tenant, "acme")
	if err != nil || n != 1 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	sys, err := nats.Connect(s.URL, nats.UserCredentials(writeTemp(t, must(s.Auth.SystemCreds()))))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	reply, err := sys.Request(auth.UpdateSubject(s.Auth.AccountKey()), []byte(accountJWT), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), "jwt updated") {
		t.Fatalf("update answered %s", reply.Data)
	}
	poll.Until(t, 5*time.Second, "the revoked tenant disconnected", func() bool { return !acme.IsConnected() })
	opts, _ := auth.Options(creds)
	if nc, err := nats.Connect(s.URL, append(opts, nats.NoReconnect())...); err == nil {
		nc.Close()
		t.Fatal("a revoked credential connected again")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(err.Error(), "Authorization") {
		t.Logf("refused with: %v", err)
	}
	// A new tenant needs nothing from the server.
	connect(t, s, s.Creds(auth.Tenant, "globex"), nil)
	names, revoked, err := s.Auth.Issued(auth.Tenant)
	if err != nil || len(names) != 2 || !revoked["acme"] || revoked["globex"] {
		t.Fatalf("issued: %v %v %v", names, revoked, err)
	}
}

func TestIssueRefusesBadNames(t *testing.T) {
	a, err := auth.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "Acme", "a.b", "a*", ">", "_all", "-x", strings.Repeat("a", 64)} {
		if _, err := a.Issue(auth.Tenant, name, auth.IssueOptions{}); err == nil {
			t.Errorf("tenant %q issued", name)
		}
	}
	if _, err := a.Issue(auth.Tenant, "acme-eu_1", auth.IssueOptions{}); err != nil {
		t.Error(err)
	}
	// Init again loads the same keys.
	b, err := auth.Init(a.Dir())
	if err != nil || b.AccountKey() != a.AccountKey() {
		t.Fatalf("reload: %v", err)
	}
}

func TestHostTrustAdmitsOnlyItsHosts(t *testing.T) {
	a, err := auth.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jwtOf := func(a *auth.Authority, role auth.Role, name string, o auth.IssueOptions) string {
		_, tok, err := auth.ReadIdentity(writeTemp(t, must(a.Issue(role, name, o))))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	trust, err := auth.NewHostTrust(jwtOf(a, auth.Scheduler, "s1", auth.IssueOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	h1 := jwtOf(a, auth.Host, "h1", auth.IssueOptions{Pools: []string{"cpu"}, GPU: true})
	id, err := trust.Admit(h1, "h1", now)
	if err != nil || id.Name != "h1" || !id.GPU || !id.AllowsPool("cpu") || id.AllowsPool("gpu") {
		t.Fatalf("h1: %+v, %v", id, err)
	}
	if _, err := trust.Admit(h1, "h2", now); !errors.Is(err, auth.ErrNotAdmitted) {
		t.Errorf("h1's credential admitted h2: %v", err)
	}
	if _, err := trust.Admit(jwtOf(a, auth.Tenant, "h1", auth.IssueOptions{}), "h1", now); !errors.Is(err, auth.ErrNotAdmitted) {
		t.Errorf("a tenant credential admitted a host: %v", err)
	}
	other, _ := auth.Init(t.TempDir())
	if _, err := trust.Admit(jwtOf(other, auth.Host, "h1", auth.IssueOptions{}), "h1", now); !errors.Is(err, auth.ErrNotAdmitted) {
		t.Errorf("another installation's host admitted: %v", err)
	}
	if _, err := trust.Admit("", "h1", now); !errors.Is(err, auth.ErrNotAdmitted) {
		t.Errorf("no credential admitted: %v", err)
	}
	exp := jwtOf(a, auth.Host, "h3", auth.IssueOptions{Expires: now.Add(time.Hour)})
	if _, err := trust.Admit(exp, "h3", now.Add(2*time.Hour)); !errors.Is(err, auth.ErrNotAdmitted) {
		t.Errorf("an expired credential admitted: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.creds")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
