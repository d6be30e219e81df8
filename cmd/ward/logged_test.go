package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	securenats "github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestLoggedFailover runs `ward scheduler` on the logged store
// (log=NAME: the state in the owner's memory, a log in Redis with its
// append-only file on) as separate processes, one owner and a standby,
// around one NATS with auth on, and puts jobs through them, 16 in flight,
// while the owner is first paused past its lease (SIGSTOP, then SIGCONT),
// redis-server is killed and restarted, and then the next owner is killed
// (SIGKILL). Then:
//
//   - the paused owner, resumed, finds itself fenced and exits with an
//     error, changing nothing (the log has a newer owner);
//   - redis-server, SIGKILLed between the two and started again from its
//     append-only file within the lease, costs the owner a wait, not a
//     job;
//   - every job ends SUCCEEDED, as an owner that replays the log at the
//     end reads it;
//   - no host was dispatched the same attempt of a job twice;
//   - every job's history (submits, the hosts' acknowledged results, and
//     every read of it, a reader's all along included) is linearizable
//     (porcupine; linearizable_test.go).
//
// The hosts are in-process fakes that answer at once (clusterHost without a
// store: the payload comes in the ticket, the result goes back in the
// result message, sent again until a scheduler answers, as a real host
// does).
func TestLoggedFailover(t *testing.T) { loggedFailover(t, 0) }

// TestOwnedFailover is TestLoggedFailover on the logged store split into
// two shards with owners (log=NAME&shards=2): the schedulers share the
// shards and send each other what is the other's. The paused one,
// resumed, finds the shards it owned fenced (the other took them over
// while it was paused) and drops them, changing nothing, but goes on: it
// takes a shard back as the members rebalance. The killed one's shards
// are taken over by the others. Every job ends SUCCEEDED, no attempt is
// dispatched twice, and every job's history is linearizable, as on one
// log.
func TestOwnedFailover(t *testing.T) { loggedFailover(t, 2) }

