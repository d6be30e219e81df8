package modreg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Errors of a Rollout.
var (
	// ErrRefused: a host refused the version (its checks or its compile
	// failed); it keeps serving the version it had. The Staging or
	// RolledOut returned with it names the hosts and their errors.
	ErrRefused = errors.New("modreg: hosts refused the version")
	// ErrNoLiveHosts: no live host answered, so there is nothing to roll
	// out to.
	ErrNoLiveHosts = errors.New("modreg: no live host to roll out to")
)

// HostReport is what a host says of itself, as far as a rollout cares: a
// heartbeat, or its answer to the hosts query (`ward workers`).
type HostReport struct {
	ID string
	// Modules maps a module name to the digest the host serves.
	Modules map[string]string
	// Draining says the host is stopping: no rollout waits for it.
	Draining bool
}

// Hosts is where a Rollout learns which hosts are live and what they
// serve. `ward module deploy` implements it with the hosts query and the
// hosts' heartbeats on NATS.
type Hosts interface {
	// Live asks every live host at once and returns the answers that came
	// in time.
	Live(ctx context.Context) ([]HostReport, error)
	// Watch passes every heartbeat to f, from when it returns until ctx
	// ends. f may be called from another goroutine.
	Watch(ctx context.Context, f func(HostReport)) error
}

// Counter is a Hosts that also knows, from elsewhere than the hosts'
// own reports, how many hosts are live: `ward module deploy` asks the
// schedulers, whose registry of live hosts is what places jobs. A wait
// with a Counter is not done while it has seen fewer live hosts than
// that count: a host too slow to answer the hosts query (a loaded
// machine) is waited for until its heartbeat comes, not left out.
type Counter interface {
	// LiveCount returns how many hosts are live, or ok false when it
	// could not tell (nobody answered in time).
	LiveCount(ctx context.Context) (n int, ok bool, err error)
}

// countWait is how long a wait asks a Counter before it gives up on it
// and counts the hosts it saw.
const countWait = 15 * time.Second

// Rollout takes one version to every live host, in the steps of `ward
// module deploy`:
//
//	Stage ──▶ WaitStaged ──▶ Activate ──▶ WaitRolledOut
//	stored    compiled ahead   in force     served by every live host
//	          on every host                 (the swap took milliseconds)
//
// WaitRolledOut alone follows a Rollback or a Remove. The steps are the
// caller's to skip (no staging: Activate at once) or to stop at (a
// refusal while staging, unless forced).
//
// The hosts a wait waits for are every host seen live since the Rollout
// began, by its answer to the hosts query or by a heartbeat during any
// step, less those that said they are draining. A host seen in one step
// is waited for in the next: a host too busy to answer a query in time
// (compiling, on a loaded machine) is still counted.
//
// A Rollout is for one deploy at a time; its methods are not to be
// called concurrently.
type Rollout struct {
	Registry *Registry
	Hosts    Hosts

	mu   sync.Mutex            // guards the 2 following fields
	seen map[string]HostReport // every host seen live: its last report
	wait *hostWait             // the wait in progress, if any
}

// Stage stores v and wasm without activating them: hosts compile the
// version ahead while the active one serves (Registry.Stage).
func (ro *Rollout) Stage(ctx context.Context, v Version, wasm []byte) (*Version, error) {
	return ro.Registry.Stage(ctx, v, wasm)
}

// Activate makes v the active version (Registry.Activate).
func (ro *Rollout) Activate(ctx context.Context, v *Version) (*Active, error) {
	return ro.Registry.Activate(ctx, v.Name, v.Version)
}

// Staging is how far WaitStaged got.
type Staging struct {
	// Ready are the hosts that compiled the version ahead or serve it
	// already, Waiting those that had not when the wait ended, and
	// Refused maps each host that refused it to its error. Each is
	// sorted by host.
	Ready, Waiting []string
	Refused        map[string]string
	// Took is how long the wait took.
	Took time.Duration
	// Unseen is how many hosts the Hosts' Counter counts live beyond
	// those the wait heard from.
	Unseen int
	// TimedOut says the wait ended with hosts Waiting (or Unseen): they
	// compile the version when it is activated.
	TimedOut bool
}

// Live is how many live hosts the wait counted.
func (s *Staging) Live() int { return len(s.Ready) + len(s.Waiting) + len(s.Refused) + s.Unseen }

