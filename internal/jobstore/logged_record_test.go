package jobstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sampleRecords holds a record of every op with every field it can carry
// set, in a zone of its own (a record keeps the instant and the offset).
func sampleRecords() []*record {
	at := time.Date(2026, 11, 28, 23, 59, 1, 123456789, time.FixedZone("X", 5*3600+30*60))
	retries := 0
	safety := &Safety{Decision: "ALLOW", Reasons: []string{"a", "b"}, PolicyRevision: "r1", DecisionID: "d1",
		Constraints: []byte(`{"x":1}`), InputDigest: "sha256:00", EvalNS: 1234, Cached: true, DecidedAtUnixMS: 99}
	job := &Job{ID: "j1", Topic: "job.echo", Tenant: "acme", Priority: -3, State: Pending, Pool: "echo", WorkerID: "h1",
		ContextPtr: "redis://ctx:j1", ResultPtr: "p", ResultDigest: "sha256:11", Module: "echo", ModuleDigest: "sha256:22",
		Labels: map[string]string{"k": "v", "": "e"}, Requires: []string{"gpu"}, IdempotencyKey: "ik", TraceID: "t",
		Traceparent: "00-x", DeadlineMS: 5000, MaxRetries: 4, Attempt: 2, Env: map[string]string{"A": "1"},
		ParentJobID: "p0", WorkflowID: "w0", CPUMillicores: 500, MemoryBytes: 1 << 20, PayloadSize: 64,
		PayloadDigest: "sha256:33", Deadline: at.Add(time.Hour), Waiting: "queue:echo", Chain: "c", Waits: 3,
		Safety: safety, Reason: "R", ErrorCode: "E", ErrorMessage: "m", Log: []byte("log\x00"), LogTruncated: true,
		CreatedAt: at, UpdatedAt: at.Add(time.Second)}
	move := &transitionRecord{To: Succeeded, From: Running, Pool: "echo", WorkerID: "h1", ResultPtr: "rp",
		Result: []byte{0, 1, 2}, StoreResult: true, ResultDigest: "sha256:44", Module: "m", ModuleDigest: "md",
		Reason: "r", ErrorCode: "ec", ErrorMessage: "em", Log: []byte("l"), LogTruncated: true, Safety: safety,
		Attempt: 7, MaxRetries: &retries, Deadline: at, Waits: 2, IfWorker: "h1", IfAttempt: 7, IfTenant: "acme",
		Wait: &Wait{Pool: "p", Score: 1.5e12, Until: at}, Message: "msg", At: at, Via: Running, ViaMessage: "vm"}
	run := &Run{ID: "run1", Tenant: "acme", Workflow: "demo", Definition: []byte("name: demo"), Input: []byte("{}"),
		State: "RUNNING", Reason: "x", Owner: "s0", OwnedUntil: at, Deadline: at, CreatedAt: at, UpdatedAt: at, Events: 3}
	return []*record{
		{Op: opSubmit, Job: job, Payload: []byte("payload")},
		{Op: opSubmit, Job: &Job{ID: "j2", Topic: "job.echo", Tenant: "acme", CreatedAt: at}, Payload: []byte{}},
		{Op: opTransition, ID: "j1", T: move},
		{Op: opTransition, ID: "j1", T: &transitionRecord{To: Pending, Wait: &Wait{Pool: "echo", Cap: 0}, At: at}},
		{Op: opPutResult, ID: "j1", Data: []byte("result")},
		{Op: opDueDeferred, At: at, N: 10},
		{Op: opAddDLQ, DLQ: &DLQEntry{JobID: "j1", Topic: "job.echo", Tenant: "acme", Reason: "NO_CAPACITY", Message: "m", At: at}},
		{Op: opRemoveDLQ, ID: "j1"},
		{Op: opSweep, At: at},
		{Op: opSetMode, Mode: "DEGRADED"},
		{Op: opSetDrained, ID: "h1", On: true, At: at},
		{Op: opCreateRun, Run: run, Events: [][]byte{[]byte("e1"), {}}},
		{Op: opAppendRun, ID: "run1", Owner: "s0", N: 1, Events: [][]byte{[]byte("e2")}, State: "SUCCEEDED", Reason: "ok", At: at},
		{Op: opClaimRun, ID: "run1", Owner: "s1", Until: at, At: at},
	}
}

// TestRecordRoundTrip: every field of every op's record reads back as it
// was written, zone offsets included.
func TestRecordRoundTrip(t *testing.T) {
	var batch []byte
	recs := sampleRecords()
	for _, r := range recs {
		b, err := appendRecord(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		batch = appendStr(batch, string(b)) // its length, then it
	}
	var got []*record
	n, err := readBatch(batch, func(r *record) error { got = append(got, r); return nil })
	if err != nil || n != len(recs) {
		t.Fatalf("read %d of %d records: %v", n, len(recs), err)
	}
	for i := range recs {
		if d := cmp.Diff(recs[i], got[i], cmp.AllowUnexported(record{}), cmp.Comparer(func(a, b time.Time) bool {
			_, ao := a.Zone()
			_, bo := b.Zone()
			return a.Equal(b) && ao == bo
		})); d != "" {
			t.Errorf("record %d (%s) (-written +read):\n%s", i, recs[i].Op, d)
		}
	}
}

// TestJSONBatchReplays: a log an earlier Ward wrote (each batch a JSON
// array of records) still replays.
func TestJSONBatchReplays(t *testing.T) {
	at := time.Now().UTC()
	recs := []*record{
		{Op: opSubmit, Job: &Job{ID: "j1", Topic: "job.echo", Tenant: "acme", CreatedAt: at}, Payload: []byte("x")},
		{Op: opTransition, ID: "j1", T: &transitionRecord{To: Cancelled, At: at}},
	}
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	l := &Logged{Memory: NewMemory()}
	if n, err := l.applyBatch(b); err != nil || n != 2 {
		t.Fatalf("applied %d records: %v", n, err)
	}
	j, err := l.Memory.Get(context.Background(), "j1")
	if err != nil || j.State != Cancelled {
		t.Fatalf("j1 after a JSON batch: %+v, %v", j, err)
	}
}

// FuzzReadBatch: a batch cut short or corrupt is refused with an error;
// reading never panics.
func FuzzReadBatch(f *testing.F) {
	for _, r := range sampleRecords() {
		b, err := appendRecord(nil, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(appendStr(nil, string(b)))
	}
	f.Add([]byte{0x05, 0x01, 0x02, 0xff, 0xff, 0x0f, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = readBatch(b, func(*record) error { return nil })
	})
}
