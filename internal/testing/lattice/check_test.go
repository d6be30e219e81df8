//go:build lattice

package lattice

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/history"
)

// ackLog is the submitters' log: one line per acknowledged submit
// (history.AckLine), with the id the submitter chose.
type ackLog struct {
	mu sync.Mutex
	f  *os.File
}

func newAckLog(t *testing.T, path string) *ackLog {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &ackLog{f: f}
}

func (a *ackLog) ack(j *job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.f.WriteString(history.AckLine(history.Ack{Job: j.id, Topic: j.topic, At: time.Now()}))
}

// checker runs the history checker over the submitters' log, the hosts'
// logs and the store.
type checker struct {
	t     *testing.T
	l     *lattice
	c     *client.Client
	acks  string
	bound time.Duration
	hosts []string // process names of the hosts

	mu     sync.Mutex
	recs   map[string]*wardv1.JobRecord // the store's records, ended ones kept between checks
	faults []history.Fault
}

// record returns the store's record of a job read by the last check.
func (k *checker) record(id string) *wardv1.JobRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.recs[id]
}

// fetch reads the records of ids: all of them when fresh, else those not
// read ended before. It returns what it could not read.
func (k *checker) fetch(ids []string, fresh bool) map[string]error {
	var todo []string
	k.mu.Lock()
	for _, id := range ids {
		if r := k.recs[id]; fresh || r == nil || !client.Terminal(r.GetState()) {
			todo = append(todo, id)
		}
	}
	k.mu.Unlock()
	failed := map[string]error{}
	var fmu sync.Mutex
	ch := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for id := range ch {
				var (
					rec *wardv1.JobRecord
					err error
				)
				for try := 0; try < 5; try++ {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					rec, err = k.c.Get(ctx, id, false)
					cancel()
					if err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				if err != nil {
					fmu.Lock()
					failed[id] = err
					fmu.Unlock()
					continue
				}
				k.mu.Lock()
				k.recs[id] = rec
				k.mu.Unlock()
			}
		})
	}
	for _, id := range todo {
		ch <- id
	}
	close(ch)
	wg.Wait()
	return failed
}

// check runs the checker; fresh reads every record again (the end).
func (k *checker) check(fresh bool) *history.Findings {
	k.t.Helper()
	acks, err := history.ReadAcks(k.acks)
	if err != nil {
		k.t.Fatal(err)
	}
	var in history.Input
	in.Acks = acks
	for _, h := range k.hosts {
		lines, err := history.ReadLog(k.l.logPath(h))
		if err != nil {
			k.t.Fatal(err)
		}
		runs, answers := history.HostHistory(strings.TrimPrefix(h, "host-"), lines)
		in.Runs = append(in.Runs, runs...)
		in.Answers = append(in.Answers, answers...)
	}
	ids := make([]string, len(acks))
	for i, a := range acks {
		ids[i] = a.Job
	}
	failed := k.fetch(ids, fresh)
	in.Records = map[string]*history.Record{}
	k.mu.Lock()
	for _, id := range ids {
		if err, ok := failed[id]; ok {
			in.Records[id] = &history.Record{Missing: true, Err: err}
			continue
		}
		rec := k.recs[id]
		r := &history.Record{State: strings.TrimPrefix(rec.GetState().String(), "JOB_STATE_"), Reason: rec.GetReason(), Attempt: int(rec.GetAttempt())}
		for _, e := range rec.GetEvents() {
			r.Events = append(r.Events, history.Event{State: strings.TrimPrefix(e.GetState().String(), "JOB_STATE_"), Reason: e.GetReason(),
				Message: e.GetMessage(), Worker: e.GetWorkerId(), At: time.UnixMilli(e.GetAtUnixMs())})
		}
		r.ChainErr = jobstore.VerifyEvents(scheduler.StoredEvents(rec), rec.GetEventsChain())
		in.Records[id] = r
	}
	in.Faults = append(in.Faults, k.faults...)
	k.mu.Unlock()
	in.Now, in.Bound, in.CancelSlack = time.Now(), k.bound, cancelSlack
	return history.Check(in)
}

// cancelSlack is how long after a job's cancel a dispatch published
// before it may still arrive at its host and be accepted (and then
// stopped by the cancel): a message's way across the lattice on a loaded
// machine.
const cancelSlack = 5 * time.Second

// refusedSince counts the results of earlier attempts that the
// schedulers refused (ward_scheduler_refused_reports_total's stale
// results, as each logs them) from a time on: late results that did not
// end a job.
func (k *checker) refusedSince(from time.Time) int {
	n := 0
	for name, p := range k.l.procs {
		if !strings.HasPrefix(name, "scheduler-") || p.bin != k.l.ward {
			continue
		}
		lines, err := history.ReadLog(k.l.logPath(name))
		if err != nil {
			k.t.Fatal(err)
		}
		for _, l := range lines {
			if l.Msg == "host report refused" && l.Attrs["kind"] == "result" && !l.At.Before(from) {
				n++
			}
		}
	}
	return n
}

