package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// The run store's conformance tests (jobstore.RunStore), registered in
// Run's table.
//
// The claims are compared with the store's clock (time.Now): a claim meant
// to be held runs until an hour from now, one that ran out ended at t0
// (2025), long past. OrphanRuns takes its now from the caller.

// newRun is a RUNNING run of tenant acme, created at t0, owned by "a" for
// an hour.
func newRun(id string) *jobstore.Run {
	return &jobstore.Run{
		ID: id, Tenant: "acme", Workflow: "deploy",
		Definition: []byte("name: deploy\nsteps: []\n"), Input: []byte(`{"env":"prod"}`),
		State: jobstore.RunRunning, Owner: "a", OwnedUntil: time.Now().Add(time.Hour).Truncate(time.Millisecond),
		CreatedAt: t0,
	}
}

func createRun(t *testing.T, s jobstore.Store, r *jobstore.Run, events ...string) {
	t.Helper()
	if err := s.CreateRun(context.Background(), r, evs(events...)); err != nil {
		t.Fatalf("CreateRun(%s): %v", r.ID, err)
	}
}

func getRun(t *testing.T, s jobstore.Store, id string) (*jobstore.Run, []string) {
	t.Helper()
	r, log, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = string(e)
	}
	return r, out
}

func evs(events ...string) [][]byte {
	out := make([][]byte, len(events))
	for i, e := range events {
		out[i] = []byte(e)
	}
	return out
}

func appendRun(t *testing.T, s jobstore.Store, id, owner string, after int, state string, events ...string) {
	t.Helper()
	if err := s.AppendRun(context.Background(), id, owner, after, evs(events...), state, "why-"+state); err != nil {
		t.Fatalf("AppendRun(%s, %s, after %d): %v", id, owner, after, err)
	}
}

func claim(t *testing.T, s jobstore.Store, id, owner string, until time.Time) bool {
	t.Helper()
	ok, err := s.ClaimRun(context.Background(), id, owner, until)
	if err != nil {
		t.Fatalf("ClaimRun(%s, %s): %v", id, owner, err)
	}
	return ok
}

func runIDs(runs []*jobstore.Run) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}

// testRunCreateGet: a run reads back with every field it was created with,
// its log in order, a copy the caller may change; the defaults (RUNNING,
// CreatedAt now, UpdatedAt CreatedAt) fill what was left zero.
func testRunCreateGet(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	want := newRun("r1")
	want.Reason, want.Deadline, want.UpdatedAt = "", t0.Add(time.Hour), t0.Add(time.Second)
	in := *want
	in.Definition, in.Input = slices.Clone(want.Definition), slices.Clone(want.Input)
	events := evs(`{"seq":1}`, `{"seq":2}`, `{"seq":3}`)
	if err := s.CreateRun(ctx, &in, events); err != nil {
		t.Fatal(err)
	}
	// What the caller passed is not the store's.
	in.Definition[0], in.Input[0], events[0][0] = 'X', 'X', 'X'
	got, log := getRun(t, s, "r1")
	want.Events = 3
	checkRun(t, got, want)
	if !slices.Equal(log, []string{`{"seq":1}`, `{"seq":2}`, `{"seq":3}`}) {
		t.Errorf("log %q", log)
	}
	// What the store returns is a copy.
	got.Definition[0] = 'Y'
	if again, _ := getRun(t, s, "r1"); !bytes.Equal(again.Definition, want.Definition) {
		t.Errorf("a change to a returned run reached the store: %q", again.Definition)
	}

	// Defaults: State RUNNING, CreatedAt now, UpdatedAt CreatedAt; a run
	// with no events has an empty log.
	before := time.Now().Truncate(time.Millisecond)
	createRun(t, s, &jobstore.Run{ID: "r2", Tenant: "acme", Workflow: "w"})
	after := time.Now()
	got, log = getRun(t, s, "r2")
	if got.State != jobstore.RunRunning || len(log) != 0 || got.Events != 0 || got.Owner != "" || !got.OwnedUntil.IsZero() || !got.Deadline.IsZero() {
		t.Errorf("defaults: state %q, log %q, events %d, owner %q until %v, deadline %v", got.State, log, got.Events, got.Owner, got.OwnedUntil, got.Deadline)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(after) || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("defaults: created %v, updated %v, want now (%v..%v) both", got.CreatedAt, got.UpdatedAt, before, after)
	}
	// UpdatedAt left zero is CreatedAt.
	r3 := newRun("r3")
	createRun(t, s, r3)
	if got, _ := getRun(t, s, "r3"); !got.UpdatedAt.Equal(t0) {
		t.Errorf("UpdatedAt %v, want CreatedAt %v", got.UpdatedAt, t0)
	}

	if _, _, err := s.GetRun(ctx, "nope"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("GetRun of a missing run: %v, want ErrNotFound", err)
	}
}

