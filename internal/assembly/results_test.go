package assembly_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/nats-io/nats.go"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// bigTenantPolicies is the default bundle with one more tenant, bigco,
// whose payload cap is 8 MiB (the default, 1 MiB, keeps echo's input, and
// so its result, to one message).
func bigTenantPolicies(t testing.TB) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, src := range defaultBundleWith(t, nil).Files {
		if name == "data.yaml" {
			s := strings.Replace(string(src), "\ntenants:\n", "\ntenants:\n  bigco:\n    max_payload_bytes: 8388608\n", 1)
			if s == string(src) {
				t.Fatal("data.yaml has no tenants: line: update this test")
			}
			src = []byte(s)
		}
		fsys[name] = &fstest.MapFile{Data: src}
	}
	return fsys
}

// TestLargeResultReachesItsTenant is issue 14: an echo result of 3 MiB,
// three times what one NATS message holds, reaches the user the way
// `ward submit --wait` and `ward jobs get --result` go (Watch, Wait, Get),
// read by pointer from the tenant's result bucket; a small result still
// comes inline from the job store; another tenant reads neither the job
// nor the result object.
func TestLargeResultReachesItsTenant(t *testing.T) {
	e := start(t, assembly.Options{Safety: assembly.SafetyConfig{Policies: bigTenantPolicies(t)}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bigco := e.clientAs(t, auth.Tenant, "bigco")

	// 3 MiB of varied bytes, so that a chunk out of place shows.
	payload := make([]byte, 3<<20)
	for i := range payload {
		payload[i] = byte(i*7 + i>>8)
	}
	// runAs goes the way `ward submit --wait` does: Watch, Submit, Wait,
	// then Get with the result, which it checks is the payload.
	rec := runAs(t, bigco, string(payload))
	ptr := rec.GetResultPtr()
	if want := bus.ResultObjectPtr("bigco", rec.GetJobId(), 1); ptr != want {
		t.Fatalf("result pointer %q, want %q", ptr, want)
	}
	// Without the result, the record is all there is; an admin reads the
	// result too.
	if rec, err := bigco.Get(ctx, rec.GetJobId(), false); err != nil || len(rec.GetResult()) != 0 || rec.GetResultPtr() != ptr {
		t.Fatalf("get without the result: %d bytes, %q, %v", len(rec.GetResult()), rec.GetResultPtr(), err)
	}
	if rec, err := e.client.Get(ctx, rec.GetJobId(), true); err != nil || !bytes.Equal(rec.GetResult(), payload) {
		t.Fatalf("the admin's get: %d bytes, %v", len(rec.GetResult()), err)
	}

	// A small result travels inline, from the job store, as ever.
	if small := runAs(t, bigco, "small"); small.GetResultPtr() != jobstore.ResultPtr(small.GetJobId()) {
		t.Fatalf("a small result at %q", small.GetResultPtr())
	}

	// Another tenant: the job is "not found", and the server refuses it
	// the result bucket's JetStream API.
	globex := e.clientAs(t, auth.Tenant, "globex")
	if _, err := globex.Get(ctx, rec.GetJobId(), true); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("globex reading bigco's job: %v", err)
	}
	opts, err := auth.Options(e.sec.Creds(auth.Tenant, "globex"))
	if err != nil {
		t.Fatal(err)
	}
	refused := &refusals{}
	gc, err := bus.Connect(e.natsURL, "globex", append(opts, nats.ErrorHandler(refused.handler))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gc.Close)
	objs, err := bus.NewObjects(gc)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := objs.Get(short, ptr, 1<<30); err == nil {
		t.Fatal("globex read bigco's result")
	}
	checkFor(t, 5*time.Second, func() bool {
		return refused.saw(`Publish to "$JS.API.STREAM.INFO.` + "OBJ_" + bus.ResultBucketOf("bigco") + `"`)
	})
}

// TestJobStoreResultTooLargeForAReply: a result in the job store that a
// reply cannot carry (one stored before hosts stored large ones by
// pointer) is an error that says so, at once, not a request that times
// out.
func TestJobStoreResultTooLargeForAReply(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("small")})
	if _, err := e.store.PutResult(ctx, rec.GetJobId(), bytes.Repeat([]byte("x"), 2<<20)); err != nil {
		t.Fatal(err)
	}
	got, err := e.client.Get(ctx, rec.GetJobId(), true)
	if err == nil || !strings.Contains(err.Error(), "too large for a reply") {
		t.Fatalf("get of a 2 MiB job-store result: %v", err)
	}
	if got.GetJobId() != rec.GetJobId() || got.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || len(got.GetResult()) != 0 {
		t.Fatalf("record with the error: %v", got)
	}
}