// storeCounts reads the store's counts of active jobs: per tenant
// (job:tenant:<t>:active) and per worker (job:worker:<w>:jobs), on every
// Redis server (a cluster's masters each hold a part), or in the logged
// store's log (-redis-log).
func storeCounts(addrs []string) (map[string]int64, error) {
	out := map[string]int64{}
	if *redisLog {
		// The logged store keeps them in its owner's memory: a reader
		// replays the log (what the owner appended) and counts.
		rc := redis.NewClient(&redis.Options{Addr: addrs[0]})
		defer rc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range logNames() {
			m, err := jobstore.ReadLogged(ctx, rc, name, jobstore.LoggedOptions{})
			if err != nil {
				return nil, err
			}
			tenants, workers := m.Held()
			for t, n := range tenants {
				out["job:tenant:"+t+":active"] += int64(n)
			}
			for w, n := range workers {
				out["job:worker:"+w+":jobs"] += int64(n)
			}
		}
		return out, nil
	}
	for _, a := range addrs {
		rc := redis.NewClient(&redis.Options{Addr: a})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, pat := range []string{"*job:tenant:*:active", "*job:worker:*:jobs"} {
			iter := rc.Scan(ctx, 0, pat, 1000).Iterator()
			for iter.Next(ctx) {
				n, err := rc.SCard(ctx, iter.Val()).Result()
				if err != nil {
					cancel()
					rc.Close()
					return nil, err
				}
				out[iter.Val()] += n
			}
			if err := iter.Err(); err != nil {
				cancel()
				rc.Close()
				return nil, err
			}
		}
		cancel()
		rc.Close()
	}
	return out, nil
}

// logNames are the logged store's logs (-redis-log): one, or a log a
// shard.
func logNames() []string {
	if *redisShards == 0 {
		return []string{latticeLog}
	}
	var logs []string
	for i := range *redisShards {
		logs = append(logs, fmt.Sprintf("%s.%d", latticeLog, i))
	}
	return logs
}

// viewsAgree waits up to wait until every log's view (-redis-view) holds
// in its state indexes ({NAME}job:index:<STATE>) the jobs a replay of the
// log holds in them, and answers how many jobs they held, or the first
// difference.
func viewsAgree(addrs []string, wait time.Duration) (int, string) {
	rc := redis.NewClient(&redis.Options{Addr: addrs[0]})
	defer rc.Close()
	deadline := time.Now().Add(wait)
	for {
		n, diff := viewDiff(rc)
		if diff == "" || time.Now().After(deadline) {
			return n, diff
		}
		time.Sleep(time.Second)
	}
}

func viewDiff(rc *redis.Client) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	far := time.Now().Add(24 * time.Hour)
	for _, name := range logNames() {
		m, err := jobstore.ReadLogged(ctx, rc, name, jobstore.LoggedOptions{})
		if err != nil {
			return n, err.Error()
		}
		for _, st := range jobstore.States() {
			want, err := m.Stale(ctx, st, far, math.MaxInt32)
			if err != nil {
				return n, err.Error()
			}
			got, err := rc.ZRange(ctx, "{"+name+"}job:index:"+string(st), 0, -1).Result()
			if err != nil {
				return n, err.Error()
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				return n, fmt.Sprintf("log %s, %s: the replay holds %d jobs, the view %d", name, st, len(want), len(got))
			}
			n += len(want)
		}
	}
	return n, ""
}

// latticeLog names the logged store's log (-redis-log).
const latticeLog = "lattice"

