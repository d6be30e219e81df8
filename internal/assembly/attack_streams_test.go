package assembly_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/modreg"
)

// TestAttackStreamConfiguration: a stream's configuration (its subjects,
// its sources, its republish rule) and a consumer's (the subject it
// delivers to) reach any subject of the account, whatever the permissions
// of whoever wrote them: NATS checks neither against them. So neither a
// tenant nor a host may write one. Each attack the security review made
// with a tenant's credential, and the same with a host's and a safety
// kernel's, is refused by
// the server, and nothing was created or changed. The legitimate paths are
// beside them: a large input and a large result go through the tenant's
// buckets, which a scheduler created when the tenant asked, and are read
// with direct gets.
func TestAttackStreamConfiguration(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The legitimate path: over the inline sizes both ways (echo returns
	// its input), so by pointer both ways.
	acme := e.clientAs(t, auth.Tenant, "acme")
	big := bytes.Repeat([]byte("b"), max(bus.InlineContextMax, bus.InlineResultMax)+1)
	rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", Payload: big})
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || !bytes.Equal(rec.GetResult(), big) ||
		!bus.IsObjectPtr(rec.GetResultPtr()) || !bus.IsObjectPtr(rec.GetContextPtr()) {
		t.Fatalf("acme's large job: %s %s %q, %d bytes back (context %s, result %s)", rec.GetState(), rec.GetErrorCode(),
			rec.GetErrorMessage(), len(rec.GetResult()), rec.GetContextPtr(), rec.GetResultPtr())
	}

	admin, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	ctxStream := "OBJ_" + bus.ContextBucketOf("acme")
	config := func(name string) jetstream.StreamConfig {
		t.Helper()
		s, err := admin.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config
	}
	before := config(ctxStream)
	// The module registry, as a deploy makes it.
	if _, err := modreg.Open(ctx, e.client.Bus().NATS()); err != nil {
		t.Fatal(err)
	}
	modulesBefore := config("KV_ward_modules")

	tenantNC, tenantRefused := e.raw(t, auth.Tenant, "acme")
	hostNC, hostRefused := e.raw(t, auth.Host, "h9")
	kernelNC, kernelRefused := e.raw(t, auth.Safety, "k9")
	// request sends a JetStream API request with body: a refused one gets
	// no answer.
	request := func(nc *nats.Conn, subject string, body any) error {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		_, err = nc.Request(subject, b, time.Second)
		return err
	}
	widened := before
	widened.Subjects = append(append([]string{}, before.Subjects...),
		bus.WorkerJobsSubject("*"), bus.ResultSubject("*"), bus.EventSubject("globex", ">"))
	republished := before
	republished.RePublish = &jetstream.RePublish{Source: ">", Destination: "$KV." + auth.APIKeyBucket + ".minted"}
	sourced := before
	sourced.Sources = []*jetstream.StreamSource{{Name: "OBJ_" + bus.ContextBucketOf("globex")}}
	pushTo := func(stream, deliver string) map[string]any {
		return map[string]any{"stream_name": stream, "config": map[string]any{"deliver_subject": deliver, "ack_policy": "none"}}
	}
	attacks := []struct {
		who     string
		nc      *nats.Conn
		subject string
		body    any
	}{
		{"tenant", tenantNC, "$JS.API.STREAM.UPDATE." + ctxStream, widened},
		{"tenant", tenantNC, "$JS.API.STREAM.UPDATE." + ctxStream, republished},
		{"tenant", tenantNC, "$JS.API.STREAM.UPDATE." + ctxStream, sourced},
		{"tenant", tenantNC, "$JS.API.STREAM.CREATE.EVIL", jetstream.StreamConfig{Name: "EVIL", Subjects: []string{bus.WorkerJobsSubject("*")}}},
		{"tenant", tenantNC, "$JS.API.CONSUMER.CREATE." + ctxStream, pushTo(ctxStream, bus.ResultSubject("h1"))},
		// The host writes its own keys of the module registry, and any
		// tenant's result objects: a consumer of its own would deliver
		// them anywhere.
		{"host", hostNC, "$JS.API.CONSUMER.CREATE.KV_ward_modules", pushTo("KV_ward_modules", "$KV."+auth.APIKeyBucket+".minted")},
		{"host", hostNC, "$JS.API.CONSUMER.CREATE." + ctxStream, pushTo(ctxStream, bus.ResultSubject("h1"))},
		{"host", hostNC, "$JS.API.STREAM.CREATE.EVIL", jetstream.StreamConfig{Name: "EVIL", Subjects: []string{bus.SubjectEvents}}},
		{"host", hostNC, "$JS.API.STREAM.UPDATE." + ctxStream, widened},
		// A kernel follows the policy bucket by subscription and direct
		// gets, and writes its own audit records: no consumer, and no
		// stream but the two it makes when they are missing.
		{"kernel", kernelNC, "$JS.API.CONSUMER.CREATE.KV_ward_policy", pushTo("KV_ward_policy", "$KV."+auth.APIKeyBucket+".minted")},
		{"kernel", kernelNC, "$JS.API.CONSUMER.CREATE.WARD_AUDIT", pushTo("WARD_AUDIT", bus.ResultSubject("h1"))},
		{"kernel", kernelNC, "$JS.API.STREAM.CREATE.EVIL", jetstream.StreamConfig{Name: "EVIL", Subjects: []string{bus.WorkerJobsSubject("*")}}},
		{"kernel", kernelNC, "$JS.API.STREAM.UPDATE." + ctxStream, republished},
	}
	for _, a := range attacks {
		if err := request(a.nc, a.subject, a.body); err == nil {
			t.Errorf("the %s's %s was answered", a.who, a.subject)
		}
	}
	checkFor(t, 5*time.Second, func() bool {
		return tenantRefused.saw(`Publish to "$JS.API.STREAM.UPDATE.`+ctxStream+`"`) &&
			tenantRefused.saw(`Publish to "$JS.API.CONSUMER.CREATE.`+ctxStream+`"`) &&
			tenantRefused.saw(`Publish to "$JS.API.STREAM.CREATE.EVIL"`) &&
			hostRefused.saw(`Publish to "$JS.API.CONSUMER.CREATE.KV_ward_modules"`) &&
			hostRefused.saw(`Publish to "$JS.API.STREAM.CREATE.EVIL"`) &&
			kernelRefused.saw(`Publish to "$JS.API.CONSUMER.CREATE.KV_ward_policy"`) &&
			kernelRefused.saw(`Publish to "$JS.API.STREAM.CREATE.EVIL"`)
	})

	// Nothing changed: the streams are configured as before, no stream
	// was made, and no consumer delivers anywhere but to an inbox.
	after := config(ctxStream)
	if !equalJSON(t, before, after) {
		t.Errorf("acme's context stream changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if !equalJSON(t, modulesBefore, config("KV_ward_modules")) {
		t.Error("the module registry's stream changed")
	}
	if _, err := admin.Stream(ctx, "EVIL"); err == nil {
		t.Error("a stream EVIL was made")
	}
	for _, name := range []string{ctxStream, "KV_ward_modules", "OBJ_" + bus.ResultBucketOf("acme")} {
		s, err := admin.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for info := range s.ListConsumers(ctx).Info() {
			if d := info.Config.DeliverSubject; d != "" && !strings.HasPrefix(d, "_INBOX") {
				t.Errorf("a consumer of %s delivers to %s", name, d)
			}
		}
	}
	// And the tenant's path still works after the attacks.
	if again := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", Payload: big}); again.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("acme's large job after the attacks: %s", again.GetState())
	}
}

// TestAttackContextSize: the policy judges a context stored by pointer by
// the size its object's description gives, which the tenant writes. The
// default policy caps job.echo at 1 MiB: 2 MiB stored truly described is
// DENIED. A tenant that rewrites the description to say 1,024 bytes gets
// the job judged at 1,024 bytes and ALLOWED, and the host then refuses to
// run anything but 1,024 bytes of the digest judged: the job fails with a
// clear error and the bytes never reach the module. A context under the
// cap, by pointer too, runs.
func TestAttackContextSize(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acme := e.clientAs(t, auth.Tenant, "acme")
	// The legitimate path, through the client's own (which asks a
	// scheduler for the tenant's buckets).
	fine := bytes.Repeat([]byte("fine "), 180_000)
	if rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", Payload: fine}); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED ||
		!bytes.Equal(rec.GetResult(), fine) || !bus.IsObjectPtr(rec.GetContextPtr()) {
		t.Fatalf("900 KB by pointer: %s %q (context %s)", rec.GetState(), rec.GetErrorMessage(), rec.GetContextPtr())
	}
	objs, err := bus.NewObjects(acme.Bus())
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("2 MiB "), (2<<20)/6)
	ptr, err := objs.PutContext(ctx, "acme", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", ContextPtr: ptr}); rec.GetState() != wardv1.JobState_JOB_STATE_DENIED {
		t.Fatalf("2 MiB described truly: %s, want DENIED by the 1 MiB cap", rec.GetState())
	}
	bucket, name, err := bus.ParseObjectPtr(ptr)
	if err != nil {
		t.Fatal(err)
	}

	// The tenant rewrites its object's description, as its credential
	// allows (its own bucket's subjects).
	nc, _ := e.raw(t, auth.Tenant, "acme")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	meta := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	m, err := s.GetLastMsgForSubject(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(m.Data, &info); err != nil {
		t.Fatal(err)
	}
	describe := func(size int) {
		t.Helper()
		info["size"] = size
		b, _ := json.Marshal(info)
		msg := nats.NewMsg(meta)
		msg.Data, msg.Header = b, nats.Header{"Nats-Rollup": []string{"sub"}}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	describe(1024)
	runs := counter(t, "ward_host_instance_runs_total", "module", "echo")
	rec := submitAndWait(t, acme, &wardv1.JobRequest{Topic: "job.echo", ContextPtr: ptr})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetErrorCode() != string(reason.InputUnavailable) ||
		!strings.Contains(rec.GetErrorMessage(), "1024 bytes the policy judged") {
		t.Fatalf("a context described as 1,024 bytes: %s %s %q, want FAILED input_unavailable", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage())
	}
	if len(rec.GetResult()) != 0 {
		t.Fatalf("the module ran: %d bytes back", len(rec.GetResult()))
	}
	if after := counter(t, "ward_host_instance_runs_total", "module", "echo"); after != runs {
		t.Fatalf("echo ran %v times during the attack", after-runs)
	}
}

// equalJSON reports whether a and b encode alike.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}
