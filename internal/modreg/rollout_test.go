package modreg

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/poll"
)

// fakeHosts answers the hosts query with what live holds, and passes what
// beat is given to the watchers.
type fakeHosts struct {
	mu       sync.Mutex // guards the 3 following fields
	live     []HostReport
	watchers map[int]func(HostReport)
	next     int
}

func (f *fakeHosts) Live(ctx context.Context) ([]HostReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.live), nil
}

func (f *fakeHosts) Watch(ctx context.Context, fn func(HostReport)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watchers == nil {
		f.watchers = map[int]func(HostReport){}
	}
	id := f.next
	f.next++
	f.watchers[id] = fn
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.watchers, id)
		f.mu.Unlock()
	})
	return nil
}

func (f *fakeHosts) watching() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers) > 0
}

func (f *fakeHosts) setLive(hs ...HostReport) {
	f.mu.Lock()
	f.live = hs
	f.mu.Unlock()
}

// beat sends h as a heartbeat, once a wait watches.
func (f *fakeHosts) beat(t *testing.T, h HostReport) {
	t.Helper()
	poll.Until(t, 10*time.Second, "a wait watching the heartbeats", f.watching)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fn := range f.watchers {
		fn(h)
	}
}

func host(id string, modules ...string) HostReport {
	h := HostReport{ID: id, Modules: map[string]string{}}
	for i := 0; i+1 < len(modules); i += 2 {
		h.Modules[modules[i]] = modules[i+1]
	}
	return h
}

type waitResult[T any] struct {
	res T
	err error
}