// countsZero waits up to wait until the store's tenant and worker counts
// and the hosts' active jobs are all zero, and returns what is not.
func (k *checker) countsZero(addrs []string, wait time.Duration) (nonzero []string) {
	deadline := time.Now().Add(wait)
	for {
		nonzero = nonzero[:0]
		counts, err := storeCounts(addrs)
		if err != nil {
			nonzero = append(nonzero, "store: "+err.Error())
		}
		for key, n := range counts {
			if n != 0 {
				nonzero = append(nonzero, fmt.Sprintf("%s=%d", key, n))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hbs, err := k.c.Workers(ctx, time.Second)
		cancel()
		if err != nil {
			nonzero = append(nonzero, "workers: "+err.Error())
		}
		for _, hb := range hbs {
			if hb.GetActiveJobs() != 0 {
				nonzero = append(nonzero, fmt.Sprintf("host %s active_jobs=%d", hb.GetWorkerId(), hb.GetActiveJobs()))
			}
		}
		if len(nonzero) == 0 || time.Now().After(deadline) {
			return nonzero
		}
		time.Sleep(time.Second)
	}
}

// startHog runs n busy loops, each its own process, until the test ends.
func startHog(t *testing.T, n int) {
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	t.Logf("HOG: %d busy loops beside the lattice", n)
}

// hostsRunning counts what a host's log says it held at a moment: the
// attempts it accepted by then whose result was not answered by then.
func hostsRunning(path string, at time.Time) (held []string) {
	lines, err := history.ReadLog(path)
	if err != nil {
		return nil
	}
	open := map[string]bool{}
	for _, l := range lines {
		if l.At.After(at) {
			break
		}
		k := l.Attrs["job_id"] + "/" + l.Attrs["attempt"]
		switch l.Msg {
		case "job accepted":
			open[k] = true
		case "result answered", "result not answered by any scheduler: the job times out there and is retried":
			delete(open, k)
		}
	}
	for k := range open {
		held = append(held, k)
	}
	return held
}

// stranded checks the jobs a host held while it was stopped or cut off
// (from the records the last check read): each attempt dispatched to it
// from just before the fault to its end whose job was retried must have
// had its new attempt run (accepted by a host) and the job must have
// ended by that attempt, not by the host's late result; it logs the
// figures.
func (k *checker) stranded(t *testing.T, worker string, from, to time.Time) {
	t.Helper()
	if from.IsZero() {
		return
	}
	accepted := map[string]bool{} // job/attempt
	late := 0                     // results the host had answered after the fault, of attempts superseded
	var lateOf []history.Answer
	for _, h := range k.hosts {
		lines, err := history.ReadLog(k.l.logPath(h))
		if err != nil {
			t.Fatal(err)
		}
		runs, answers := history.HostHistory(strings.TrimPrefix(h, "host-"), lines)
		for _, r := range runs {
			accepted[fmt.Sprintf("%s/%d", r.Job, r.Attempt)] = true
		}
		if strings.TrimPrefix(h, "host-") == worker {
			for _, a := range answers {
				if a.At.After(to) {
					lateOf = append(lateOf, a)
				}
			}
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	held, retried, newRan := 0, 0, 0
	for id, rec := range k.recs {
		n, heldAt := 0, 0
		for _, e := range rec.GetEvents() {
			if e.GetState() != wardv1.JobState_JOB_STATE_DISPATCHED {
				continue
			}
			n++
			at := time.UnixMilli(e.GetAtUnixMs())
			if e.GetWorkerId() == worker && at.After(from.Add(-5*time.Second)) && at.Before(to) {
				heldAt = n
			}
		}
		if heldAt == 0 {
			continue
		}
		held++
		if n == heldAt {
			continue // not retried: it ended on this host, or its attempt ran to the end there
		}
		retried++
		if rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED {
			if accepted[fmt.Sprintf("%s/%d", id, n)] {
				newRan++
			} else {
				t.Errorf("job %s: attempt %d, after %s's attempt %d, SUCCEEDED with no host having accepted it", id, n, worker, heldAt)
			}
		} else if client.Terminal(rec.GetState()) {
			newRan++ // ended otherwise (cancelled, or failed its retries): the checker judged how
		}
		for _, a := range lateOf {
			if a.Job == id && a.Attempt < n {
				late++
			}
		}
	}
	t.Logf("%s during its fault: %d attempts dispatched to it, %d of their jobs retried, %d of those whose new attempt ran and ended them; %d results it had answered after the fault, of attempts superseded (none ended its job: the checker finds no stale end)",
		worker, held, retried, newRan, late)
}

// waitHolding waits, up to within, until the host whose log is at path
// holds an attempt: one it logged accepting, and whose result no
// scheduler has answered yet. It reads only what the log gains from the
// call on.
func waitHolding(path string, within time.Duration) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return false
	}
	open := map[string]bool{}
	var partial string
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		n, _ := f.Read(buf)
		if n == 0 {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		text := partial + string(buf[:n])
		lines := strings.Split(text, "\n")
		partial = lines[len(lines)-1]
		for _, s := range lines[:len(lines)-1] {
			l, ok := history.ParseLine(s)
			if !ok {
				continue
			}
			key := l.Attrs["job_id"] + "/" + l.Attrs["attempt"]
			switch l.Msg {
			case "job accepted":
				open[key] = true
			case "result answered":
				delete(open, key)
			}
		}
		if len(open) > 0 {
			return true
		}
	}
	return false
}

// lateResults follows the schedulers' counts of results that did not
// move their job — refused as stale (ward_scheduler_refused_reports_total)
// or ignored as late (ward_scheduler_late_updates_total), kind result —
// sampling their metrics every second and adding across restarts (a
// count that went down restarted from 0).
type lateResults struct {
	mu    sync.Mutex
	last  map[string]float64
	total float64
}

func (lr *lateResults) follow(ctx context.Context, l *lattice) {
	lr.last = map[string]float64{}
	go func() {
		for ctx.Err() == nil {
			for _, name := range []string{"scheduler-0", "scheduler-1"} {
				p := l.procs[name]
				if p == nil {
					continue
				}
				v, ok := resultCounts(p.metrics)
				if !ok {
					continue
				}
				lr.mu.Lock()
				if prev, seen := lr.last[name]; !seen || v < prev {
					lr.total += v // a new process counts from 0
				} else {
					lr.total += v - prev
				}
				lr.last[name] = v
				lr.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

func (lr *lateResults) count() int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return int(lr.total)
}

// resultCounts sums a scheduler's refused and late results.
func resultCounts(addr string) (float64, bool) {
	if addr == "" {
		return 0, false
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "ward_scheduler_refused_reports_total{") && !strings.HasPrefix(line, "ward_scheduler_late_updates_total{") {
			continue
		}
		if !strings.Contains(line, `kind="result"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, sc.Err() == nil
}