// checkRun compares every field of got with want.
func checkRun(t *testing.T, got, want *jobstore.Run) {
	t.Helper()
	if got.ID != want.ID || got.Tenant != want.Tenant || got.Workflow != want.Workflow ||
		!bytes.Equal(got.Definition, want.Definition) || !bytes.Equal(got.Input, want.Input) ||
		got.State != want.State || got.Reason != want.Reason || got.Owner != want.Owner ||
		!got.OwnedUntil.Equal(want.OwnedUntil) || !got.Deadline.Equal(want.Deadline) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || got.Events != want.Events {
		t.Errorf("run reads back\n%+v\nwant\n%+v", *got, *want)
	}
}

// testRunExists: a second CreateRun of an id gives ErrExists and writes
// nothing.
func testRunExists(t *testing.T, s jobstore.Store) {
	createRun(t, s, newRun("r1"), "e1")
	dup := newRun("r1")
	dup.Tenant, dup.Workflow, dup.Owner = "other", "another", "b"
	err := s.CreateRun(context.Background(), dup, evs("x1", "x2"))
	if !errors.Is(err, jobstore.ErrExists) {
		t.Fatalf("CreateRun of an existing id: %v, want ErrExists", err)
	}
	got, log := getRun(t, s, "r1")
	if got.Tenant != "acme" || got.Workflow != "deploy" || got.Owner != "a" || got.Events != 1 || !slices.Equal(log, []string{"e1"}) {
		t.Errorf("the refused create wrote: %+v, log %q", *got, log)
	}
	if runs, err := s.ListRuns(context.Background(), "other", 10); err != nil || len(runs) != 0 {
		t.Errorf("the refused create indexed the run for its tenant: %v %v", runIDs(runs), err)
	}
}

// testRunAppend: the owner appends after the events the log holds, and
// sets state and reason; another replica, a wrong count, an ended run and
// a missing one are refused, and write nothing.
func testRunAppend(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	createRun(t, s, newRun("r1"), "e1")
	before := time.Now().Truncate(time.Millisecond)
	appendRun(t, s, "r1", "a", 1, jobstore.RunRunning, "e2", "e3")
	got, log := getRun(t, s, "r1")
	if got.State != jobstore.RunRunning || got.Reason != "why-RUNNING" || got.Events != 3 || !slices.Equal(log, []string{"e1", "e2", "e3"}) {
		t.Errorf("after an append: %s %q, %d events, log %q", got.State, got.Reason, got.Events, log)
	}
	if got.UpdatedAt.Before(before) || !got.CreatedAt.Equal(t0) {
		t.Errorf("after an append: updated %v (want >= %v), created %v", got.UpdatedAt, before, got.CreatedAt)
	}

	refused := func(what string, owner string, after int, want error) {
		t.Helper()
		err := s.AppendRun(ctx, "r1", owner, after, evs("bad"), "FAILED", "bad")
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
		got, log := getRun(t, s, "r1")
		if got.State != jobstore.RunRunning || got.Events != 3 || len(log) != 3 {
			t.Errorf("%s wrote: %s, %d events, log %q", what, got.State, got.Events, log)
		}
	}
	refused("another replica", "b", 3, jobstore.ErrNotOwner)
	refused("no owner", "", 3, jobstore.ErrNotOwner)
	refused("an append after too few", "a", 2, jobstore.ErrLogMoved)
	refused("an append after too many", "a", 4, jobstore.ErrLogMoved)
	refused("an append after none", "a", 0, jobstore.ErrLogMoved)

	// An append with no events still sets the state and reason.
	appendRun(t, s, "r1", "a", 3, jobstore.RunRunning)
	if got, _ := getRun(t, s, "r1"); got.Events != 3 || got.Reason != "why-RUNNING" {
		t.Errorf("after an empty append: %d events, %q", got.Events, got.Reason)
	}

	// The append that ends the run, then none.
	appendRun(t, s, "r1", "a", 3, "SUCCEEDED", "e4")
	got, log = getRun(t, s, "r1")
	if got.State != "SUCCEEDED" || got.Reason != "why-SUCCEEDED" || got.Events != 4 || !slices.Equal(log, []string{"e1", "e2", "e3", "e4"}) {
		t.Errorf("the ended run: %s %q, %d events, log %q", got.State, got.Reason, got.Events, log)
	}
	for _, state := range []string{jobstore.RunRunning, "FAILED"} {
		if err := s.AppendRun(ctx, "r1", "a", 4, evs("late"), state, ""); !errors.Is(err, jobstore.ErrRunEnded) {
			t.Errorf("append (%s) to an ended run: %v, want ErrRunEnded", state, err)
		}
	}
	if got, log := getRun(t, s, "r1"); got.State != "SUCCEEDED" || len(log) != 4 {
		t.Errorf("an append to the ended run wrote: %s, log %q", got.State, log)
	}

	if err := s.AppendRun(ctx, "nope", "a", 0, evs("e"), jobstore.RunRunning, ""); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("append to a missing run: %v, want ErrNotFound", err)
	}
	if _, _, err := s.GetRun(ctx, "nope"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("the append to a missing run made it: %v", err)
	}
}

