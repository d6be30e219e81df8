package assembly_test

// Admin actions taken by a client that writes no audit record (a raw NATS
// connection, the Go client library): each is in the audit log all the
// same, written by the part that carried it out, with the identity that
// part authenticated, or refused when the part cannot tell who asked.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

func TestAttackAdminActionsAreAuditedWhereCarriedOut(t *testing.T) {
	keys, err := assembly.EnsureSigningKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{ModuleRegistry: true, Safety: assembly.SafetyConfig{PolicyPubKey: keys.PolicyPub}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	// find waits for the record of action on target whose actor is actor.
	find := func(action, target, actor string) audit.Entry {
		t.Helper()
		var found audit.Entry
		checkFor(t, 10*time.Second, func() bool {
			es, err := audit.List(ctx, js, audit.Filter{Action: action, Limit: 100})
			if err != nil {
				return false
			}
			for _, x := range es {
				if x.Target == target && x.Actor == actor {
					found = x
					return true
				}
			}
			return false
		})
		return found
	}
	count := func(action string) int {
		t.Helper()
		es, err := audit.List(ctx, js, audit.Filter{Action: action, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}

	// A raw connection with an admin credential that does not sign its
	// requests: the scheduler cannot tell which admin asked, and refuses.
	nc, _ := e.raw(t, auth.Admin, "mallory")
	raw := func(subject string, req, reply proto.Message, h nats.Header) {
		t.Helper()
		data, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		m, err := nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject, Header: h, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(m.Data, reply); err != nil {
			t.Fatal(err)
		}
	}
	mode := &wardv1.SchedulerModeReply{}
	raw(bus.SubjectMode, &wardv1.SchedulerModeRequest{Mode: "READ_ONLY"}, mode, nil)
	if !strings.Contains(mode.GetError(), "not identified") || mode.GetMode() != "NORMAL" {
		t.Fatalf("an unsigned mode change: %+v", mode)
	}
	// Signed with another admin's JWT but mallory's key: refused too.
	mallory, err := auth.NewRequestSigner(e.sec.Creds(auth.Admin, "mallory"))
	if err != nil {
		t.Fatal(err)
	}
	alice, err := auth.NewRequestSigner(e.sec.Creds(auth.Admin, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	req := &wardv1.SchedulerModeRequest{Mode: "READ_ONLY"}
	data, _ := proto.Marshal(req)
	h, _ := mallory.Sign(bus.SubjectMode, data, time.Now())
	ha, _ := alice.Sign(bus.SubjectMode, data, time.Now())
	h.Set(auth.HeaderAdminJWT, ha.Get(auth.HeaderAdminJWT))
	raw(bus.SubjectMode, req, mode, h)
	if !strings.Contains(mode.GetError(), "not identified") || e.n.Scheduler.Mode() != "NORMAL" {
		t.Fatalf("a mode change with alice's JWT and mallory's signature: %+v", mode)
	}
	if n := count(audit.SchedulerMode); n != 0 {
		t.Fatalf("%d mode records after refused changes", n)
	}
	// Signed with its own credential, by hand: done, and recorded by the
	// scheduler with the credential it verified.
	h, _ = mallory.Sign(bus.SubjectMode, data, time.Now())
	raw(bus.SubjectMode, req, mode, h)
	if mode.GetError() != "" || mode.GetMode() != "READ_ONLY" {
		t.Fatalf("a signed mode change: %+v", mode)
	}
	if r := find(audit.SchedulerMode, "READ_ONLY", "admin:mallory"); r.Detail["from"] != "NORMAL" {
		t.Errorf("mode record: %+v", r)
	}

	// The Go client library with mallory's credential signs for it: every
	// admin action it takes is recorded by the scheduler.
	c := e.clientAs(t, auth.Admin, "mallory")
	if _, err := c.SchedulerMode(ctx, "NORMAL"); err != nil {
		t.Fatal(err)
	}
	find(audit.SchedulerMode, "NORMAL", "admin:mallory")
	_, dead := e.run(t, &wardv1.JobRequest{Topic: "job.unknown", TenantId: "acme"})
	if dead.GetReason() != "no_pool_mapping" {
		t.Fatalf("unplaceable job: %s/%s", dead.GetState(), dead.GetReason())
	}
	rep, err := c.RetryDLQ(ctx, dead.GetJobId())
	if err != nil {
		t.Fatal(err)
	}
	if r := find(audit.DLQRetry, dead.GetJobId(), "admin:mallory"); r.Detail["new_job"] != rep.GetJobId() {
		t.Errorf("retry record: %+v", r)
	}
	// The job ends, then its entry is added to the DLQ: wait for the entry.
	checkFor(t, 10*time.Second, func() bool {
		entries, err := c.DLQ(ctx, 100)
		return err == nil && slices.ContainsFunc(entries, func(e *wardv1.DLQEntry) bool { return e.GetJobId() == rep.GetJobId() })
	})
	if ok, err := c.DropDLQ(ctx, rep.GetJobId()); err != nil || !ok {
		t.Fatalf("drop: %v %v", ok, err)
	}
	find(audit.DLQDrop, rep.GetJobId(), "admin:mallory")
	// A cancel of a tenant's job through every tenant's subject.
	_, _ = c.Cancel(ctx, dead.GetJobId(), "mallory was here") // it has ended: refused, and still recorded
	if r := find(audit.JobCancel, dead.GetJobId(), "admin:mallory"); r.Detail["tenant"] != "acme" || r.Detail["state"] != "FAILED" {
		t.Errorf("cancel record: %+v", r)
	}
	// An unsigned retry and drop from the raw connection are refused.
	retry := &wardv1.SubmitReply{}
	raw(bus.SubjectDLQRetry, &wardv1.DLQRetryRequest{JobId: dead.GetJobId()}, retry, nil)
	if retry.GetAccepted() || retry.GetReason() != "unauthenticated" {
		t.Errorf("an unsigned DLQ retry: %+v", retry)
	}
	cancelled := &wardv1.GetJobReply{}
	raw(bus.TenantSubject(bus.SubjectCancel, bus.AllTenants), &wardv1.JobCancel{JobId: dead.GetJobId()}, cancelled, nil)
	if !strings.Contains(cancelled.GetError(), "not identified") {
		t.Errorf("an unsigned cancel for every tenant: %+v", cancelled)
	}

	// The module registry: a KV write the scheduler follows, recorded with
	// the actor the record claims.
	reg, err := modreg.Open(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	wasm := wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")
	mctx := modreg.WithActor(ctx, "admin:mallory")
	for _, v := range []string{"1", "2"} {
		ver, err := modreg.NewVersion(wasm, nil, "audited", v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Deploy(mctx, ver, wasm); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Rollback(mctx, "audited"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Remove(ctx, "audited"); err != nil { // claiming no one
		t.Fatal(err)
	}
	find(audit.ModuleDeploy, "audited", "claimed:admin:mallory")
	if r := find(audit.ModuleRollback, "audited", "claimed:admin:mallory"); r.Detail["version"] != "1" {
		t.Errorf("rollback record: %+v", r)
	}
	find(audit.ModuleRm, "audited", "claimed:unknown")
	checkFor(t, 5*time.Second, func() bool { return count(audit.ModuleDeploy) == 2 })

	// A policy pushed to the kernels' bucket: the kernel records it, with
	// the pusher the bundle claims and whether its signature verified.
	key, err := safety.LoadPolicySigningKey(keys.PolicyKey)
	if err != nil {
		t.Fatal(err)
	}
	good := defaultBundleWith(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest})
	res, err := safety.Push(ctx, nc, "", good, safety.PushOptions{By: "admin:mallory", SigningKey: key})
	if err != nil {
		t.Fatal(err)
	}
	r := find(audit.PolicyApply, safety.DefaultBucket, "claimed:admin:mallory")
	if r.Detail["revision"] != res.Revision || r.Detail["result"] != "applied" || !strings.HasPrefix(r.Detail["signature"], "verified") {
		t.Errorf("policy record: %+v", r)
	}
	unsigned := defaultBundleWith(t, map[string]string{"other.rego": "package ward.safety\n"})
	if _, err := safety.Push(ctx, nc, "", unsigned, safety.PushOptions{By: "admin:mallory", Unsigned: true}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() bool {
		es, err := audit.List(ctx, js, audit.Filter{Action: audit.PolicyApply})
		return err == nil && len(es) == 2 && es[0].Detail["result"] == "refused" && es[0].Detail["reason"] == "signature"
	})
}
