package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// listTests are the cases of Store.List (and idempotency conflicts).
var listTests = []struct {
	name string
	fn   func(t *testing.T, s jobstore.Store)
}{
	{"ListPaging", testListPaging},
	{"ListFilters", testListFilters},
	{"ListStateOrder", testListStateOrder},
	{"ListTenantIsolation", testListTenantIsolation},
	{"ListTimeRange", testListTimeRange},
	{"ListBadCursor", testListBadCursor},
	{"ListStable", testListStable},
	{"ListScanBudget", testListScanBudget},
	{"ListRetention", testListRetention},
	{"IdempotencyConflict", testIdempotencyConflict},
}

// list is one call of List.
func list(t *testing.T, s jobstore.Store, q jobstore.ListQuery) jobstore.ListPage {
	t.Helper()
	p, err := s.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return p
}

// listAll pages q to its end and returns every job, checking that no page
// is over its limit and that each page's After(last) is its Next.
func listAll(t *testing.T, s jobstore.Store, q jobstore.ListQuery) []*jobstore.Job {
	t.Helper()
	limit := cmp.Or(q.Limit, jobstore.DefaultListLimit)
	var out []*jobstore.Job
	for calls := 0; ; calls++ {
		if calls > 10000 {
			t.Fatalf("List(%+v) pages without end", q)
		}
		p := list(t, s, q)
		if len(p.Jobs) > limit {
			t.Fatalf("a page of %d jobs, over its limit %d", len(p.Jobs), limit)
		}
		if len(p.Jobs) > 0 && p.After(len(p.Jobs)-1) != p.Next {
			t.Fatalf("After(last) = %q, Next = %q", p.After(len(p.Jobs)-1), p.Next)
		}
		out = append(out, p.Jobs...)
		if p.Next == "" {
			return out
		}
		q.Cursor = p.Next
	}
}