// testRunAppendClaim: the claim is the owner's until another replica takes
// it: a slow owner whose claim ran out, and nobody took the run over,
// still appends; once another claimed it, the first is refused.
func testRunAppendClaim(t *testing.T, s jobstore.Store) {
	r := newRun("r1")
	r.OwnedUntil = t0 // ran out long ago
	createRun(t, s, r, "e1")
	appendRun(t, s, "r1", "a", 1, jobstore.RunRunning, "e2")
	if !claim(t, s, "r1", "b", time.Now().Add(time.Hour)) {
		t.Fatal("b could not claim a run whose claim ran out")
	}
	if err := s.AppendRun(context.Background(), "r1", "a", 2, evs("e3"), jobstore.RunRunning, ""); !errors.Is(err, jobstore.ErrNotOwner) {
		t.Errorf("the replaced owner's append: %v, want ErrNotOwner", err)
	}
	appendRun(t, s, "r1", "b", 2, "FAILED", "e3")
	if got, log := getRun(t, s, "r1"); got.State != "FAILED" || got.Owner != "b" || !slices.Equal(log, []string{"e1", "e2", "e3"}) {
		t.Errorf("after b's append: %s, owner %q, log %q", got.State, got.Owner, log)
	}
}

// testRunClaim: a run nobody holds, or whose claim ran out, is claimed;
// one held by another is not; its holder extends it; an ended run is not
// claimed; a missing one is ErrNotFound.
func testRunClaim(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	hour := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	free := newRun("free")
	free.Owner, free.OwnedUntil = "", time.Time{}
	createRun(t, s, free)
	if !claim(t, s, "free", "b", hour) {
		t.Error("a run nobody held was not claimed")
	}
	if got, _ := getRun(t, s, "free"); got.Owner != "b" || !got.OwnedUntil.Equal(hour) {
		t.Errorf("the claimed run: owner %q until %v, want b until %v", got.Owner, got.OwnedUntil, hour)
	}

	createRun(t, s, newRun("held")) // a's for an hour
	if claim(t, s, "held", "b", hour.Add(time.Hour)) {
		t.Error("b claimed a run a holds")
	}
	if got, _ := getRun(t, s, "held"); got.Owner != "a" {
		t.Errorf("the refused claim changed the owner to %q", got.Owner)
	}
	// The holder extends its claim.
	later := hour.Add(2 * time.Hour)
	if !claim(t, s, "held", "a", later) {
		t.Error("the holder could not extend its claim")
	}
	if got, _ := getRun(t, s, "held"); got.Owner != "a" || !got.OwnedUntil.Equal(later) {
		t.Errorf("the extended claim: owner %q until %v, want a until %v", got.Owner, got.OwnedUntil, later)
	}

	expired := newRun("expired")
	expired.OwnedUntil = t0
	createRun(t, s, expired)
	if !claim(t, s, "expired", "b", hour) {
		t.Error("a run whose claim ran out was not claimed")
	}
	if claim(t, s, "expired", "a", hour) {
		t.Error("the former owner took the run back from its new one")
	}

	ended := newRun("ended")
	createRun(t, s, ended)
	appendRun(t, s, "ended", "a", 0, "CANCELLED", "end")
	for _, owner := range []string{"a", "b"} {
		if claim(t, s, "ended", owner, hour) {
			t.Errorf("%s claimed an ended run", owner)
		}
	}
	if got, _ := getRun(t, s, "ended"); got.Owner != "a" || got.State != "CANCELLED" {
		t.Errorf("the refused claim of an ended run wrote: owner %q, %s", got.Owner, got.State)
	}

	if ok, err := s.ClaimRun(ctx, "nope", "a", hour); ok || !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("ClaimRun of a missing run: %v %v, want false, ErrNotFound", ok, err)
	}
}

