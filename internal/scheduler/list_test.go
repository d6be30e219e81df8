package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/jobstore"
)

// listAll pages q with c to its end and returns the jobs' ids, failing on
// a duplicate.
func listAll(t *testing.T, c *client.Client, q *wardv1.ListJobsRequest) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	seen := map[string]bool{}
	for calls := 0; ; calls++ {
		if calls > 1000 {
			t.Fatalf("list %v pages without end", q)
		}
		reply, err := c.ListJobs(ctx, q)
		if err != nil {
			t.Fatalf("list %v: %v", q, err)
		}
		for _, j := range reply.GetJobs() {
			if seen[j.GetJobId()] {
				t.Fatalf("list %v: %s twice", q, j.GetJobId())
			}
			seen[j.GetJobId()] = true
			out = append(out, j.GetJobId())
		}
		if reply.GetNextCursor() == "" {
			return out
		}
		q.Cursor = reply.GetNextCursor()
	}
}

// TestListJobs: a tenant pages through all of its jobs, more than the
// 1000 the old listing saw, with each filter, and never another tenant's
// (whatever its request's tenant says); the admin lists every tenant's or
// one tenant's; a bad cursor is an error; List keeps working.
func TestListJobs(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	t0 := time.Now().Truncate(time.Millisecond)
	var acme, acmeFailed, acmeB, acmeRange, beta []string
	for i := range 1300 {
		tenant, topic := "acme", "job.a"
		if i%4 == 3 {
			tenant = "beta"
		}
		if i%3 == 0 {
			topic = "job.b"
		}
		created := t0.Add(time.Duration(i) * time.Millisecond)
		j := &jobstore.Job{ID: fmt.Sprintf("j%04d", i), Tenant: tenant, Topic: topic, CreatedAt: created}
		if _, _, err := e.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			if _, err := e.store.Transition(ctx, j.ID, jobstore.Transition{To: jobstore.Failed, At: created}); err != nil {
				t.Fatal(err)
			}
		}
		if tenant == "beta" {
			beta = append([]string{j.ID}, beta...)
			continue
		}
		acme = append([]string{j.ID}, acme...)
		if i%5 == 0 {
			acmeFailed = append([]string{j.ID}, acmeFailed...)
		}
		if topic == "job.b" {
			acmeB = append([]string{j.ID}, acmeB...)
		}
		if i >= 100 && i < 200 {
			acmeRange = append([]string{j.ID}, acmeRange...)
		}
	}
	betaC, err := e.tenant("beta")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d jobs, want %d", what, len(got), len(want))
		}
	}
	check("acme's", listAll(t, e.client, &wardv1.ListJobsRequest{Limit: 1000}), acme)
	check("acme's naming beta", listAll(t, e.client, &wardv1.ListJobsRequest{Limit: 333, Tenant: "beta"}), acme)
	check("beta's", listAll(t, betaC, &wardv1.ListJobsRequest{}), beta)
	check("acme's FAILED", listAll(t, e.client, &wardv1.ListJobsRequest{State: wardv1.JobState_JOB_STATE_FAILED, Limit: 100}), acmeFailed)
	check("acme's job.b", listAll(t, e.client, &wardv1.ListJobsRequest{Topic: "job.b", Limit: 100}), acmeB)
	check("acme's [100, 200)", listAll(t, e.client, &wardv1.ListJobsRequest{
		SinceUnixMs: t0.Add(100 * time.Millisecond).UnixMilli(), UntilUnixMs: t0.Add(200 * time.Millisecond).UnixMilli(), Limit: 7}), acmeRange)
	check("the admin's, beta", listAll(t, e.admin, &wardv1.ListJobsRequest{Tenant: "beta", Limit: 1000}), beta)
	all := listAll(t, e.admin, &wardv1.ListJobsRequest{Limit: 1000})
	if len(all) != 1300 || all[0] != "j1299" || all[1299] != "j0000" {
		t.Errorf("the admin's: %d jobs", len(all))
	}

	// List: the first page, up to 1000.
	jobs, err := e.client.List(ctx, 2000, wardv1.JobState_JOB_STATE_FAILED)
	if err != nil || len(jobs) != len(acmeFailed) {
		t.Errorf("List(2000, FAILED): %d jobs, %v; want %d", len(jobs), err, len(acmeFailed))
	}
	if jobs, err := e.admin.List(ctx, 2000, wardv1.JobState_JOB_STATE_UNSPECIFIED); err != nil || len(jobs) != 1000 || jobs[0].GetJobId() != "j1299" {
		t.Errorf("the admin's List(2000): %d jobs, %v; want the newest 1000", len(jobs), err)
	}

	for _, q := range []*wardv1.ListJobsRequest{
		{Cursor: "not-a-cursor"},
		{SinceUnixMs: 10, UntilUnixMs: 5},
		{State: wardv1.JobState(99)},
	} {
		if reply, err := e.client.ListJobs(ctx, q); err == nil {
			t.Errorf("list %v: %v, no error", q, reply)
		}
	}
}