// TestRolloutCountsLateHosts: a host that does not answer the hosts query
// in time (busy compiling) but heartbeats during the wait is waited for,
// in staging and, having been seen there, in the rollout, where it does
// not answer the query at all.
func TestRolloutCountsLateHosts(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	if _, err := r.Deploy(ctx, Version{Name: "hello", Version: "1"}, []byte("\x00asm 1")); err != nil {
		t.Fatal(err)
	}
	d1 := Digest([]byte("\x00asm 1"))
	hosts := &fakeHosts{}
	hosts.setLive(host("h1", "hello", d1)) // h2 is too slow to answer
	ro := &Rollout{Registry: r, Hosts: hosts}
	v, err := ro.Stage(ctx, Version{Name: "hello", Version: "2"}, []byte("\x00asm 2"))
	if err != nil {
		t.Fatal(err)
	}

	staged := make(chan waitResult[*Staging], 1)
	go func() {
		st, err := ro.WaitStaged(ctx, v, time.Minute)
		staged <- waitResult[*Staging]{st, err}
	}()
	hosts.beat(t, host("h2", "hello", d1))
	if err := r.ReportStaged(ctx, "hello", "h1", v.Digest); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-staged:
		t.Fatalf("staging ended while h2 had not compiled: %+v %v", got.res, got.err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := r.ReportStaged(ctx, "hello", "h2", v.Digest); err != nil {
		t.Fatal(err)
	}
	got := <-staged
	if got.err != nil || got.res.TimedOut || !slices.Equal(got.res.Ready, []string{"h1", "h2"}) || got.res.Live() != 2 {
		t.Fatalf("staging: %+v %v", got.res, got.err)
	}

	a, err := ro.Activate(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	hosts.setLive(host("h1", "hello", a.Digest)) // h1 swapped; h2 does not answer
	rolled := make(chan waitResult[*RolledOut], 1)
	go func() {
		res, err := ro.WaitRolledOut(ctx, a)
		rolled <- waitResult[*RolledOut]{res, err}
	}()
	poll.Until(t, 10*time.Second, "the rollout watching", hosts.watching)
	select {
	case got := <-rolled:
		t.Fatalf("rollout ended while h2 had not swapped: %+v %v", got.res, got.err)
	case <-time.After(300 * time.Millisecond):
	}
	hosts.beat(t, host("h2", "hello", a.Digest))
	res := <-rolled
	if res.err != nil || !slices.Equal(res.res.Held, []string{"h1", "h2"}) || res.res.Live() != 2 {
		t.Fatalf("rollout: %+v %v", res.res, res.err)
	}
}

func TestRolloutRefusedAndTimedOut(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	hosts := &fakeHosts{}
	hosts.setLive(host("h1"), host("h2"), host("h3"))
	ro := &Rollout{Registry: r, Hosts: hosts}
	v, err := ro.Stage(ctx, Version{Name: "hello", Version: "1"}, []byte("\x00asm 1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ReportStaged(ctx, "hello", "h1", v.Digest); err != nil {
		t.Fatal(err)
	}
	if err := r.ReportRefusal(ctx, Event{Name: "hello", Version: "1", Digest: v.Digest, Host: "h2", Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	// h3 never compiles it.
	st, err := ro.WaitStaged(ctx, v, 500*time.Millisecond)
	if !errors.Is(err, ErrRefused) || st == nil || !st.TimedOut || !slices.Equal(st.Ready, []string{"h1"}) ||
		!slices.Equal(st.Waiting, []string{"h3"}) || st.Refused["h2"] != "bad" || st.Live() != 3 {
		t.Fatalf("staging: %+v %v", st, err)
	}

	a, err := ro.Activate(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	hosts.setLive(host("h1", "hello", a.Digest), host("h2"), host("h3"))
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	res, err := ro.WaitRolledOut(wctx, a)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || !slices.Equal(res.Held, []string{"h1"}) ||
		!slices.Equal(res.Waiting, []string{"h3"}) || res.Refused["h2"] != "bad" {
		t.Fatalf("rollout: %+v %v", res, err)
	}
	// h3 stops: no wait waits for a draining host.
	hosts.setLive(host("h1", "hello", a.Digest), host("h2"), HostReport{ID: "h3", Draining: true})
	res, err = ro.WaitRolledOut(ctx, a)
	if !errors.Is(err, ErrRefused) || !slices.Equal(res.Held, []string{"h1"}) || len(res.Waiting) != 0 || res.Live() != 2 {
		t.Fatalf("rollout after h3 drained: %+v %v", res, err)
	}
}

func TestRolloutRetiredAndNoHosts(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	if _, err := r.Deploy(ctx, Version{Name: "hello", Version: "1"}, []byte("\x00asm 1")); err != nil {
		t.Fatal(err)
	}
	a, err := r.Remove(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	hosts := &fakeHosts{}
	if _, err := (&Rollout{Registry: r, Hosts: hosts}).WaitRolledOut(ctx, a); !errors.Is(err, ErrNoLiveHosts) {
		t.Fatalf("no hosts: %v", err)
	}
	hosts.setLive(host("h1"), host("h2", "other", "sha256:x"))
	res, err := (&Rollout{Registry: r, Hosts: hosts}).WaitRolledOut(ctx, a)
	if err != nil || res.Live() != 2 || len(res.Held) != 2 {
		t.Fatalf("retired: %+v %v", res, err)
	}
}

// countedHosts is a fakeHosts with a Counter: the schedulers' count of
// live hosts.
type countedHosts struct {
	*fakeHosts
	n int
}

func (c countedHosts) LiveCount(ctx context.Context) (int, bool, error) { return c.n, true, nil }

// TestRolloutWaitsForCountedHosts: with a Counter saying 2 hosts are
// live, a rollout that heard only from h1 (all of whose answers came in
// time, so nothing else is Waiting) does not say it reached every live
// host until h2's heartbeat came and it serves the version too (issue 29:
// "rolled out … on 3/3 live hosts" with 4 up, on a starved CPU).
func TestRolloutWaitsForCountedHosts(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	a, err := r.Deploy(ctx, Version{Name: "hello", Version: "1"}, []byte("\x00asm 1"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := &fakeHosts{}
	hosts.setLive(host("h1", "hello", a.Digest)) // h2 does not answer the query in time
	ro := &Rollout{Registry: r, Hosts: countedHosts{hosts, 2}}
	done := make(chan waitResult[*RolledOut], 1)
	go func() {
		res, err := ro.WaitRolledOut(ctx, a)
		done <- waitResult[*RolledOut]{res, err}
	}()
	select {
	case got := <-done:
		t.Fatalf("the rollout ended with h2 not heard from: %+v %v", got.res, got.err)
	case <-time.After(500 * time.Millisecond):
	}
	hosts.beat(t, host("h2", "hello", a.Digest))
	got := <-done
	if got.err != nil || !slices.Equal(got.res.Held, []string{"h1", "h2"}) || got.res.Live() != 2 || got.res.Unseen != 0 {
		t.Fatalf("rollout: %+v %v", got.res, got.err)
	}

	// A wait that ends first says how many it did not hear from.
	ro = &Rollout{Registry: r, Hosts: countedHosts{&fakeHosts{live: []HostReport{host("h1", "hello", a.Digest)}}, 2}}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	res, err := ro.WaitRolledOut(tctx, a)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || res.Unseen != 1 || res.Live() != 2 {
		t.Fatalf("a timed-out rollout: %+v %v", res, err)
	}
}
