package host_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/logtest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// The host's side of signed dispatch, on a running Agent: what it refuses
// never runs and is never reported, each refusal is counted by its reason,
// and the same job signed right runs, so that a refusal cannot come from a
// mistake in the test's job.

// ticketCodes are the reasons a host refuses a dispatch.
var ticketCodes = []reason.Code{reason.TicketUnsigned, reason.TicketForged, reason.TicketMisaddressed,
	reason.TicketExpired, reason.TicketReplayed}

// refusals reads ward_host_dispatches_refused_total by reason.
func refusals() map[reason.Code]float64 {
	n := map[reason.Code]float64{}
	for _, c := range ticketCodes {
		n[c] = testutil.ToFloat64(host.DispatchesRefused.WithLabelValues(string(c)))
	}
	return n
}

// ran reads ward_host_jobs_total of the sleep module ending in status.
func ran(status string) float64 {
	return testutil.ToFloat64(host.JobsRun.WithLabelValues("sleep", status))
}

// ticket is req's ticket for host id, as a scheduler fills it in; each
// call gives a new one (signing stamps it).
func ticket(id string, req *wardv1.JobRequest) *wardv1.DispatchTicket {
	return &wardv1.DispatchTicket{HostId: id, Job: proto.Clone(req).(*wardv1.JobRequest), Module: "sleep",
		SchedulerId: "test", DecisionId: "d-" + req.GetJobId(), BootNonce: bootOf(id)}
}

// publish sends d to h1 as it is.
func (f *fixture) publish(t *testing.T, d *wardv1.Dispatch) {
	t.Helper()
	if err := f.conn.Publish(bus.WorkerJobsSubject("h1"), d); err != nil {
		t.Fatal(err)
	}
}

// refuse sends d for job id to h1, waits until the host counted a refusal,
// and checks that it counted it under code and published nothing for the
// job.
func (f *fixture) refuse(t *testing.T, d *wardv1.Dispatch, id string, code reason.Code) {
	t.Helper()
	before := refusals()
	results, started := f.events.of(id)
	f.publish(t, d)
	total := func(n map[reason.Code]float64) (sum float64) {
		for _, v := range n {
			sum += v
		}
		return sum
	}
	var after map[reason.Code]float64
	poll.Until(t, 30*time.Second, "the host refused a dispatch of "+id, func() bool {
		after = refusals()
		return total(after) > total(before)
	})
	for _, c := range ticketCodes {
		want := 0.0
		if c == code {
			want = 1
		}
		if got := after[c] - before[c]; got != want {
			t.Errorf("ward_host_dispatches_refused_total{reason=%q} rose by %v, want %v", c, got, want)
		}
	}
	if r, s := f.events.of(id); len(r) != len(results) || len(s) != len(started) {
		t.Errorf("a refused dispatch of %s ran: %d results and %d starts, were %d and %d", id, len(r), len(s), len(results), len(started))
	}
}

// runs waits for the n-th result of req's job and checks that it ran, for
// req's attempt, and that the job ran n times in all.
func (f *fixture) runs(t *testing.T, req *wardv1.JobRequest, n int, payload string) {
	t.Helper()
	id := req.GetJobId()
	r := f.events.waitN(t, id, n)[n-1]
	if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetWorkerId() != "h1" || r.GetAttempt() != req.GetAttempt() {
		t.Fatalf("%s: result %v, want SUCCEEDED on h1 for attempt %d", id, r, req.GetAttempt())
	}
	if out := r.GetResult(); r.GetResultPtr() != "" || string(out) != payload {
		t.Errorf("%s: output %q at %q", id, out, r.GetResultPtr())
	}
	results, started := f.events.of(id)
	reported := 0 // results that say a STARTED report went before them
	for _, r := range results {
		if r.GetStartedReported() {
			reported++
		}
	}
	if len(results) != n || len(started) != reported {
		t.Fatalf("%s: %d results (%d of which say a start was reported) and %d starts, want %d results and a start for each that says so",
			id, len(results), reported, len(started), n)
	}
	if r.GetStartedReported() {
		if a := started[len(started)-1].GetAttempt(); a != req.GetAttempt() {
			t.Errorf("%s: started for attempt %d, want %d", id, a, req.GetAttempt())
		}
	}
}

