package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestClient drives a running system (a real NATS server with auth on, the
// safety kernel, a scheduler and a host running echo) through the public
// client only, as a program importing it would, with a tenant's
// credential.
func TestClient(t *testing.T) {
	sec := natstest.StartSecure(t)
	url := sec.URL
	store := jobstore.NewMemory()
	t.Cleanup(func() { store.Close() })
	creds, err := assembly.IssueDevCreds(sec.Auth, t.TempDir(), "h1")
	if err != nil {
		t.Fatal(err)
	}
	n, err := assembly.Start(context.Background(), assembly.Options{NATSURL: url, Store: store, Creds: &creds,
		Host: assembly.HostConfig{CacheDir: wasmtest.CacheDir(t),
			Modules: map[string][]byte{"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	admin, err := client.Dial(url, client.Options{Creds: creds.Admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	c, err := client.Dial(url, client.Options{Creds: sec.Creds(auth.Tenant, "acme")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if c.Tenant() != "acme" {
		t.Fatalf("the client is tenant %q", c.Tenant())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if ws, err := admin.Workers(ctx, 200*time.Millisecond); err == nil && len(ws) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the host never answered")
		}
	}

	// Submit, watch and wait: every state in order, the result stored.
	req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: []byte("hi there")}
	w, err := c.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var states []wardv1.JobState
	last, err := c.Wait(ctx, req.JobId, w, func(ev *wardv1.JobEvent) { states = append(states, ev.GetState()) })
	if err != nil {
		t.Fatal(err)
	}
	if last.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || states[len(states)-1] != last.GetState() {
		t.Fatalf("the job ended %s (states %v)", last.GetState(), states)
	}
	job, err := c.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(job.GetResult()) != "hi there" || job.GetTenantId() != "acme" || len(job.GetEvents()) < 5 {
		t.Fatalf("stored job: result %q tenant %q, %d events", job.GetResult(), job.GetTenantId(), len(job.GetEvents()))
	}
	// Wait showed the states the job's log holds, in its order (a move
	// through a state in one step is one event on the bus, two here).
	var logged []wardv1.JobState
	for _, ev := range job.GetEvents() {
		logged = append(logged, ev.GetState())
	}
	if !slices.Equal(states, logged) {
		t.Fatalf("Wait showed %v, the log holds %v", states, logged)
	}
	jobs, err := c.List(ctx, 10, wardv1.JobState_JOB_STATE_SUCCEEDED)
	if err != nil || len(jobs) != 1 || jobs[0].GetJobId() != req.JobId {
		t.Fatalf("List: %v, %d jobs", err, len(jobs))
	}

	// A job that ended cannot be cancelled, and stays as it was.
	if _, err := c.Cancel(ctx, req.JobId, "too late"); err == nil {
		t.Fatal("cancelling a SUCCEEDED job did not fail")
	}
	if job, err := c.Get(ctx, req.JobId, false); err != nil || job.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("after the refused cancel: %s, %v", job.GetState(), err)
	}

	// A malformed submission is refused with its reason code; a denied
	// one is stored DENIED with the policy's reason.
	if _, err := c.Submit(ctx, &wardv1.JobRequest{}); !errors.Is(err, client.ErrRefused) {
		t.Fatalf("a submission without a topic: %v, want ErrRefused", err)
	}
	// A tenant cannot submit for another: the tenant is its credential's.
	if reply, err := c.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "globex"}); !errors.Is(err, client.ErrRefused) ||
		reply.GetReason() != string(reason.TenantMismatch) {
		t.Fatalf("a submission for another tenant: %v, want %s", err, reason.TenantMismatch)
	}
	// The admin sees acme's job; another tenant does not.
	if job, err := admin.Get(ctx, req.JobId, false); err != nil || job.GetTenantId() != "acme" {
		t.Fatalf("the admin's Get: %v %v", job, err)
	}
	globex, err := client.Dial(url, client.Options{Creds: sec.Creds(auth.Tenant, "globex")})
	if err != nil {
		t.Fatal(err)
	}
	defer globex.Close()
	if _, err := globex.Get(ctx, req.JobId, false); err == nil {
		t.Fatal("tenant globex read acme's job")
	}
	if jobs, err := globex.List(ctx, 10, wardv1.JobState_JOB_STATE_UNSPECIFIED); err != nil || len(jobs) != 0 {
		t.Fatalf("tenant globex lists %d jobs (%v)", len(jobs), err)
	}
	denied := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "sys.destroy"} // the default policy forbids it
	dw, err := c.Watch(denied.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Close()
	if _, err := c.Submit(ctx, denied); err != nil {
		t.Fatal(err)
	}
	if last, err := c.Wait(ctx, denied.JobId, dw, nil); err != nil || last.GetState() != wardv1.JobState_JOB_STATE_DENIED ||
		last.GetReason() != string(reason.SafetyDenied) {
		t.Fatalf("a sys.destroy job ended %s/%s (%v)", last.GetState(), last.GetReason(), err)
	}

	// Many jobs over one Follower (one subscription): each Watcher gets
	// its own job's events, the states its log holds; the admin's
	// Follower sees every tenant's, another tenant's none of them.
	f, err := c.Follow()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	af, err := admin.Follow()
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	gf, err := globex.Follow()
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	const many = 24
	ids := make([]string, many)
	errs := make(chan error, many)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	adminWatch, globexWatch := af.Watch(ids[0]), gf.Watch(ids[0])
	defer adminWatch.Close()
	defer globexWatch.Close()
	for _, id := range ids {
		go func() {
			w := f.Watch(id)
			defer w.Close()
			if _, err := c.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: "job.echo", Payload: []byte(id)}); err != nil {
				errs <- err
				return
			}
			var states []wardv1.JobState
			last, err := c.Wait(ctx, id, w, func(ev *wardv1.JobEvent) {
				if ev.GetJobId() != id {
					t.Errorf("job %s's Watcher got job %s's event", id, ev.GetJobId())
				}
				states = append(states, ev.GetState())
			})
			if err == nil && last.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
				err = fmt.Errorf("job %s ended %s", id, last.GetState())
			}
			if err == nil {
				var job *wardv1.JobRecord
				if job, err = c.Get(ctx, id, false); err == nil {
					var logged []wardv1.JobState
					for _, ev := range job.GetEvents() {
						logged = append(logged, ev.GetState())
					}
					if !slices.Equal(states, logged) {
						err = fmt.Errorf("job %s: the Follower showed %v, the log holds %v", id, states, logged)
					}
				}
			}
			errs <- err
		}()
	}
	for range many {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// (Next, not Wait: Wait would ask the scheduler after a quiet while.)
	for {
		ev, err := adminWatch.Next(ctx)
		if err != nil {
			t.Fatalf("the admin's Follower: %v", err)
		}
		if ev.GetJobId() != ids[0] {
			t.Fatalf("the admin's Watcher of %s got job %s's event", ids[0], ev.GetJobId())
		}
		if client.Terminal(ev.GetState()) {
			break
		}
	}
	quiet, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if ev, err := globexWatch.Next(quiet); err == nil {
		t.Fatalf("tenant globex's Follower got acme's event %v", ev)
	}
}