// WaitStaged waits up to timeout until every live host has compiled v
// ahead, serves it already, or refused it. It returns what it saw, and an
// error wrapping ErrRefused when a host refused it. Hosts still Waiting at
// the timeout are no error: they load the version on activation.
func (ro *Rollout) WaitStaged(ctx context.Context, v *Version, timeout time.Duration) (*Staging, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	view, err := ro.Registry.view(ctx)
	if err != nil {
		return nil, err
	}
	defer view.stop()
	w, err := ro.follow(ctx, func(h HostReport) bool { return h.Modules[v.Name] == v.Digest })
	if err != nil {
		return nil, err
	}
	defer ro.unfollow()
	count := ro.count(ctx)
	for {
		st := view.state()
		out := &Staging{Refused: map[string]string{}}
		reached, live := ro.snapshot(w)
		out.Unseen = count.unseen(len(live))
		for _, id := range live {
			_, served := reached[id]
			switch {
			case served, st.Staged[v.Name][id] == v.Digest:
				out.Ready = append(out.Ready, id)
			case st.Refused[v.Name][id].Digest == v.Digest:
				out.Refused[id] = st.Refused[v.Name][id].Error
			default:
				out.Waiting = append(out.Waiting, id)
			}
		}
		done := len(out.Waiting) == 0 && out.Unseen == 0
		if !done {
			select {
			case <-view.changed:
				continue
			case <-w.changed:
				continue
			case <-count.changed:
				continue
			case <-ctx.Done():
				out.TimedOut = true
			}
		}
		out.Took = time.Since(start)
		if len(out.Refused) > 0 {
			return out, fmt.Errorf("%w: hosts %v refused %s %s", ErrRefused, slices.Sorted(maps.Keys(out.Refused)), v.Name, v.Version)
		}
		return out, nil
	}
}

// RolledOut is how far WaitRolledOut got.
type RolledOut struct {
	// Held are the hosts that serve the version (for a retired module:
	// that serve it no more), Waiting those that did not when the wait
	// ended, and Refused maps each host that refused it to its error. Each
	// is sorted by host.
	Held, Waiting []string
	Refused       map[string]string
	// Unseen is how many hosts the Hosts' Counter counts live beyond
	// those the wait heard from: the wait is not done while there are.
	Unseen int
	// Took is the time from the call to the heartbeat of the last host to
	// swap: hosts send one the moment they do. On a timeout, the time
	// waited.
	Took time.Duration
}

// Live is how many live hosts the wait counted.
func (r *RolledOut) Live() int { return len(r.Held) + len(r.Waiting) + len(r.Refused) + r.Unseen }