// signWith signs t under key, whatever host it names.
func signWith(t *testing.T, tk *wardv1.DispatchTicket, key []byte, now time.Time) *wardv1.Dispatch {
	t.Helper()
	tk.IssuedUnixMs, tk.ExpiresUnixMs = now.UnixMilli(), now.Add(auth.DefaultTicketTTL).UnixMilli()
	b, err := proto.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return &wardv1.Dispatch{Ticket: b, Signature: m.Sum(nil), KeyId: auth.KeyID(dispatchSecret)}
}

// TestRefusedDispatches: a host with its dispatch key refuses a dispatch
// signed for another host, one addressed to another host, an unsigned
// one, one signed under another secret, one altered after it was signed
// (its memory grant raised), an expired one and a replayed one (the same
// job attempt again, as sent or signed anew): none runs, nothing is
// published for it, and each is counted by its reason. Right after each,
// the same job signed right runs and its result carries its attempt; a new
// attempt of a job run already runs too.
func TestRefusedDispatches(t *testing.T) {
	f := newFixture(t, 1) // one at a time: a dispatch is handled once the one before it was
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	succeeded, failed := ran("SUCCEEDED"), ran("FAILED")
	good := 0
	now := time.Now()
	for _, tc := range []struct {
		name  string
		code  reason.Code
		forge func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch
	}{
		{"signed for another host", reason.TicketForged, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			d, err := signer.Sign(ticket("h2", req), now)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"addressed to another host under this host's key", reason.TicketMisaddressed, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			return signWith(t, ticket("h2", req), auth.HostKey(dispatchSecret, "h1"), now)
		}},
		{"unsigned", reason.TicketUnsigned, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			d, err := auth.Unsigned(ticket("h1", req), now)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"signed under another secret", reason.TicketForged, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			d, err := auth.NewSigner([]byte("not the schedulers' secret"), 0).Sign(ticket("h1", req), now)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"altered after signing", reason.TicketForged, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			d, err := signer.Sign(ticket("h1", req), now)
			if err != nil {
				t.Fatal(err)
			}
			tk := &wardv1.DispatchTicket{}
			if err := proto.Unmarshal(d.GetTicket(), tk); err != nil {
				t.Fatal(err)
			}
			tk.GetJob().GetConstraints().GetGrants().MemoryLimitBytes = 8 << 30
			b, err := proto.Marshal(tk)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(b, d.GetTicket()) {
				t.Fatal("the ticket is unchanged")
			}
			d.Ticket = b
			return d
		}},
		{"input swapped after signing", reason.TicketForged, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			// The context a dispatch carries is the submitted one, under
			// the signature: other bytes are refused, not run.
			req = proto.Clone(req).(*wardv1.JobRequest)
			req.Payload = []byte("1ms")
			d, err := signer.Sign(ticket("h1", req), now)
			if err != nil {
				t.Fatal(err)
			}
			tk := &wardv1.DispatchTicket{}
			if err := proto.Unmarshal(d.GetTicket(), tk); err != nil {
				t.Fatal(err)
			}
			tk.GetJob().Payload = []byte("9s")
			if d.Ticket, err = proto.Marshal(tk); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"expired", reason.TicketExpired, func(t *testing.T, req *wardv1.JobRequest) *wardv1.Dispatch {
			d, err := signer.Sign(ticket("h1", req), now.Add(-time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := f.create(t, "refused-"+strings.ReplaceAll(tc.name, " ", "-"), "1ms")
			req.Attempt = 2
			req.Constraints = &wardv1.Constraints{Grants: &wardv1.Grants{MemoryLimitBytes: 256 << 20}}
			f.refuse(t, tc.forge(t, req), req.GetJobId(), tc.code)
			// The same job attempt, signed right for this host: the refusal
			// was the ticket's, and a refused ticket is not one seen.
			f.publish(t, signed(t, "h1", req))
			f.runs(t, req, 1, "1ms")
		})
		good++
	}

	t.Run("replayed", func(t *testing.T) {
		req := f.create(t, "replayed", "1ms")
		req.Attempt = 2
		d := signed(t, "h1", req)
		f.publish(t, d)
		f.runs(t, req, 1, "1ms")
		f.refuse(t, d, req.GetJobId(), reason.TicketReplayed)                    // the very dispatch again
		f.refuse(t, signed(t, "h1", req), req.GetJobId(), reason.TicketReplayed) // the attempt signed anew
		// The job's next attempt is a new ticket.
		req.Attempt = 3
		f.publish(t, signed(t, "h1", req))
		f.runs(t, req, 2, "1ms")
	})
	good += 2

	if got := ran("SUCCEEDED") - succeeded; got != float64(good) {
		t.Errorf("the module ran %v jobs, want %d: a refused dispatch ran", got, good)
	}
	if got := ran("FAILED") - failed; got != 0 {
		t.Errorf("%v jobs failed", got)
	}
}

