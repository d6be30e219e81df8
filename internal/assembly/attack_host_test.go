package assembly_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
)

// TestAttackHostResultPointers: a host holds no job store credential. It
// answers a job with the result itself, or with the pointer to its
// attempt's object in the tenant's result bucket; a compromised host that
// answers acme's job with a pointer into the job store naming globex's
// job's context or result gets acme's job failed result_unavailable, and
// acme reads nothing of globex's. Beside it, the same host's honest answer
// (the result in the message) is stored by the scheduler and read back.
// Every answer, refused or applied, is acknowledged, so the host stops
// sending it.
func TestAttackHostResultPointers(t *testing.T) {
	to, err := config.ParseTimeouts("test", []byte("reconciler:\n  dispatch_timeout: 1m\n  running_timeout: 1m\n  scan_interval: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: to}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// rogue is an admitted host, compromised: it takes jobs and answers
	// them as it likes.
	rogue := e.conn(t, auth.Host, "rogue")
	_, rogueJWT, _ := auth.ReadIdentity(e.sec.Creds(auth.Host, "rogue"))
	boot, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	tickets := auth.NewBootVerifier("rogue", auth.HostKey(e.creds.DispatchSecret, "rogue"), boot)
	took := make(chan *wardv1.DispatchTicket, 4)
	sub, err := rogue.NATS().Subscribe(bus.WorkerJobsSubject("rogue"), func(m *nats.Msg) {
		var d wardv1.Dispatch
		if proto.Unmarshal(m.Data, &d) == nil {
			if tk, err := tickets.Open(&d, time.Now()); err == nil {
				took <- tk
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := rogue.Publish(bus.HeartbeatSubject("rogue"), &wardv1.Heartbeat{WorkerId: "rogue", Pools: []string{"echo"},
		MaxParallelJobs: 4, SentAtUnixMs: time.Now().UnixMilli(), Credential: rogueJWT, BootNonce: boot}); err != nil {
		t.Fatal(err)
	}
	e.waitWorkers(t, 1)
	take := func() *wardv1.DispatchTicket {
		t.Helper()
		select {
		case tk := <-took:
			return tk
		case <-ctx.Done():
			t.Fatal("rogue got no job")
		}
		return nil
	}
	// answer sends a result as a host does, and reports whether a
	// scheduler acknowledged it.
	answer := func(res *wardv1.JobResult) bool {
		t.Helper()
		b, err := proto.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		_, err = rogue.NATS().Request(bus.ResultSubject("rogue"), b, 10*time.Second)
		return err == nil
	}

	globex := e.clientAs(t, auth.Tenant, "globex")
	secret := []byte("globex's secret input")
	victim := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: secret}
	if _, err := globex.Submit(ctx, victim); err != nil {
		t.Fatal(err)
	}
	vt := take()
	if !bytes.Equal(vt.GetJob().GetPayload(), secret) || vt.GetJob().GetContextSize() != int64(len(secret)) {
		t.Fatalf("the ticket carries %q (%d bytes judged), want the context itself", vt.GetJob().GetPayload(), vt.GetJob().GetContextSize())
	}
	acme := e.clientAs(t, auth.Tenant, "acme")
	for _, ptr := range []string{jobstore.ContextPtr(victim.JobId), jobstore.ResultPtr(victim.JobId), "redis://job:" + victim.JobId} {
		req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: []byte("acme's")}
		if _, err := acme.Submit(ctx, req); err != nil {
			t.Fatal(err)
		}
		tk := take()
		if tk.GetJob().GetJobId() != req.JobId {
			t.Fatalf("rogue got %s, want acme's %s", tk.GetJob().GetJobId(), req.JobId)
		}
		if !answer(&wardv1.JobResult{JobId: req.JobId, WorkerId: "rogue", Attempt: tk.GetJob().GetAttempt(),
			Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: ptr}) {
			t.Fatalf("the refused answer %s was not acknowledged: the host would send it for ever", ptr)
		}
		var rec *wardv1.JobRecord
		checkFor(t, 10*time.Second, func() bool {
			rec, err = acme.Get(ctx, req.JobId, true)
			return err == nil && rec.GetState() == wardv1.JobState_JOB_STATE_FAILED
		})
		if rec.GetErrorCode() != string(reason.ResultUnavailable) || bytes.Contains(rec.GetResult(), secret) || rec.GetResultPtr() != "" {
			t.Fatalf("acme's job answered with %s: %s %s %q, result %q at %q", ptr, rec.GetState(), rec.GetErrorCode(),
				rec.GetErrorMessage(), rec.GetResult(), rec.GetResultPtr())
		}
	}
	// The honest answer: the result in the message, stored by the
	// scheduler with the move that ends the job.
	if !answer(&wardv1.JobResult{JobId: victim.JobId, WorkerId: "rogue", Attempt: vt.GetJob().GetAttempt(),
		Status: wardv1.JobState_JOB_STATE_SUCCEEDED, Result: []byte("done")}) {
		t.Fatal("the honest answer was not acknowledged")
	}
	checkFor(t, 10*time.Second, func() bool {
		rec, err := globex.Get(ctx, victim.JobId, true)
		return err == nil && rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED && string(rec.GetResult()) == "done" &&
			rec.GetResultPtr() == jobstore.ResultPtr(victim.JobId)
	})
	// Sent again (its first answer lost, as the host sees it): refused as
	// late, acknowledged, and nothing changes.
	if !answer(&wardv1.JobResult{JobId: victim.JobId, WorkerId: "rogue", Attempt: vt.GetJob().GetAttempt(),
		Status: wardv1.JobState_JOB_STATE_SUCCEEDED, Result: []byte("changed")}) {
		t.Fatal("a result sent again was not acknowledged")
	}
	if rec, err := globex.Get(ctx, victim.JobId, true); err != nil || string(rec.GetResult()) != "done" {
		t.Fatalf("after the result was sent again: %q, %v", rec.GetResult(), err)
	}
}

// TestAttackHostRewritesAResult: a host writes no tenant's bucket. A large
// result goes to the schedulers in parts, which store only the parts of a
// job running on the sending host at that attempt, under that attempt's
// object. So a stolen host credential can neither rewrite another job's
// result object nor spoil it: its writes to the bucket, its parts for a
// job not its own and its description of another's result are all
// refused, and the result reads back as its host sent it. The honest
// path, beside it: acme's 600 KB result, sent in parts, reads back whole.
func TestAttackHostRewritesAResult(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acme := e.clientAs(t, auth.Tenant, "acme")
	big := bytes.Repeat([]byte("r"), max(bus.InlineContextMax, bus.InlineResultMax)+1)
	rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", Payload: big})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || !bytes.Equal(rec.GetResult(), big) ||
		rec.GetResultDigest() != bus.ContentDigest(big) || !bus.IsObjectPtr(rec.GetResultPtr()) {
		t.Fatalf("acme's large result: %s, %d bytes at %s, digest %q", rec.GetState(), len(rec.GetResult()), rec.GetResultPtr(), rec.GetResultDigest())
	}
	bucket, name, err := bus.ParseObjectPtr(rec.GetResultPtr())
	if err != nil {
		t.Fatal(err)
	}
	thief, refused := e.raw(t, auth.Host, "h9")
	forged := bytes.Repeat([]byte("f"), 10)
	// Straight into the bucket: a chunk, the description, a purge.
	meta := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	for _, subj := range []string{"$O." + bucket + ".C.forged", meta} {
		if err := thief.Publish(subj, forged); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := thief.Request("$JS.API.STREAM.PURGE.OBJ_"+bucket, []byte(`{}`), time.Second); err == nil {
		t.Error("a host's purge of acme's result bucket was answered")
	}
	// Through the schedulers: a part of a job that is not h9's, asked as
	// h9 (refused by the scheduler) and as the job's host (by the server).
	part := func(subject string, attempt int32) (*wardv1.ResultPartReply, error) {
		b, _ := proto.Marshal(&wardv1.ResultPart{JobId: rec.GetJobId(), Attempt: attempt, Data: forged})
		m, err := thief.Request(subject, b, 5*time.Second)
		if err != nil {
			return nil, err
		}
		reply := &wardv1.ResultPartReply{}
		return reply, proto.Unmarshal(m.Data, reply)
	}
	for _, attempt := range []int32{rec.GetAttempt(), rec.GetAttempt() + 1} {
		if reply, err := part(bus.ResultPartSubject("h9"), attempt); err != nil || reply.GetCode() != string(reason.ResultUnavailable) {
			t.Fatalf("h9's part of acme's job, attempt %d: %v, %v", attempt, reply, err)
		}
	}
	if _, err := part(bus.ResultPartSubject(rec.GetWorkerId()), rec.GetAttempt()); err == nil {
		t.Errorf("h9 sent a part as %s and was answered", rec.GetWorkerId())
	}
	// A result of acme's job from h9, describing a result of its own
	// making: refused as not from the job's host, nothing described.
	b, _ := proto.Marshal(&wardv1.JobResult{JobId: rec.GetJobId(), WorkerId: "h9", Attempt: rec.GetAttempt(),
		Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: rec.GetResultPtr(), ResultDigest: bus.ContentDigest(forged),
		ResultSize: int64(bus.InlineResultMax + 1), ResultParts: 1})
	if _, err := thief.Request(bus.ResultSubject("h9"), b, 5*time.Second); err != nil {
		t.Fatalf("h9's result for acme's job went unanswered: %v", err)
	}
	checkFor(t, 5*time.Second, func() bool {
		return refused.saw(`Publish to "$O.`+bucket+`.C.forged"`) && refused.saw(`Publish to "`+meta+`"`) &&
			refused.saw(`Publish to "$JS.API.STREAM.PURGE.OBJ_`+bucket+`"`) &&
			refused.saw(`Publish to "`+bus.ResultPartSubject(rec.GetWorkerId())+`"`)
	})
	// Nothing changed: the object reads back as acme's host sent it, to
	// acme and to a plain read.
	admin, err := bus.NewObjects(e.client.Bus())
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := admin.Get(ctx, rec.GetResultPtr(), 1<<30); err != nil || !bytes.Equal(raw, big) {
		t.Fatalf("acme's result object after the attacks: %d bytes, %v", len(raw), err)
	}
	got, err := acme.Get(ctx, rec.GetJobId(), true)
	if err != nil || !bytes.Equal(got.GetResult(), big) || got.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("acme's read after the attacks: %s, %d bytes, %v", got.GetState(), len(got.GetResult()), err)
	}
}

// TestAttackHostReadsContexts: a host reads no tenant's bucket. A stored
// context is served by the schedulers to the host its job is dispatched
// to, at that attempt, and to no other: a stolen host credential's direct
// get of a tenant's context chunk is refused by the server, its request
// for a job dispatched elsewhere is refused by the scheduler, and it
// cannot ask as the job's host. The job itself, beside it, ran on its
// host with its context whole.
func TestAttackHostReadsContexts(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	acme := e.clientAs(t, auth.Tenant, "acme")
	secret := bytes.Repeat([]byte("acme's secret "), (bus.InlineContextMax/14)+1)
	rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", Payload: secret})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || !bytes.Equal(rec.GetResult(), secret) || !bus.IsObjectPtr(rec.GetContextPtr()) {
		t.Fatalf("acme's job: %s %q, context %s", rec.GetState(), rec.GetErrorMessage(), rec.GetContextPtr())
	}
	thief, refused := e.raw(t, auth.Host, "h9")
	stream := "OBJ_" + bus.ContextBucketOf("acme")
	if _, err := thief.Request("$JS.API.DIRECT.GET."+stream, []byte(`{"seq":1}`), time.Second); err == nil {
		t.Error("a host's direct get of acme's context was answered")
	}
	if _, err := thief.Request("$JS.API.CONSUMER.CREATE."+stream, []byte(`{"stream_name":"`+stream+`","config":{"ack_policy":"none"}}`), time.Second); err == nil {
		t.Error("a host's consumer on acme's context bucket was answered")
	}
	ask := func(subject string) (*wardv1.ContextReply, error) {
		b, _ := proto.Marshal(&wardv1.ContextRequest{JobId: rec.GetJobId(), Attempt: rec.GetAttempt()})
		m, err := thief.Request(subject, b, 5*time.Second)
		if err != nil {
			return nil, err
		}
		reply := &wardv1.ContextReply{}
		return reply, proto.Unmarshal(m.Data, reply)
	}
	if _, err := ask(bus.ContextSubject(rec.GetWorkerId())); err == nil {
		t.Errorf("h9 asked as %s and was answered", rec.GetWorkerId())
	}
	reply, err := ask(bus.ContextSubject("h9"))
	if err != nil || reply.GetError() == "" || len(reply.GetData()) != 0 {
		t.Fatalf("h9's request for a job not dispatched to it: %v, %v", reply, err)
	}
	checkFor(t, 5*time.Second, func() bool {
		return refused.saw(`Publish to "$JS.API.DIRECT.GET.`+stream+`"`) && refused.saw(`Publish to "$JS.API.CONSUMER.CREATE.`+stream+`"`) &&
			refused.saw(`Publish to "`+bus.ContextSubject(rec.GetWorkerId())+`"`)
	})
}