// TestListJobsFitsMaxPayload: a page too large for one NATS message is cut
// to what fits, with a cursor that goes on after its last job: every job
// is listed, none twice.
func TestListJobsFitsMaxPayload(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	big := strings.Repeat("x", 50<<10)
	var want []string
	for i := range 60 {
		j := &jobstore.Job{ID: fmt.Sprintf("big%02d", i), Tenant: "acme", Topic: "job.a", Labels: map[string]string{"big": big},
			CreatedAt: time.Now().Add(time.Duration(i) * time.Millisecond)}
		if _, _, err := e.store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		want = append([]string{j.ID}, want...)
	}
	reply, err := e.client.ListJobs(ctx, &wardv1.ListJobsRequest{Limit: 60})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(reply.GetJobs()); n == 0 || n == 60 || reply.GetNextCursor() == "" {
		t.Fatalf("a page of 60 jobs of 50 KiB: %d jobs, cursor %q; want it cut, with a cursor", n, reply.GetNextCursor())
	}
	if got := listAll(t, e.client, &wardv1.ListJobsRequest{Limit: 60}); !slices.Equal(got, want) {
		t.Errorf("paged: %d jobs, want %d", len(got), len(want))
	}
}

// TestSubmitSameIDAgain: a request sent again with the job id it had (a
// client's retry after a reply it did not get) is a duplicate of the job
// it made; another request with that id is refused, and stores nothing.
func TestSubmitSameIDAgain(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	req := func() *wardv1.JobRequest {
		return &wardv1.JobRequest{JobId: "again", Topic: "job.a", Payload: []byte(`{"n":1}`)}
	}
	e.mustSubmit(req())
	reply, err := e.submit(req())
	if err != nil || !reply.GetAccepted() || !reply.GetDuplicate() || reply.GetJobId() != "again" {
		t.Fatalf("the same request again: %v %v, want a duplicate", reply, err)
	}
	for _, other := range []*wardv1.JobRequest{
		{JobId: "again", Topic: "job.a", Payload: []byte(`{"n":2}`)},
		{JobId: "again", Topic: "job.b", Payload: []byte(`{"n":1}`)},
	} {
		reply, err := e.submit(other)
		if err == nil && reply.GetAccepted() || reply.GetReason() != string(reason.BadRequest) || !strings.Contains(reply.GetMessage(), "exists already") {
			t.Errorf("another request with the id: %v %v, want bad_request, exists already", reply, err)
		}
	}
	e.waitState("again", jobstore.Succeeded)
	if j, err := e.store.Get(context.Background(), "again"); err != nil || j.Topic != "job.a" || j.Attempt != 1 {
		t.Errorf("the job after the resubmissions: %+v, %v; want job.a's, run once", j, err)
	}
}

// TestIdempotencyConflict: the same idempotency key with the same request
// is a duplicate of the first job; with another payload or topic it is
// refused, idempotency_conflict, naming the first job; nothing is stored.
func TestIdempotencyConflict(t *testing.T) {
	e := start(t, options{})
	e.addHost(hb("h", "a"), nil)
	e.waitWorkers("h")
	first := e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", IdempotencyKey: "k", Payload: []byte(`{"n":1}`)})
	reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", IdempotencyKey: "k", Payload: []byte(`{"n":1}`)})
	if err != nil || reply.GetJobId() != first || !reply.GetDuplicate() {
		t.Fatalf("the same request: %v %v", reply, err)
	}
	for _, req := range []*wardv1.JobRequest{
		{Topic: "job.a", IdempotencyKey: "k", Payload: []byte(`{"n":2}`), JobId: "second"},
		{Topic: "job.b", IdempotencyKey: "k", Payload: []byte(`{"n":1}`), JobId: "second"},
	} {
		reply, err := e.submit(req)
		if err == nil && reply.GetAccepted() {
			t.Fatalf("another request with the key was accepted: %v", reply)
		}
		if reply.GetReason() != string(reason.IdempotencyConflict) || !strings.Contains(reply.GetMessage(), first) {
			t.Errorf("another request: %v %v; want %s naming %s", reply, err, reason.IdempotencyConflict, first)
		}
	}
	if _, err := e.store.Get(context.Background(), "second"); err == nil {
		t.Error("a conflicting submission was stored")
	}
	e.waitState(first, jobstore.Succeeded)
	// Another tenant's key is its own.
	if reply, err := e.submit(&wardv1.JobRequest{Topic: "job.a", IdempotencyKey: "k", TenantId: "beta", Payload: []byte("x")}); err != nil || !reply.GetAccepted() || reply.GetDuplicate() {
		t.Errorf("beta's key: %v %v", reply, err)
	}
}