// newestFirst sorts jobs as a creation listing returns them.
func newestFirst(jobs []*jobstore.Job) {
	slices.SortFunc(jobs, func(a, b *jobstore.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

// checkList checks that got are exactly want, in order, with no duplicate.
func checkList(t *testing.T, what string, got []*jobstore.Job, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, j := range got {
		if seen[j.ID] {
			t.Fatalf("%s: %s listed twice", what, j.ID)
		}
		seen[j.ID] = true
	}
	if g := ids(got); !slices.Equal(g, want) {
		if len(g) > 20 || len(want) > 20 {
			t.Fatalf("%s: %d jobs, want %d (first %v, want first %v)", what, len(g), len(want), g[:min(5, len(g))], want[:min(5, len(want))])
		}
		t.Fatalf("%s = %v, want %v", what, g, want)
	}
}

func mkJob(t *testing.T, s jobstore.Store, id, tenant, topic string, at time.Time) *jobstore.Job {
	t.Helper()
	j := &jobstore.Job{ID: id, Tenant: tenant, Topic: topic, CreatedAt: at}
	create(t, s, j)
	return get(t, s, id)
}

// testListPaging: more than MaxListLimit jobs, several created in the same
// millisecond, are all listed by paging, newest first (ties by the
// greater id), with no duplicate and no gap, at every page size.
func testListPaging(t *testing.T, s jobstore.Store) {
	const n = 1500
	var want []*jobstore.Job
	for i := range n {
		// Three jobs a millisecond, made out of order.
		k := (i * 7) % n
		want = append(want, mkJob(t, s, fmt.Sprintf("p%04d", k), "acme", "topic.a", t0.Add(time.Duration(k/3)*time.Millisecond)))
	}
	newestFirst(want)
	for _, limit := range []int{0, 1, 7, 333, 1000, 5000} {
		got := listAll(t, s, jobstore.ListQuery{Limit: limit})
		checkList(t, fmt.Sprintf("every job, pages of %d", limit), got, ids(want))
		if limit == 1000 {
			if p := list(t, s, jobstore.ListQuery{Limit: 5000}); len(p.Jobs) != jobstore.MaxListLimit || p.Next == "" {
				t.Errorf("Limit 5000: a page of %d, next %q; want %d and a cursor", len(p.Jobs), p.Next, jobstore.MaxListLimit)
			}
		}
	}
	if p := list(t, s, jobstore.ListQuery{}); len(p.Jobs) != jobstore.DefaultListLimit {
		t.Errorf("the default page holds %d jobs, want %d", len(p.Jobs), jobstore.DefaultListLimit)
	}
	// The last page says there is no more.
	if p := list(t, s, jobstore.ListQuery{Limit: n}); p.Next == "" {
		t.Error("a first page of 1000 of 1500 jobs has no cursor")
	}
	checkList(t, "the tenant's", listAll(t, s, jobstore.ListQuery{Tenant: "acme", Limit: 400}), ids(want))
	checkList(t, "in PENDING", listAll(t, s, jobstore.ListQuery{State: jobstore.Pending, Limit: 1000}), ids(want))
	if _, err := s.List(context.Background(), jobstore.ListQuery{Limit: -1}); err == nil {
		t.Error("List accepted a negative limit")
	}
	// Recent is the newest MaxListLimit.
	if got := recent(t, s, 2000); len(got) != jobstore.MaxListLimit || got[0].ID != want[0].ID {
		t.Errorf("Recent(2000): %d jobs", len(got))
	}
	if _, err := s.List(context.Background(), jobstore.ListQuery{State: "NOPE"}); err == nil {
		t.Error("List accepted an unknown state")
	}
}

// testListFilters: each filter and their combinations give exactly the
// jobs that pass them, newest first.
func testListFilters(t *testing.T, s jobstore.Store) {
	var all []*jobstore.Job
	tenants, topics := []string{"acme", "beta"}, []string{"topic.a", "topic.b", "topic.c"}
	for i := range 120 {
		j := mkJob(t, s, fmt.Sprintf("f%03d", i), tenants[i%2], topics[i%3], t0.Add(time.Duration(i)*time.Second))
		all = append(all, j)
	}
	// States: i%5 == 1 SCHEDULED, 2 RUNNING, 3 FAILED, 4 SUCCEEDED.
	states := []jobstore.State{jobstore.Pending, jobstore.Scheduled, jobstore.Running, jobstore.Failed, jobstore.Succeeded}
	for i, j := range all {
		if st := states[i%5]; st != jobstore.Pending {
			tr := jobstore.Transition{To: st, At: t0.Add(time.Hour + time.Duration(i)*time.Second)}
			if st != jobstore.Scheduled && st != jobstore.Failed {
				tr.Via = jobstore.Scheduled
			}
			if st != jobstore.Failed {
				tr.WorkerID = []string{"h1", "h2", "h3"}[i%3]
			}
			all[i] = move(t, s, j.ID, tr)
		}
	}
	newestFirst(all)
	filter := func(q jobstore.ListQuery) []string {
		var out []string
		for _, j := range all {
			if (q.Tenant == "" || j.Tenant == q.Tenant) && (q.State == "" || j.State == q.State) && (q.Topic == "" || j.Topic == q.Topic) &&
				(q.Worker == "" || j.WorkerID == q.Worker) &&
				(q.Since.IsZero() || !j.CreatedAt.Before(q.Since)) && (q.Until.IsZero() || j.CreatedAt.Before(q.Until)) {
				out = append(out, j.ID)
			}
		}
		return out
	}
	since, until := t0.Add(30*time.Second), t0.Add(90*time.Second)
	for _, tenant := range append([]string{""}, tenants...) {
		for _, st := range append([]jobstore.State{""}, states...) {
			for _, topic := range append([]string{""}, topics...) {
				for _, r := range [][2]time.Time{{}, {since, time.Time{}}, {time.Time{}, until}, {since, until}} {
					q := jobstore.ListQuery{Tenant: tenant, State: st, Topic: topic, Since: r[0], Until: r[1], Limit: 7}
					got := listAll(t, s, q)
					want := filter(q)
					// A state is listed by when the job entered it (here in
					// creation order, one second apart).
					checkList(t, fmt.Sprintf("%+v", q), got, want)
				}
			}
		}
	}
	// A host's jobs, alone and with the other filters.
	for _, q := range []jobstore.ListQuery{
		{Worker: "h1"}, {Worker: "h2", State: jobstore.Running}, {Worker: "h3", Tenant: "beta"},
		{Worker: "h1", Topic: "topic.a", Since: since}, {Worker: "nobody"},
	} {
		q.Limit = 5
		want := filter(q)
		if q.Worker != "nobody" && len(want) == 0 {
			t.Fatalf("%+v: the suite made no such job", q)
		}
		checkList(t, fmt.Sprintf("%+v", q), listAll(t, s, q), want)
	}
}

// testListStateOrder: a state's listing is ordered by when the job entered
// the state, not by its creation; its cursor is not a creation listing's.
func testListStateOrder(t *testing.T, s jobstore.Store) {
	for i, id := range []string{"s1", "s2", "s3", "s4"} {
		mkJob(t, s, id, "acme", "topic.a", t0.Add(time.Duration(i)*time.Second))
	}
	for i, id := range []string{"s3", "s1", "s4", "s2"} {
		move(t, s, id, jobstore.Transition{To: jobstore.Failed, At: t0.Add(time.Hour + time.Duration(i)*time.Second)})
	}
	checkList(t, "FAILED", listAll(t, s, jobstore.ListQuery{State: jobstore.Failed, Limit: 1}), []string{"s2", "s4", "s1", "s3"})
	checkList(t, "FAILED of acme", listAll(t, s, jobstore.ListQuery{State: jobstore.Failed, Tenant: "acme", Limit: 3}), []string{"s2", "s4", "s1", "s3"})
	checkList(t, "every job", listAll(t, s, jobstore.ListQuery{Limit: 1}), []string{"s4", "s3", "s2", "s1"})
	// Created from s2 on: a filter; entered before since ends the listing.
	checkList(t, "FAILED since s2", listAll(t, s, jobstore.ListQuery{State: jobstore.Failed, Since: t0.Add(time.Second), Limit: 1}), []string{"s2", "s4", "s3"})
	// A job that leaves the state between pages does not stop the paging.
	p := list(t, s, jobstore.ListQuery{State: jobstore.Failed, Limit: 2})
	checkList(t, "first page", p.Jobs, []string{"s2", "s4"})
	c := p.Next
	// s4 is where the cursor points: it cannot leave a terminal state,
	// so take a live state instead.
	for i, id := range []string{"r1", "r2", "r3"} {
		mkJob(t, s, id, "acme", "topic.a", t0)
		move(t, s, id, jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, At: t0.Add(time.Duration(i) * time.Second)})
	}
	p = list(t, s, jobstore.ListQuery{State: jobstore.Running, Limit: 1})
	checkList(t, "RUNNING", p.Jobs, []string{"r3"})
	move(t, s, "r3", jobstore.Transition{To: jobstore.Succeeded, At: t0.Add(time.Hour)})
	checkList(t, "RUNNING after r3 ended", listAll(t, s, jobstore.ListQuery{State: jobstore.Running, Limit: 1, Cursor: p.Next}), []string{"r2", "r1"})
	// Likewise among jobs that entered the state in the same millisecond.
	for _, id := range []string{"d1", "d2", "d3", "d4", "d5"} {
		mkJob(t, s, id, "acme", "topic.a", t0)
		move(t, s, id, jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled, At: t0.Add(5 * time.Hour)})
	}
	p = list(t, s, jobstore.ListQuery{State: jobstore.Dispatched, Limit: 2})
	checkList(t, "DISPATCHED", p.Jobs, []string{"d5", "d4"})
	move(t, s, "d4", jobstore.Transition{To: jobstore.Failed})
	move(t, s, "d2", jobstore.Transition{To: jobstore.Failed})
	checkList(t, "DISPATCHED after d4 and d2 ended", listAll(t, s, jobstore.ListQuery{State: jobstore.Dispatched, Limit: 1, Cursor: p.Next}), []string{"d3", "d1"})
	if _, err := s.List(context.Background(), jobstore.ListQuery{Cursor: c}); !errors.Is(err, jobstore.ErrBadCursor) {
		t.Errorf("a FAILED cursor in a creation listing: %v, want ErrBadCursor", err)
	}
	checkList(t, "FAILED, second page", list(t, s, jobstore.ListQuery{State: jobstore.Failed, Limit: 2, Cursor: c}).Jobs, []string{"s1", "s3"})
}

// testListTenantIsolation: a tenant's listing holds its jobs only, with
// every filter, and an empty tenant lists every tenant's.
func testListTenantIsolation(t *testing.T, s jobstore.Store) {
	mkJob(t, s, "a1", "acme", "topic.a", t0)
	mkJob(t, s, "b1", "beta", "topic.a", t0.Add(time.Second))
	mkJob(t, s, "a2", "acme", "topic.a", t0.Add(2*time.Second))
	mkJob(t, s, "n1", "", "topic.a", t0.Add(3*time.Second))
	mkJob(t, s, "ab", "acme:all", "topic.a", t0.Add(4*time.Second)) // a tenant whose name looks like a key
	move(t, s, "b1", jobstore.Transition{To: jobstore.Failed})
	move(t, s, "a1", jobstore.Transition{To: jobstore.Failed})
	checkList(t, "acme", listAll(t, s, jobstore.ListQuery{Tenant: "acme"}), []string{"a2", "a1"})
	checkList(t, "beta", listAll(t, s, jobstore.ListQuery{Tenant: "beta"}), []string{"b1"})
	checkList(t, "acme:all", listAll(t, s, jobstore.ListQuery{Tenant: "acme:all"}), []string{"ab"})
	checkList(t, "nobody", listAll(t, s, jobstore.ListQuery{Tenant: "nobody"}), nil)
	checkList(t, "acme FAILED", listAll(t, s, jobstore.ListQuery{Tenant: "acme", State: jobstore.Failed}), []string{"a1"})
	checkList(t, "beta topic", listAll(t, s, jobstore.ListQuery{Tenant: "beta", Topic: "topic.a"}), []string{"b1"})
	checkList(t, "every tenant", listAll(t, s, jobstore.ListQuery{}), []string{"ab", "n1", "a2", "b1", "a1"})
}

// testListTimeRange: Since is inclusive, Until exclusive, on creation.
func testListTimeRange(t *testing.T, s jobstore.Store) {
	for i := range 10 {
		mkJob(t, s, fmt.Sprintf("t%d", i), "acme", "topic.a", t0.Add(time.Duration(i)*time.Minute))
	}
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	checkList(t, "[2, 5)", listAll(t, s, jobstore.ListQuery{Since: at(2), Until: at(5), Limit: 2}), []string{"t4", "t3", "t2"})
	checkList(t, "[8, ∞)", listAll(t, s, jobstore.ListQuery{Since: at(8)}), []string{"t9", "t8"})
	checkList(t, "(-∞, 2)", listAll(t, s, jobstore.ListQuery{Until: at(2), Tenant: "acme"}), []string{"t1", "t0"})
	checkList(t, "after the last", listAll(t, s, jobstore.ListQuery{Since: at(10)}), nil)
	checkList(t, "within a millisecond", listAll(t, s, jobstore.ListQuery{Since: at(3), Until: at(3).Add(time.Millisecond)}), []string{"t3"})
	if _, err := s.List(context.Background(), jobstore.ListQuery{Since: at(5), Until: at(5)}); err == nil {
		t.Error("List accepted an empty range")
	}
}

// testListBadCursor: a cursor List did not make is ErrBadCursor.
func testListBadCursor(t *testing.T, s jobstore.Store) {
	mkJob(t, s, "j1", "acme", "topic.a", t0)
	mkJob(t, s, "j2", "acme", "topic.a", t0)
	good := list(t, s, jobstore.ListQuery{Limit: 1}).Next
	if good == "" {
		t.Fatal("no cursor")
	}
	for _, c := range []string{"x", "!!!", "djF8Y3wxMjN8", "djF8c3xub3BlfGE", "djJ8Y3wxMjN8YQ", "djF8Y3xhYmN8YQ", good + "="} {
		if _, err := s.List(context.Background(), jobstore.ListQuery{Cursor: c}); !errors.Is(err, jobstore.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
	if _, err := s.List(context.Background(), jobstore.ListQuery{Cursor: good, State: jobstore.Failed}); !errors.Is(err, jobstore.ErrBadCursor) {
		t.Errorf("a creation cursor in a state listing: %v, want ErrBadCursor", err)
	}
	// A good cursor serves another filter of the same order.
	checkList(t, "the cursor with a tenant", list(t, s, jobstore.ListQuery{Cursor: good, Tenant: "acme"}).Jobs, []string{"j1"})
}

// testListStable: jobs created between pages, newer and older than the
// cursor's place, and jobs that end, change nothing of the pages to come.
func testListStable(t *testing.T, s jobstore.Store) {
	var want []string
	for i := range 30 {
		j := mkJob(t, s, fmt.Sprintf("o%02d", i), "acme", "topic.a", t0.Add(time.Duration(i)*time.Second))
		want = append([]string{j.ID}, want...)
	}
	var got []*jobstore.Job
	q := jobstore.ListQuery{Limit: 4}
	for i := 0; ; i++ {
		p := list(t, s, q)
		got = append(got, p.Jobs...)
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
		// New jobs arrive (newer than every listed one), and listed and
		// unlisted jobs end.
		mkJob(t, s, fmt.Sprintf("n%02d", i), "acme", "topic.a", t0.Add(time.Hour+time.Duration(i)*time.Second))
		move(t, s, fmt.Sprintf("o%02d", 29-i), jobstore.Transition{To: jobstore.Cancelled})
	}
	checkList(t, "paged while jobs arrive", got, want)
}

// testListScanBudget: a filter no index serves examines ListScanBudget
// entries a call at most; paging on finds what matches.
func testListScanBudget(t *testing.T, s jobstore.Store) {
	n := 2*jobstore.ListScanBudget + 500
	mkJob(t, s, "needle-old", "acme", "topic.rare", t0)
	for i := range n {
		mkJob(t, s, fmt.Sprintf("hay%05d", i), "acme", "topic.a", t0.Add(time.Duration(i+1)*time.Millisecond))
	}
	mkJob(t, s, "needle-new", "acme", "topic.rare", t0.Add(time.Hour))
	q := jobstore.ListQuery{Topic: "topic.rare", Limit: 10}
	p := list(t, s, q)
	checkList(t, "first call", p.Jobs, []string{"needle-new"})
	if p.Next == "" {
		t.Fatal("the first call, which could not examine every job, has no cursor")
	}
	q.Cursor = p.Next
	p = list(t, s, q)
	if len(p.Jobs) != 0 || p.Next == "" {
		t.Fatalf("the second call: %v, next %q; want none and a cursor (its budget spent on other topics)", ids(p.Jobs), p.Next)
	}
	checkList(t, "paged on", listAll(t, s, jobstore.ListQuery{Topic: "topic.rare", Limit: 10, Cursor: p.Next}), []string{"needle-old"})
	checkList(t, "every rare job", listAll(t, s, q), []string{"needle-old"})
}

// testListRetention: jobs dropped by the retention leave every listing;
// the others stay (real time, as Retention).
func testListRetention(t *testing.T, s jobstore.Store) {
	r, ok := s.(interface{ SetRetention(time.Duration) })
	if !ok {
		t.Fatal("the store has no SetRetention")
	}
	const keep = 300 * time.Millisecond
	r.SetRetention(keep)
	ctx := context.Background()
	now := time.Now().UTC()
	for i, id := range []string{"gone1", "stays", "gone2", "dead"} {
		mkJob(t, s, id, "acme", "topic.a", now.Add(time.Duration(i)*time.Millisecond))
	}
	mkJob(t, s, "other", "beta", "topic.a", now)
	for _, id := range []string{"gone1", "gone2", "dead", "other"} {
		move(t, s, id, jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Scheduled, At: now})
	}
	if err := s.AddDLQ(ctx, jobstore.DLQEntry{JobID: "dead", Reason: "x", At: now}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.Sweep(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "gone1"); errors.Is(err, jobstore.ErrNotFound) {
			if _, err := s.Get(ctx, "other"); errors.Is(err, jobstore.ErrNotFound) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended jobs are still there after the retention")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// One more sweep: the index entries go with it, whatever the order
	// the keys expired in.
	time.Sleep(20 * time.Millisecond)
	if _, err := s.Sweep(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []jobstore.ListQuery{{}, {Tenant: "acme"}, {Tenant: "acme", Topic: "topic.a"}, {Since: now}} {
		checkList(t, fmt.Sprintf("%+v", q), listAll(t, s, q), []string{"dead", "stays"})
	}
	for _, j := range listAll(t, s, jobstore.ListQuery{State: jobstore.Succeeded}) {
		if j.ID != "dead" {
			t.Errorf("SUCCEEDED lists %s, whose retention passed", j.ID)
		}
	}
	checkList(t, "beta", listAll(t, s, jobstore.ListQuery{Tenant: "beta"}), nil)
	// The dead-lettered job goes once out of the DLQ.
	if ok, err := s.RemoveDLQ(ctx, "dead"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for {
		if _, err := s.Sweep(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := ids(listAll(t, s, jobstore.ListQuery{Tenant: "acme"})); slices.Equal(got, []string{"stays"}) {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the job out of the DLQ is still listed after its retention")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// An id made again after its job went is the new job's.
	mkJob(t, s, "gone1", "beta", "topic.a", time.Now())
	checkList(t, "beta after gone1 was made again", listAll(t, s, jobstore.ListQuery{Tenant: "beta"}), []string{"gone1"})
	checkList(t, "acme after gone1 was made again", listAll(t, s, jobstore.ListQuery{Tenant: "acme"}), []string{"stays"})
}

// testIdempotencyConflict: a key used again with the same request is a
// duplicate; with another topic or payload, a conflict; nothing written.
func testIdempotencyConflict(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	mk := func(id, topic, digest string) *jobstore.Job {
		j := job(id)
		j.Topic, j.IdempotencyKey, j.PayloadDigest = topic, "k", digest
		return j
	}
	if _, _, err := s.Create(ctx, mk("j1", "topic.a", ""), []byte("one")); err != nil {
		t.Fatal(err)
	}
	id, ok, err := s.Create(ctx, mk("j2", "topic.a", ""), []byte("one"))
	if err != nil || ok || id != "j1" {
		t.Errorf("the same request: %q %v %v; want j1, a duplicate", id, ok, err)
	}
	for _, c := range []struct {
		topic, payload string
	}{{"topic.a", "two"}, {"topic.b", "one"}, {"topic.a", ""}} {
		id, ok, err := s.Create(ctx, mk("j3", c.topic, ""), []byte(c.payload))
		if !errors.Is(err, jobstore.ErrIdempotencyConflict) || ok || id != "j1" {
			t.Errorf("%s %q: %q %v %v; want j1, ErrIdempotencyConflict", c.topic, c.payload, id, ok, err)
		}
	}
	res, err := s.Submit(ctx, mk("j3", "topic.b", ""), []byte("one"), jobstore.Guard{Rate: 1000})
	if !errors.Is(err, jobstore.ErrIdempotencyConflict) || res.Created || res.ID != "j1" {
		t.Errorf("Submit of another request: %+v %v", res, err)
	}
	if _, err := s.Get(ctx, "j3"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("a conflict wrote its job: %v", err)
	}
	// A digest stands for the payload: the same digest is the same
	// request (a context stored elsewhere has no payload here).
	d := "sha256:" + fmt.Sprintf("%064x", 7)
	j := mk("d1", "topic.a", d)
	j.IdempotencyKey = "k2"
	if _, _, err := s.Create(ctx, j, nil); err != nil {
		t.Fatal(err)
	}
	j = mk("d2", "topic.a", d)
	j.IdempotencyKey = "k2"
	if id, ok, err := s.Create(ctx, j, []byte("whatever")); err != nil || ok || id != "d1" {
		t.Errorf("the same digest: %q %v %v", id, ok, err)
	}
	j = mk("d3", "topic.a", "sha256:"+fmt.Sprintf("%064x", 8))
	j.IdempotencyKey = "k2"
	if id, _, err := s.Create(ctx, j, nil); !errors.Is(err, jobstore.ErrIdempotencyConflict) || id != "d1" {
		t.Errorf("another digest: %q %v", id, err)
	}
	// Another tenant's key is its own.
	j = mk("o1", "topic.b", "")
	j.Tenant = "other"
	create(t, s, j)
}