// testListRuns: a tenant's runs, or every tenant's, newest first (by
// CreatedAt, not by when they were stored), up to the limit, without their
// logs.
func testListRuns(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	// Stored out of creation order.
	for _, c := range []struct {
		id, tenant string
		min        int
	}{{"a2", "acme", 2}, {"o1", "other", 1}, {"a0", "acme", 0}, {"a3", "acme", 3}, {"o4", "other", 4}} {
		r := newRun(c.id)
		r.Tenant, r.CreatedAt = c.tenant, t0.Add(time.Duration(c.min)*time.Minute)
		createRun(t, s, r, "e1", "e2")
	}
	list := func(tenant string, limit int) []string {
		t.Helper()
		runs, err := s.ListRuns(ctx, tenant, limit)
		if err != nil {
			t.Fatalf("ListRuns(%q, %d): %v", tenant, limit, err)
		}
		for _, r := range runs {
			if tenant != "" && r.Tenant != tenant {
				t.Errorf("ListRuns(%q) gave %s of %s", tenant, r.ID, r.Tenant)
			}
			if r.Events != 2 || r.Workflow != "deploy" || r.State != jobstore.RunRunning {
				t.Errorf("ListRuns gave %+v", *r)
			}
		}
		return runIDs(runs)
	}
	for _, c := range []struct {
		tenant string
		limit  int
		want   []string
	}{
		{"acme", 10, []string{"a3", "a2", "a0"}},
		{"acme", 2, []string{"a3", "a2"}},
		{"other", 10, []string{"o4", "o1"}},
		{"", 10, []string{"o4", "a3", "a2", "o1", "a0"}},
		{"", 3, []string{"o4", "a3", "a2"}},
		{"", 0, nil},
		{"acme", -1, nil},
		{"nobody", 10, nil},
	} {
		if got := list(c.tenant, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("ListRuns(%q, %d) = %v, want %v", c.tenant, c.limit, got, c.want)
		}
	}
	// An ended run is listed too, as it is now.
	appendRun(t, s, "a3", "a", 2, "SUCCEEDED", "e3")
	runs, err := s.ListRuns(ctx, "acme", 1)
	if err != nil || len(runs) != 1 || runs[0].ID != "a3" || runs[0].State != "SUCCEEDED" || runs[0].Events != 3 {
		t.Errorf("the ended run in the list: %v %v", runs, err)
	}
}

// testOrphanRuns: the RUNNING runs whose claim ran out before now, the
// longest orphaned first, up to the limit; not the held ones, nor the
// ended ones.
func testOrphanRuns(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	mk := func(id, owner string, until time.Time) {
		r := newRun(id)
		r.Owner, r.OwnedUntil = owner, until
		createRun(t, s, r, "e1")
	}
	mk("b", "x", t0.Add(2*time.Minute))
	mk("a", "x", t0.Add(time.Minute))
	mk("none", "", time.Time{}) // never owned
	mk("held", "x", far)
	mk("ended", "x", t0)
	appendRun(t, s, "ended", "x", 1, "FAILED", "e2")
	ended := &jobstore.Run{ID: "born-ended", Tenant: "acme", State: "CANCELLED", Owner: "x", OwnedUntil: t0, CreatedAt: t0}
	createRun(t, s, ended)

	orphans := func(now time.Time, limit int) []string {
		t.Helper()
		ids, err := s.OrphanRuns(ctx, now, limit)
		if err != nil {
			t.Fatalf("OrphanRuns: %v", err)
		}
		return ids
	}
	now := t0.Add(5 * time.Minute)
	if got, want := orphans(now, 10), []string{"none", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns = %v, want %v", got, want)
	}
	if got, want := orphans(now, 2), []string{"none", "a"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns, limit 2 = %v, want %v", got, want)
	}
	for _, limit := range []int{0, -1} {
		if got := orphans(now, limit); len(got) != 0 {
			t.Errorf("OrphanRuns, limit %d = %v", limit, got)
		}
	}
	// A claim that runs out at now has not run out before it.
	if got, want := orphans(t0.Add(time.Minute), 10), []string{"none"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns at a's owned-until = %v, want %v", got, want)
	}
	if got, want := orphans(t0.Add(time.Minute+time.Millisecond), 10), []string{"none", "a"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns a millisecond later = %v, want %v", got, want)
	}
	// Claimed, a run is no orphan; ended, neither.
	if !claim(t, s, "none", "y", time.Now().Add(time.Hour)) {
		t.Fatal("the orphan was not claimed")
	}
	appendRun(t, s, "a", "x", 1, "TIMEOUT", "e2")
	if got, want := orphans(now, 10), []string{"b"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns after a claim and an end = %v, want %v", got, want)
	}
	if got, want := orphans(far.Add(time.Hour), 10), []string{"b", "held"}; !slices.Equal(got, want) {
		t.Errorf("OrphanRuns once every claim ran out = %v, want %v", got, want)
	}
}