// WaitRolledOut waits until every live host serves a's version, or
// refused it; for a retired module, until no live host serves it. It
// returns what it saw, with an error wrapping ErrRefused when a host
// refused the version, ErrNoLiveHosts when no host is live, or ctx's error
// when ctx ended first (Waiting names the hosts it waited for).
func (ro *Rollout) WaitRolledOut(ctx context.Context, a *Active) (*RolledOut, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := ro.follow(ctx, func(h HostReport) bool {
		d, ok := h.Modules[a.Name]
		return a.Retired && !ok || !a.Retired && d == a.Digest
	})
	if err != nil {
		return nil, err
	}
	defer ro.unfollow()
	if _, live := ro.snapshot(w); len(live) == 0 {
		return nil, ErrNoLiveHosts
	}
	view, err := ro.Registry.view(ctx)
	if err != nil {
		return nil, err
	}
	defer view.stop()
	count := ro.count(ctx)
	for {
		out := &RolledOut{Refused: map[string]string{}}
		var last time.Time
		reached, live := ro.snapshot(w)
		out.Unseen = count.unseen(len(live))
		refusals := view.state().Refused[a.Name]
		for _, id := range live {
			switch at, ok := reached[id]; {
			case ok:
				out.Held = append(out.Held, id)
				if at.After(last) {
					last = at
				}
			case !a.Retired && refusals[id].Digest == a.Digest:
				out.Refused[id] = refusals[id].Error
			default:
				out.Waiting = append(out.Waiting, id)
			}
		}
		if len(out.Waiting) == 0 && out.Unseen == 0 {
			if last.IsZero() {
				last = time.Now()
			}
			out.Took = last.Sub(start)
			if len(out.Refused) > 0 {
				return out, fmt.Errorf("%w: %d host(s) refused %s %s", ErrRefused, len(out.Refused), a.Name, a.Version)
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			out.Took = time.Since(start)
			return out, fmt.Errorf("modreg: rollout of %s %s: hosts %v (and %d live host(s) not heard from) do not serve it after %s: %w",
				a.Name, a.Version, out.Waiting, out.Unseen, out.Took.Round(time.Millisecond), ctx.Err())
		case <-view.changed:
		case <-w.changed:
		case <-count.changed:
		}
	}
}

// liveCount is a wait's view of a Counter: the count, asked again every
// second until the wait ends (hosts come and go meanwhile).
type liveCount struct {
	mu      sync.Mutex
	n       int  // guarded by mu: the latest count
	known   bool // guarded by mu: a count came, or the Counter gave up
	changed chan struct{}
}

// count starts asking ro.Hosts's Counter, if it has one, until ctx ends.
// Until a first count comes (up to countWait), the wait is not done: a
// rollout that says it reached every live host must have.
func (ro *Rollout) count(ctx context.Context) *liveCount {
	c := &liveCount{changed: make(chan struct{}, 1)}
	counter, ok := ro.Hosts.(Counter)
	if !ok {
		c.known = true
		return c
	}
	go func() {
		giveUp := time.Now().Add(countWait)
		for {
			n, ok, err := counter.LiveCount(ctx)
			c.mu.Lock()
			switch {
			case err == nil && ok:
				c.n, c.known = n, true
			case !c.known && time.Now().After(giveUp):
				c.known = true // nobody counts: the hosts seen are all there is to go by
			}
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return c
}

// unseen is how many more hosts the count has than the seen live ones;
// 1 while no count came yet (the wait goes on).
func (c *liveCount) unseen(seen int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return 1
	}
	return max(0, c.n-seen)
}

// hostWait is one wait's view of the hosts: when each first served what
// the wait waits for.
type hostWait struct {
	holds   func(HostReport) bool
	reached map[string]time.Time // guarded by Rollout.mu
	changed chan struct{}        // a report came
}

// follow starts a wait: it watches the heartbeats, then asks the hosts,
// and notes every report in ro.seen and in the wait.
func (ro *Rollout) follow(ctx context.Context, holds func(HostReport) bool) (*hostWait, error) {
	w := &hostWait{holds: holds, reached: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	ro.mu.Lock()
	if ro.seen == nil {
		ro.seen = map[string]HostReport{}
	}
	ro.wait = w
	// What the hosts seen earlier reported last still stands until they
	// report again; a host that reported what the wait waits for is there.
	now := time.Now()
	for id, h := range ro.seen {
		if holds(h) {
			w.reached[id] = now
		}
	}
	ro.mu.Unlock()
	if err := ro.Hosts.Watch(ctx, func(h HostReport) { ro.note(w, h, time.Now()) }); err != nil {
		return nil, err
	}
	live, err := ro.Hosts.Live(ctx)
	if err != nil {
		return nil, err
	}
	now = time.Now()
	for _, h := range live {
		ro.note(w, h, now)
	}
	return w, nil
}

// unfollow ends the wait: reports that still come are kept in ro.seen.
func (ro *Rollout) unfollow() {
	ro.mu.Lock()
	ro.wait = nil
	ro.mu.Unlock()
}

// note records one report.
func (ro *Rollout) note(w *hostWait, h HostReport, at time.Time) {
	if h.ID == "" {
		return
	}
	ro.mu.Lock()
	ro.seen[h.ID] = h
	if ro.wait == w {
		if _, ok := w.reached[h.ID]; !ok && w.holds(h) {
			w.reached[h.ID] = at
		}
	}
	ro.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// snapshot returns when each host reached what w waits for, and the hosts
// live now, sorted: those seen, less those draining.
func (ro *Rollout) snapshot(w *hostWait) (map[string]time.Time, []string) {
	ro.mu.Lock()
	defer ro.mu.Unlock()
	var live []string
	for id, h := range ro.seen {
		if !h.Draining {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	return maps.Clone(w.reached), live
}

// registryView is the registry's state as a wait follows it.
type registryView struct {
	mu      sync.Mutex
	st      *State        // guarded by mu
	changed chan struct{} // the state changed
	done    <-chan struct{}
	cancel  context.CancelFunc
}

// view follows r until stop; the first state is there when it returns.
func (r *Registry) view(ctx context.Context) (*registryView, error) {
	ctx, cancel := context.WithCancel(ctx)
	v := &registryView{changed: make(chan struct{}, 1), cancel: cancel}
	done, err := r.Follow(ctx, func(st *State) {
		v.mu.Lock()
		v.st = st
		v.mu.Unlock()
		select {
		case v.changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	v.done = done
	return v, nil
}

func (v *registryView) state() *State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.st
}

func (v *registryView) stop() { v.cancel(); <-v.done }