// loggedFailover is TestLoggedFailover, on one log (shards 0) or on that
// many shards with owners.
func loggedFailover(t *testing.T, shards int) {
	jobs := 600
	if testing.Short() {
		jobs = 300
	}
	const inFlight = 16
	ns := securenats.StartSecure(t)
	secret, _ := ns.Auth.DispatchSecret()
	rp := redistest.StartProcess(t, "--appendonly", "yes", "--appendfsync", "everysec")
	redisURL := rp.Addr
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	timeouts := "reconciler:\n  scan_interval: 500ms\n  lease_ttl: 2s\n  pending_timeout: 3s\n  result_grace: 2s\n  dispatch_timeout: 5s\n" +
		"topics:\n  job.echo: {max_retries: 3}\n"
	safetyAddr := freeAddr(t)
	storeURL := "redis://" + redisURL + "?log=ward&lease=1s&snapshot=100"
	if shards > 0 {
		storeURL += fmt.Sprintf("&shards=%d", shards)
	}
	env := []string{"NATS_URL=" + ns.URL, "REDIS_URL=" + storeURL, "WARD_STATE_DIR=" + t.TempDir(),
		"SAFETY_KERNEL_ADDR=" + safetyAddr, "METRICS_ADDR=", "TIMEOUT_CONFIG_PATH=" + write("timeouts.yaml", timeouts), "WARD_LOG_LEVEL=warn"}
	startWard(t, "safety", env, "safety", "--creds", ns.Creds(auth.Safety, "safety"), "--listen", safetyAddr, "--metrics", "")
	checkReachable(t, safetyAddr)
	schedCreds := ns.Creds(auth.Scheduler, "scheduler")
	dispatchSecret := filepath.Join(ns.Auth.Dir(), "dispatch.secret")
	scheduler := func(id string) *proc {
		return startWard(t, id, env, "scheduler", "--id", id, "--metrics", "", "--creds", schedCreds, "--dispatch-secret", dispatchSecret)
	}
	s0 := scheduler("s0")

	hist := newJobHistory()
	hosts := make([]*clusterHost, 2)
	for i := range hosts {
		id := fmt.Sprintf("h%d", i)
		// No store: the payload in the ticket, the result in the message.
		hosts[i] = startClusterHost(t, ns.URL, ns.Creds(auth.Host, id, auth.IssueOptions{Pools: []string{"echo"}}), auth.HostKey(secret, id), nil, id)
		hosts[i].mu.Lock()
		hosts[i].answered = hist.result
		hosts[i].mu.Unlock()
	}
	c, err := client.Dial(ns.URL, client.Options{Creds: ns.Creds(auth.Admin, "admin")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitSucceeded(t, c, "warm-up") // s0 owns the log and serves
	s1 := scheduler("s1")          // a standby: it waits for the log

	var (
		mu       sync.Mutex
		ended    = map[string]chan struct{}{}
		finished atomic.Int64
	)
	evSub, err := c.Bus().NATS().Subscribe(bus.SubjectEvents, func(m *nats.Msg) {
		var ev wardv1.JobEvent
		if proto.Unmarshal(m.Data, &ev) != nil || !client.Terminal(ev.GetState()) {
			return
		}
		mu.Lock()
		if ch, ok := ended[ev.GetJobId()]; ok {
			delete(ended, ev.GetJobId())
			close(ch)
		}
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer evSub.Unsubscribe()
	_ = evSub.SetPendingLimits(-1, -1)
	_ = c.Bus().Flush()

	// The faults, in order, as the jobs go through.
	var s2 *proc
	var killedAt, resumedAt atomic.Int64 // unix ns: the owner killed; the first job to end after it
	faults := make(chan struct{})
	var faultsDone sync.WaitGroup
	faultsDone.Go(func() {
		<-faults
		// Pause the owner past its lease: s1 takes the log over.
		if err := s0.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(3 * time.Second)
		if err := s0.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Error(err)
			return
		}
		if shards > 0 {
			// It drops the shards it lost, and goes on.
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(s0.out.String(), "shard lost") {
				if time.Now().After(deadline) {
					t.Errorf("the paused owner, resumed, did not drop its lost shards within 20 s:\n%s", s0.out.String())
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			select {
			case err := <-s0.done:
				s0.waited = true
				t.Errorf("the paused owner, resumed, exited: %v", err)
				return
			default:
			}
		} else {
			select {
			case err := <-s0.done:
				s0.waited = true
				if err == nil || !strings.Contains(s0.out.String(), "fenced") {
					t.Errorf("the paused owner, resumed: exit %v; want an error, and its log to say it was fenced", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("the paused owner, resumed, did not stop within 20 s")
				return
			}
		}
		s2 = scheduler("s2") // the next standby
		<-faults
		// Kill redis-server, and start it again from its append-only file
		// within the lease (an outage past it fences the owner, which then
		// exits for a standby to take over): the owner's appends and
		// renewals wait for it, then go on.
		rp.Kill()
		time.Sleep(200 * time.Millisecond)
		rp.Restart()
		<-faults
		// Kill the owner: s2 takes the log over when the lease lapses.
		killedAt.Store(time.Now().UnixNano())
		if err := s1.cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
	})

	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("logged-%04d", i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs {
					return
				}
				id := ids[i]
				ch := make(chan struct{})
				mu.Lock()
				ended[id] = ch
				mu.Unlock()
				req := &wardv1.JobRequest{JobId: id, IdempotencyKey: id, Topic: "job.echo", TenantId: fmt.Sprintf("t%d", i%4), Payload: []byte(id)}
				// A submission no owner answered (it was paused, killed,
				// or not yet owner) is sent again: the idempotency key
				// makes it the same job.
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					call := time.Now()
					_, err := c.Submit(ctx, req)
					cancel()
					hist.submit(i, id, call, err)
					if err == nil {
						break
					}
					// A fenced former owner refuses with store_error
					// (its store refuses every change): try again, as a
					// client should for that code.
					if errors.Is(err, client.ErrRefused) && !strings.Contains(err.Error(), "store_error") || attempt == 40 {
						t.Errorf("job %s: submit: %v", id, err)
						return
					}
				}
				giveUp := time.Now().Add(2 * time.Minute)
				for done := false; !done; {
					select {
					case <-ch:
						done = true
					case <-time.After(2 * time.Second):
						ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
						call := time.Now()
						j, err := c.Get(ctx, id, false)
						cancel()
						hist.get(i, id, call, j, err)
						if err == nil && client.Terminal(j.GetState()) {
							done = true
						} else if time.Now().After(giveUp) {
							t.Errorf("job %s did not end in 2 minutes: %v %v", id, j, err)
							return
						}
					}
				}
				if k := killedAt.Load(); k != 0 && time.Now().UnixNano() > k+int64(100*time.Millisecond) {
					resumedAt.CompareAndSwap(0, time.Now().UnixNano())
				}
				if n := finished.Add(1); n == int64(jobs/3) || n == int64(jobs/2) || n == int64(2*jobs/3) {
					faults <- struct{}{}
				}
			}
		})
	}
	// A reader asks for jobs already submitted, at random, all along:
	// what it sees goes into the histories too.
	readerDone := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-readerDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
			n := min(int(next.Load()), jobs)
			if n == 0 {
				continue
			}
			id := ids[(k*7919)%n]
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			call := time.Now()
			j, err := c.Get(ctx, id, false)
			cancel()
			hist.get(10_000, id, call, j, err)
		}
	})
	wg.Wait()
	close(readerDone)
	reader.Wait()
	faultsDone.Wait()
	if s2 == nil {
		t.Fatal("the faults did not all happen")
	}

	// Every job SUCCEEDED, as an owner that replays the log reads it: kill
	// s2, and s3 takes over.
	if err := s2.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s3 := scheduler("s3")
	defer func() {
		if t.Failed() {
			t.Logf("s3's log:\n%s", s3.out.String())
		}
	}()
	// A request sent as s2 dies may go to it, unanswered: ask again.
	replayedBy := time.Now().Add(30 * time.Second) // s2's lease lapses, s3 replays
	lastAttempt := map[string]int32{}
	for _, id := range ids {
		var j *wardv1.JobRecord
		var err error
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			call := time.Now()
			j, err = c.Get(ctx, id, false)
			cancel()
			hist.get(20_000, id, call, j, err)
			if err == nil || time.Now().After(replayedBy) {
				break
			}
		}
		lastAttempt[id] = j.GetAttempt()
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		if j.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("job %s ended %s", id, j.GetState())
		}
	}
	// Every job's history is linearizable.
	hist.check(t, lastAttempt)
	// No attempt of a job was dispatched twice.
	seen := map[string]string{}
	for _, h := range hosts {
		h.mu.Lock()
		for key, n := range h.attempts {
			if n > 1 || seen[key] != "" {
				t.Errorf("job attempt %s dispatched more than once (%d at %s, also at %q)", key, n, h.id, seen[key])
			}
			seen[key] = h.id
		}
		h.mu.Unlock()
	}
	// The owners stored snapshots (snapshot=100) and trimmed the log: the
	// takeovers read a snapshot and the batches after it.
	rc := redis.NewClient(&redis.Options{Addr: redisURL})
	defer rc.Close()
	logName := "ward"
	if shards > 0 {
		logName = "ward.0" // one of them
	}
	snap, err := rc.HGet(context.Background(), "ward:log:{"+logName+"}:snapshot", "s").Int64()
	if err != nil {
		t.Fatalf("no snapshot of the log %s: %v", logName, err)
	}
	t.Logf("the last snapshot holds the log up to batch %d", snap)
	t.Logf("%d jobs, %d attempts dispatched, through a paused owner and a killed one; after the kill, the first job ended %v later (the lease is 1 s)",
		jobs, len(seen), time.Duration(resumedAt.Load()-killedAt.Load()).Round(time.Millisecond))
}