// testRunRetention: with a retention, an ended run goes after it with its
// log (and out of the lists), while a running one stays; its id may be
// used again, by another tenant, whose list alone shows it. Redis expires
// keys on its own clock, so this test runs on real time.
func testRunRetention(t *testing.T, s jobstore.Store) {
	r, ok := s.(interface{ SetRetention(time.Duration) })
	if !ok {
		t.Fatal("the store has no SetRetention")
	}
	const keep = 300 * time.Millisecond
	r.SetRetention(keep)
	ctx := context.Background()
	mk := func(id string) {
		run := newRun(id)
		run.CreatedAt = time.Time{} // now
		createRun(t, s, run, "e1")
	}
	mk("done")
	mk("running")
	born := &jobstore.Run{ID: "born-ended", Tenant: "acme", State: "FAILED", Reason: "refused"}
	createRun(t, s, born, "e1")
	appendRun(t, s, "done", "a", 1, "SUCCEEDED", "e2")
	// Nothing goes before the retention.
	if got, log := getRun(t, s, "done"); got.State != "SUCCEEDED" || len(log) != 2 {
		t.Fatalf("the ended run before the retention: %s, log %q", got.State, log)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range []string{"done", "born-ended"} {
		for {
			_, _ = s.Sweep(ctx, time.Now())
			_, log, err := s.GetRun(ctx, id)
			if errors.Is(err, jobstore.ErrNotFound) {
				if len(log) != 0 {
					t.Errorf("%s: its log outlived it: %q", id, log)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the ended run %s is still there after the retention", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := s.AppendRun(ctx, "done", "a", 2, evs("e3"), "FAILED", ""); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("append to the expired run: %v, want ErrNotFound", err)
	}
	if ok, err := s.ClaimRun(ctx, "done", "a", time.Now().Add(time.Hour)); ok || !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("claim of the expired run: %v %v, want ErrNotFound", ok, err)
	}
	for _, tenant := range []string{"acme", ""} {
		runs, err := s.ListRuns(ctx, tenant, 10)
		if err != nil || !slices.Equal(runIDs(runs), []string{"running"}) {
			t.Errorf("ListRuns(%q) after the retention: %v %v, want [running]", tenant, runIDs(runs), err)
		}
	}
	if got, log := getRun(t, s, "running"); got.State != jobstore.RunRunning || len(log) != 1 {
		t.Errorf("the running run: %s, log %q", got.State, log)
	}

	// The id of an expired run may be used again, by another tenant.
	again := newRun("done")
	again.Tenant, again.CreatedAt = "other", time.Time{}
	createRun(t, s, again, "x1")
	if got, log := getRun(t, s, "done"); got.Tenant != "other" || !slices.Equal(log, []string{"x1"}) {
		t.Errorf("the run made again: tenant %q, log %q", got.Tenant, log)
	}
	if runs, err := s.ListRuns(ctx, "acme", 10); err != nil || !slices.Equal(runIDs(runs), []string{"running"}) {
		t.Errorf("ListRuns(acme) lists the other tenant's run of a former id: %v %v", runIDs(runs), err)
	}
	if runs, err := s.ListRuns(ctx, "other", 10); err != nil || !slices.Equal(runIDs(runs), []string{"done"}) {
		t.Errorf("ListRuns(other) = %v %v, want [done]", runIDs(runs), err)
	}
	if runs, err := s.ListRuns(ctx, "", 10); err != nil || len(runs) != 2 || runs[1].ID != "running" {
		t.Errorf("ListRuns() = %v %v, want [done running]", runIDs(runs), err)
	}
}

// testRaceRunAppend: replicas appending after the same count, even the
// same owner twice (a retry), land one append: the others get
// ErrLogMoved.
func testRaceRunAppend(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	createRun(t, s, newRun("r1"), "e1")
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.AppendRun(ctx, "r1", "a", 1, evs(fmt.Sprintf("e2-%d", i), fmt.Sprintf("e3-%d", i)), jobstore.RunRunning, "")
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("appends %d and %d both landed", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, jobstore.ErrLogMoved):
			t.Errorf("append %d: %v, want ErrLogMoved", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no append landed")
	}
	got, log := getRun(t, s, "r1")
	want := []string{"e1", fmt.Sprintf("e2-%d", won), fmt.Sprintf("e3-%d", won)}
	if got.Events != 3 || !slices.Equal(log, want) {
		t.Errorf("log %q (%d events), want %q", log, got.Events, want)
	}
}

// testRaceRunClaim: replicas claiming an orphan together: one gets it.
func testRaceRunClaim(t *testing.T, s jobstore.Store) {
	r := newRun("r1")
	r.OwnedUntil = t0
	createRun(t, s, r)
	const n = 16
	won := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	until := time.Now().Add(time.Hour)
	for i := range n {
		wg.Go(func() {
			won[i], errs[i] = s.ClaimRun(context.Background(), "r1", fmt.Sprintf("replica-%d", i), until)
		})
	}
	wg.Wait()
	winner := ""
	for i := range n {
		if errs[i] != nil {
			t.Errorf("claim %d: %v", i, errs[i])
		}
		if won[i] {
			if winner != "" {
				t.Errorf("%s and replica-%d both claimed the run", winner, i)
			}
			winner = fmt.Sprintf("replica-%d", i)
		}
	}
	if got, _ := getRun(t, s, "r1"); winner == "" || got.Owner != winner {
		t.Errorf("winner %q, owner %q", winner, got.Owner)
	}
}

// testRunIDs: any id is a run of its own, even one that spells another
// key of a store (Redis's indexes, another run's log): a client may choose
// it.
func testRunIDs(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	ids := []string{"r1", "index", "active", "ended", "tenant:acme", "tenant:other", "events:r1", "log:r1", "id:r1", "id:log:r1", ""}
	for i, id := range ids[:len(ids)-1] {
		r := newRun(id)
		r.CreatedAt = t0.Add(time.Duration(i) * time.Minute)
		createRun(t, s, r, "first of "+id)
		appendRun(t, s, id, "a", 1, jobstore.RunRunning, "second of "+id)
	}
	for _, id := range ids[:len(ids)-1] {
		if got, log := getRun(t, s, id); got.ID != id || !slices.Equal(log, []string{"first of " + id, "second of " + id}) {
			t.Errorf("run %q reads back as %q, log %q", id, got.ID, log)
		}
	}
	if err := s.CreateRun(ctx, &jobstore.Run{Tenant: "acme"}, nil); err == nil {
		t.Error("a run with no id was stored")
	}
	for _, tenant := range []string{"acme", ""} {
		runs, err := s.ListRuns(ctx, tenant, 100)
		want := slices.Clone(ids[:len(ids)-1])
		slices.Reverse(want)
		if err != nil || !slices.Equal(runIDs(runs), want) {
			t.Errorf("ListRuns(%q) = %q %v, want %q", tenant, runIDs(runs), err, want)
		}
	}
	// Another tenant's first runs, after those.
	o := newRun("o1")
	o.Tenant = "other"
	createRun(t, s, o)
	if runs, err := s.ListRuns(ctx, "other", 10); err != nil || !slices.Equal(runIDs(runs), []string{"o1"}) {
		t.Errorf("ListRuns(other) = %q %v", runIDs(runs), err)
	}
	orphans, err := s.OrphanRuns(ctx, time.Now().Add(2*time.Hour), 100)
	if err != nil || len(orphans) != len(ids) {
		t.Errorf("OrphanRuns = %q %v, want the %d runs", orphans, err, len(ids))
	}
}