// TestDispatchForAnotherModule: a signed ticket for a version of the
// module other than the one the host holds (swapped in since the scheduler
// placed the job), or for another module, does not run: its result is
// FAILED module_unavailable, for its attempt, with no output. The ticket
// for the version held runs.
func TestDispatchForAnotherModule(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	digest := f.agent.Modules()["sleep"]
	if digest == "" {
		t.Fatalf("the host holds %v", f.agent.Modules())
	}
	succeeded := ran("SUCCEEDED")
	req := f.create(t, "versioned", "1ms")
	for i, tc := range []struct {
		name, module, digest string
		code                 reason.Code
	}{
		{"another version", "sleep", "sha256:" + strings.Repeat("0", 64), reason.ModuleUnavailable},
		{"another module", "echo", "", reason.ModuleUnavailable},
		{"the version held", "sleep", digest, ""},
	} {
		req.Attempt = int32(i + 1)
		tk := ticket("h1", req)
		tk.Module, tk.ModuleDigest = tc.module, tc.digest
		d, err := signer.Sign(tk, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f.publish(t, d)
		r := f.events.waitN(t, req.GetJobId(), i+1)[i]
		if r.GetAttempt() != req.GetAttempt() || r.GetErrorCode() != string(tc.code) {
			t.Fatalf("%s: result for attempt %d, code %q (%s); want attempt %d, code %q",
				tc.name, r.GetAttempt(), r.GetErrorCode(), r.GetErrorMessage(), req.GetAttempt(), tc.code)
		}
		if tc.code != "" {
			if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetResultPtr() != "" || len(r.GetResult()) != 0 {
				t.Fatalf("%s: %v", tc.name, r)
			}
			continue
		}
		f.runs(t, req, i+1, "1ms")
		if r.GetModuleDigest() != digest {
			t.Errorf("ran %s %s, want %s", r.GetModule(), r.GetModuleDigest(), digest)
		}
	}
	if got := ran("SUCCEEDED") - succeeded; got != 1 {
		t.Errorf("the module ran %v times, want once", got)
	}
}

// TestInsecureHost: a host without a dispatch key (a system run
// --insecure) runs an unsigned dispatch, and still refuses one addressed
// to another host, an expired one and a replayed one.
func TestInsecureHost(t *testing.T) {
	f := newFixtureKey(t, 1, nil)
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	unsigned := func(t *testing.T, host string, req *wardv1.JobRequest, now time.Time) *wardv1.Dispatch {
		t.Helper()
		d, err := auth.Unsigned(ticket(host, req), now)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	req := f.create(t, "insecure", "1ms")
	f.refuse(t, unsigned(t, "h2", req, time.Now()), req.GetJobId(), reason.TicketMisaddressed)
	f.refuse(t, unsigned(t, "h1", req, time.Now().Add(-time.Hour)), req.GetJobId(), reason.TicketExpired)
	d := unsigned(t, "h1", req, time.Now())
	f.publish(t, d)
	f.runs(t, req, 1, "1ms")
	f.refuse(t, d, req.GetJobId(), reason.TicketReplayed)
}

// TestHostSubjects: a host subscribes to its own subjects only (its
// dispatches, the hosts' cancels, worker pings: no topic, since jobs reach
// it only as signed dispatches), its host credential allows all it does (a
// job run, a cancel heard, a ping answered, heartbeats) with no refusal
// from the server, and its heartbeats carry that credential.
func TestHostSubjects(t *testing.T) {
	f := newFixture(t, 1)
	refused := func() float64 {
		mfs, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "ward_bus_refused_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	before := refused()
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := f.create(t, "subjects", "1ms")
	dispatch(t, f.conn, "h1", req)
	f.runs(t, req, 1, "1ms")
	cancelJob(t, f.conn, "nobody")
	// `ward workers` is an admin's.
	admin := connectAs(t, f.nats, auth.Admin, "admin")
	m, err := admin.NATS().Request(bus.SubjectWorkerPing, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	hb := &wardv1.Heartbeat{}
	if err := proto.Unmarshal(m.Data, hb); err != nil || hb.GetWorkerId() != "h1" {
		t.Fatalf("ping answered %v %v", hb, err)
	}
	// The heartbeat carries the host's credential, by which schedulers
	// admit it.
	if id, err := auth.ParseIdentity(hb.GetCredential()); err != nil || hb.GetCredential() != f.cred || id.Role != auth.Host || id.Name != "h1" {
		t.Errorf("the heartbeat's credential is %+v (%v)", id, err)
	}

	cz, err := f.nats.Server.Connz(&server.ConnzOptions{Subscriptions: true})
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	found := false
	for _, c := range cz.Conns {
		if c.Name == "host:h1" {
			found = true
			for _, s := range c.Subs {
				// The answers to its own requests (its results, sent until
				// a scheduler answers) come to its own inbox.
				if !strings.HasPrefix(s, auth.InboxPrefix(auth.Host, "h1")+".") {
					subs = append(subs, s)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no connection host:h1 among %d", len(cz.Conns))
	}
	slices.Sort(subs)
	want := []string{bus.SubjectHostCancel, bus.SubjectWorkerPing, bus.WorkerJobsSubject("h1")}
	slices.Sort(want)
	if !slices.Equal(subs, want) {
		t.Errorf("the host subscribes to %v, want %v", subs, want)
	}
	if got := refused() - before; got != 0 {
		t.Errorf("the server refused %v publishes or subscriptions", got)
	}
}

// TestStartedReport: a job that ends within the started delay sends no
// STARTED report, and its result says so; a longer one reports its start
// while it runs, before its result, which says that too. Either carries
// its output in the result.
//
// Each case runs on a host whose started delay puts the job's end clearly
// on one side of it, so that a loaded machine cannot move it to the other:
// an hour for the quick job, a millisecond for the slow one.
func TestStartedReport(t *testing.T) {
	for _, tc := range []struct {
		id, payload string
		delay       time.Duration
		reported    bool
	}{{"quick", "1ms", time.Hour, false}, {"slow", "400ms", time.Millisecond, true}} {
		f := newFixtureWith(t, 2, auth.HostKey(dispatchSecret, "h1"), func(c *host.Config) { c.StartedDelay = tc.delay })
		if err := f.agent.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		req := f.create(t, tc.id, tc.payload)
		dispatch(t, f.conn, "h1", req)
		if tc.reported {
			poll.Until(t, 30*time.Second, "the 400 ms job reports its start", func() bool { return f.events.started(req.GetJobId()) })
			if results, _ := f.events.of(req.GetJobId()); len(results) != 0 {
				t.Fatalf("the 400 ms job's result came before its STARTED report")
			}
		}
		r := f.events.wait(t, req.GetJobId())
		if _, started := f.events.of(req.GetJobId()); r.GetStartedReported() != tc.reported || len(started) != map[bool]int{false: 0, true: 1}[tc.reported] {
			t.Errorf("%s job: started reported %v with %d STARTED reports; want %v", tc.payload, r.GetStartedReported(), len(started), tc.reported)
		}
		if b := r.GetResult(); string(b) != tc.payload || r.GetResultPtr() != "" {
			t.Errorf("%s job: output %q at %q", tc.payload, b, r.GetResultPtr())
		}
	}
}

// TestResultSentUntilAnswered: a host holds no job store, so a result no
// scheduler answered (lost on the way, or not stored) is sent again, the
// same result for the same attempt, until one answers; then no more.
// Answered by its number in a batch, as schedulers answer, or on its
// reply subject, as a scheduler of an earlier Ward does.
func TestResultSentUntilAnswered(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(map[bool]string{false: "batch", true: "single"}[single], func(t *testing.T) { resultSentUntilAnswered(t, single) })
	}
}

func resultSentUntilAnswered(t *testing.T, single bool) {
	// Unanswered tries wait a fifth of a second, not five.
	t.Cleanup(host.SetResultTry(200 * time.Millisecond))
	f := newFixture(t, 1)
	f.events.single.Store(single)
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(host.ResultResends)
	f.events.unanswered.Store(2)
	req := f.create(t, "resent", "1ms")
	dispatch(t, f.conn, "h1", req)
	rs := f.events.waitN(t, req.GetJobId(), 3)
	for i, r := range rs {
		if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetAttempt() != 1 || string(r.GetResult()) != "1ms" {
			t.Errorf("send %d: %v", i+1, r)
		}
	}
	poll.Until(t, 10*time.Second, "the resends counted", func() bool { return testutil.ToFloat64(host.ResultResends)-before == 2 })
	// Answered the third time: the next job's result is the only other.
	next := f.create(t, "next", "1ms")
	dispatch(t, f.conn, "h1", next)
	f.events.wait(t, next.GetJobId())
	if results, _ := f.events.of(req.GetJobId()); len(results) != 3 {
		t.Errorf("the answered result was sent %d times in all, want 3", len(results))
	}
}

// TestStartedAtOnce: with a negative started delay, every job reports
// its start before it runs, however short, and its result says so.
func TestStartedAtOnce(t *testing.T) {
	f := newFixtureWith(t, 1, auth.HostKey(dispatchSecret, "h1"), func(c *host.Config) { c.StartedDelay = -1 })
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := f.create(t, "at-once", "1ms")
	dispatch(t, f.conn, "h1", req)
	r := f.events.wait(t, req.GetJobId())
	if _, started := f.events.of(req.GetJobId()); !r.GetStartedReported() || len(started) != 1 {
		t.Errorf("a 1 ms job with StartedDelay < 0: started reported %v, %d STARTED reports; want both", r.GetStartedReported(), len(started))
	}
}

// TestInlineContext: a ticket carries the job's context (the host reads
// no job store), and the host runs those bytes only if they are the size
// the policy judged; a ticket that points at another job's context is
// refused whatever it carries.
func TestInlineContext(t *testing.T) {
	f := newFixture(t, 1)
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := f.create(t, "inline", "2ms")
	dispatch(t, f.conn, "h1", req)
	f.runs(t, req, 1, "2ms")

	other := f.create(t, "other", "3ms")
	other.ContextPtr = jobstore.ContextPtr("someone-else")
	dispatch(t, f.conn, "h1", other)
	if r := f.events.wait(t, "other"); r.GetErrorCode() != string(reason.ContextUnavailable) {
		t.Errorf("a ticket pointing at another job's context: %s %q", r.GetErrorCode(), r.GetErrorMessage())
	}
	longer := f.create(t, "longer", "3ms")
	longer.ContextSize = proto.Int64(2)
	dispatch(t, f.conn, "h1", longer)
	if r := f.events.wait(t, "longer"); r.GetErrorCode() != string(reason.InputUnavailable) || !strings.Contains(r.GetErrorMessage(), "not the 2 the policy judged") {
		t.Errorf("a context of another size than judged: %s %q", r.GetErrorCode(), r.GetErrorMessage())
	}
}

// TestLargeResultInParts: a result over bus.InlineResultMax goes to the
// schedulers in parts (a host writes no tenant's bucket), in order, each
// sent again until a scheduler answers it, and the result then names the
// attempt's object with its digest, size and parts. A part refused for
// good (the job is not this host's any more) stops the sending, and the
// job fails result_unavailable.
func TestLargeResultInParts(t *testing.T) {
	f := newFixture(t, 1)
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	type part struct {
		job   string
		index uint32
		size  int
	}
	var (
		mu    sync.Mutex
		parts []part
		data  = map[string][]byte{}
		next  = map[string]uint32{} // a job's next part to store
		fails = 1                   // the first part's first try: a store failure
	)
	sub, err := f.conn.NATS().Subscribe(bus.ResultPartSubject("*"), func(m *nats.Msg) {
		q := &wardv1.ResultPart{}
		if err := proto.Unmarshal(m.Data, q); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		reply := &wardv1.ResultPartReply{}
		switch {
		case q.GetJobId() == "taken":
			reply.Error, reply.Code = "job taken attempt 1 is not running on h1", string(reason.ResultUnavailable)
		case fails > 0:
			fails--
			reply.Error = "job store unavailable"
		case q.GetIndex() < next[q.GetJobId()]:
			// Sent again, already stored: stored once.
		default:
			data[q.GetJobId()] = append(data[q.GetJobId()], q.GetData()...)
			next[q.GetJobId()]++
		}
		parts = append(parts, part{q.GetJobId(), q.GetIndex(), len(q.GetData())})
		mu.Unlock()
		b, _ := proto.Marshal(reply)
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	payload := "1ms" + strings.Repeat(" ", bus.ResultPartMax+100<<10)
	req := f.create(t, "big", payload)
	dispatch(t, f.conn, "h1", req)
	r := f.events.wait(t, "big")
	if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || len(r.GetResult()) != 0 ||
		r.GetResultPtr() != bus.ResultObjectPtr("t", "big", 1) || r.GetResultDigest() != bus.ContentDigest([]byte(payload)) ||
		r.GetResultSize() != int64(len(payload)) || r.GetResultParts() != 2 {
		t.Fatalf("the large result: %s %s %q, at %q, digest %q, %d bytes in %d parts", r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(),
			r.GetResultPtr(), r.GetResultDigest(), r.GetResultSize(), r.GetResultParts())
	}
	mu.Lock()
	got, sent := data["big"], slices.Clone(parts)
	mu.Unlock()
	if string(got) != payload {
		t.Errorf("the parts stored hold %d bytes, not the %d of the result", len(got), len(payload))
	}
	want := []part{{"big", 0, bus.ResultPartMax}, {"big", 0, bus.ResultPartMax}, {"big", 1, len(payload) - bus.ResultPartMax}}
	if !slices.Equal(sent, want) {
		t.Errorf("parts sent %v, want %v (the first again after the store failed)", sent, want)
	}

	taken := f.create(t, "taken", payload)
	dispatch(t, f.conn, "h1", taken)
	r = f.events.wait(t, "taken")
	if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != string(reason.ResultUnavailable) || r.GetResultPtr() != "" ||
		!strings.Contains(r.GetErrorMessage(), "not running on h1") {
		t.Fatalf("a result whose part was refused: %s %s %q at %q", r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), r.GetResultPtr())
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(parts) - len(sent); n != 1 {
		t.Errorf("%d parts sent of a job whose first part was refused for good, want 1", n)
	}
}

// TestResultSentUntilASchedulerListens: a result sent where no scheduler
// listens (its shard's owner not there yet) is answered by the server at
// once, "no responders", and sent again, sooner than an unanswered one
// would be; once a scheduler listens, it takes it and answers.
func TestResultSentUntilASchedulerListens(t *testing.T) {
	var log logtest.Buffer
	f := newFixtureWith(t, 1, auth.HostKey(dispatchSecret, "h1"), func(c *host.Config) { c.Logger = log.Logger(slog.LevelInfo) })
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := f.create(t, "owner-away", "1ms")
	req.ReportShard = "9" // sys.job.result.h1.9: nobody subscribes yet
	dispatch(t, f.conn, "h1", req)
	poll.Until(t, 30*time.Second, "the result sent again, no responders", func() bool {
		return strings.Contains(log.String(), "result not answered yet") && strings.Contains(log.String(), "no responders")
	})
	got := make(chan *wardv1.JobResult, 16)
	sub, err := f.conn.NATS().Subscribe(bus.ReportSubject(bus.ResultSubject("h1"), "9"), func(m *nats.Msg) {
		r := &wardv1.JobResult{}
		if err := proto.Unmarshal(m.Data, r); err != nil {
			t.Error(err)
			return
		}
		if seq, ok := bus.ResultAckSeq("h1", m.Reply); ok {
			_ = f.conn.Publish(bus.ResultAcksSubject("h1"), &wardv1.ResultAcks{Seqs: []uint64{seq}})
		} else {
			t.Errorf("reply subject %q: not h1's numbered one", m.Reply)
		}
		got <- r
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	select {
	case r := <-got:
		if r.GetJobId() != "owner-away" || r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("the result taken: %v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the result was not sent again once a scheduler listened")
	}
	poll.Until(t, 30*time.Second, "the host told it was answered", func() bool {
		return strings.Contains(log.String(), "result answered") && strings.Contains(log.String(), "owner-away")
	})
}
