// Package history checks a run of Ward against what its parts say they
// did, in the spirit of Jepsen and porcupine: the submitters' log of the
// submits Ward acknowledged, the hosts' logs of every (job, attempt) they
// accepted to run and every result a scheduler answered, and the store's
// record and event log of each job. Check asserts:
//
//   - every acknowledged job ends, within its timeouts (Input.Bound) plus
//     the recovery of the faults it lived through;
//   - no (job, attempt) is accepted twice, on one host or two, and no
//     attempt is accepted that the store never dispatched;
//   - no job runs after it ended CANCELLED: no attempt dispatched after
//     the cancel is accepted, and none is accepted later than a dispatch
//     in flight at the cancel could have arrived (Input.CancelSlack);
//   - an attempt above 1 is dispatched only after the job's events record
//     a fault, a timeout or a failure of the one before (a PENDING event
//     with reason retry or requeued);
//   - a job that ended on a host's result ended on the result of the host
//     its last attempt was dispatched to: a late result of an earlier
//     attempt never ends it;
//   - every job's event chain verifies (jobstore.VerifyEvents, as `ward
//     jobs verify` does).
//
// The lattice (internal/testing/lattice) runs it after every fault.
package history

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Line is one slog text line: its time, level, message and attributes.
type Line struct {
	At    time.Time
	Level string
	Msg   string
	Attrs map[string]string
}

// ParseLine parses a line of slog's text handler (key=value, values
// quoted when they hold spaces or quotes); ok is false for other lines.
func ParseLine(s string) (Line, bool) {
	l := Line{Attrs: map[string]string{}}
	for s != "" {
		s = strings.TrimLeft(s, " ")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			break
		}
		key := s[:eq]
		if strings.ContainsAny(key, " \"") {
			break
		}
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			// A Go-quoted string: find its closing quote.
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return l, false
			}
			v, err := strconv.Unquote(s[:end+1])
			if err != nil {
				return l, false
			}
			val, s = v, s[end+1:]
		} else {
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				sp = len(s)
			}
			val, s = s[:sp], s[sp:]
		}
		switch key {
		case "time":
			t, err := time.Parse(time.RFC3339Nano, val)
			if err != nil {
				return l, false
			}
			l.At = t
		case "level":
			l.Level = val
		case "msg":
			l.Msg = val
		default:
			l.Attrs[key] = val
		}
	}
	return l, !l.At.IsZero() && l.Msg != ""
}

// ReadLog reads the slog lines of a process's log file (other lines, such
// as a panic's, are skipped).
func ReadLog(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		if l, ok := ParseLine(sc.Text()); ok {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// Ack is a submit Ward acknowledged.
type Ack struct {
	Job, Topic string
	At         time.Time
}

// AckLine is the submitters' log line for a (the form ReadAcks reads).
func AckLine(a Ack) string {
	return fmt.Sprintf("ack %s %s %d\n", a.Job, a.Topic, a.At.UnixMilli())
}

// ReadAcks reads a submitters' log of AckLine lines; a job acknowledged
// twice (a resubmission with its idempotency key) counts once, at its
// first acknowledgement.
func ReadAcks(path string) ([]Ack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	seen := map[string]bool{}
	var out []Ack
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 || fs[0] != "ack" {
			continue
		}
		ms, err := strconv.ParseInt(fs[3], 10, 64)
		if err != nil || seen[fs[1]] {
			continue
		}
		seen[fs[1]] = true
		out = append(out, Ack{Job: fs[1], Topic: fs[2], At: time.UnixMilli(ms)})
	}
	return out, sc.Err()
}

// Run is a (job, attempt) a host accepted to run ("job accepted").
type Run struct {
	Host, Job string
	Attempt   int
	At        time.Time
}

// Answer is a result of a (job, attempt) that a scheduler answered
// ("result answered"): applied, or refused for good.
type Answer struct {
	Host, Job    string
	Attempt      int
	Status, Code string
	Tries        int
	At           time.Time
}

// HostHistory reads what a host's log says it ran: the attempts it
// accepted and the results answered.
func HostHistory(host string, lines []Line) (runs []Run, answers []Answer) {
	for _, l := range lines {
		att, _ := strconv.Atoi(l.Attrs["attempt"])
		switch l.Msg {
		case "job accepted":
			runs = append(runs, Run{Host: host, Job: l.Attrs["job_id"], Attempt: att, At: l.At})
		case "result answered":
			tries, _ := strconv.Atoi(l.Attrs["tries"])
			answers = append(answers, Answer{Host: host, Job: l.Attrs["job_id"], Attempt: att, Status: l.Attrs["status"],
				Code: l.Attrs["code"], Tries: tries, At: l.At})
		}
	}
	return runs, answers
}

// Event is one event of a job's stored log.
type Event struct {
	State, Reason, Message, Worker string
	At                             time.Time
}

// Record is the store's view of a job.
type Record struct {
	// Missing says the store had no record of the job (Err says why).
	Missing bool
	Err     error
	State   string // without the JOB_STATE_ prefix
	Reason  string
	Attempt int
	Events  []Event
	// ChainErr is the event chain's verification error, if any.
	ChainErr error
}

// Terminal says whether a state is an end.
func Terminal(state string) bool {
	switch state {
	case "SUCCEEDED", "FAILED", "TIMEOUT", "CANCELLED", "DENIED":
		return true
	}
	return false
}

// Fault is a fault's window: from its injection to the end of its
// injection (a process restarted, a signal undone), with the recovery
// allowed after it.
type Fault struct {
	Name     string
	From, To time.Time
	Recovery time.Duration
}

// Input is what Check checks.
type Input struct {
	Acks    []Ack
	Runs    []Run
	Answers []Answer
	Records map[string]*Record
	// Now is when the check runs: a job not ended is lost once
	// Now is past its ack plus Bound plus the faults' allowance.
	Now time.Time
	// Bound is the longest a job may take by its timeouts and retry
	// policy, with no fault.
	Bound time.Duration
	// Faults are the faults so far: a job that lived through one may take
	// its length and recovery longer.
	Faults []Fault
	// CancelSlack is how long after a job's CANCELLED event a dispatch
	// published before the cancel may still arrive and be accepted.
	CancelSlack time.Duration
}

// Findings is what Check found: figures, and each violation by job.
type Findings struct {
	Jobs, Ended, InFlight int
	// Attempts is how many (job, attempt) hosts accepted; Retried how
	// many jobs ran more than one attempt; Cancelled how many ended
	// CANCELLED; CancelRaced how many attempts were accepted after the
	// cancel, within CancelSlack (a dispatch in flight), and stopped.
	Attempts, Retried, Cancelled, CancelRaced int
	// Answers is how many results schedulers answered; Resent how many
	// of those took more than one try.
	Answers, Resent int
	// Slowest is the longest from an ack to the job's end.
	Slowest time.Duration

	Lost           []string // not ended, past the bound
	Late           []string // ended past the bound
	Duplicated     []string // a (job, attempt) accepted more than once
	Phantom        []string // an attempt accepted that the store never dispatched
	RanAfterCancel []string
	Unexplained    []string // an attempt > 1 with no fault, timeout or failure before it
	StaleEnd       []string // ended on a result from a host not holding its last attempt
	BadChain       []string
	Missing        []string // acknowledged, but the store has no record
}

// Violations is how many violations f holds.
func (f *Findings) Violations() int {
	return len(f.Lost) + len(f.Late) + len(f.Duplicated) + len(f.Phantom) + len(f.RanAfterCancel) + len(f.Unexplained) +
		len(f.StaleEnd) + len(f.BadChain) + len(f.Missing)
}

// allowance is how much longer than bound a job acknowledged at at may
// take, given the faults that overlap its life until until.
func allowance(faults []Fault, at, until time.Time) time.Duration {
	var d time.Duration
	for _, f := range faults {
		if f.From.Before(until) && f.To.Add(f.Recovery).After(at) {
			d += f.To.Sub(f.From) + f.Recovery
		}
	}
	return d
}

// Check checks in.
func Check(in Input) *Findings {
	f := &Findings{Jobs: len(in.Acks)}
	type key struct {
		job     string
		attempt int
	}
	accepted := map[key][]Run{}
	byJob := map[string][]Run{}
	for _, r := range in.Runs {
		k := key{r.Job, r.Attempt}
		accepted[k] = append(accepted[k], r)
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	f.Attempts = len(accepted)
	f.Answers = len(in.Answers)
	for _, a := range in.Answers {
		if a.Tries > 1 {
			f.Resent++
		}
	}
	for _, k := range slices.SortedFunc(func(yield func(key) bool) {
		for k := range accepted {
			if !yield(k) {
				return
			}
		}
	}, func(a, b key) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }) {
		if rs := accepted[k]; len(rs) > 1 {
			var where []string
			for _, r := range rs {
				where = append(where, fmt.Sprintf("%s at %s", r.Host, r.At.Format("15:04:05.000")))
			}
			f.Duplicated = append(f.Duplicated, fmt.Sprintf("%s attempt %d accepted %d times: %s", k.job, k.attempt, len(rs), strings.Join(where, ", ")))
		}
	}
	for _, a := range in.Acks {
		rec := in.Records[a.Job]
		if rec == nil || rec.Missing {
			f.Missing = append(f.Missing, fmt.Sprintf("%s (%s): %v", a.Job, a.Topic, rec))
			continue
		}
		if rec.ChainErr != nil {
			f.BadChain = append(f.BadChain, fmt.Sprintf("%s: %v", a.Job, rec.ChainErr))
		}
		// The events: each attempt's dispatch, what came before it, the end.
		var (
			dispatched  int
			lastWorker  string
			explained   = true
			cancelAt    time.Time
			cancelAfter int // attempts dispatched before the cancel
			end         *Event
		)
		for i := range rec.Events {
			e := &rec.Events[i]
			switch {
			case e.State == "DISPATCHED":
				dispatched++
				if dispatched > 1 && !explained {
					f.Unexplained = append(f.Unexplained, fmt.Sprintf("%s: attempt %d dispatched at %s with no fault, timeout or failure recorded since attempt %d",
						a.Job, dispatched, e.At.Format("15:04:05.000"), dispatched-1))
				}
				explained, lastWorker = false, e.Worker
			case e.State == "PENDING" && (e.Reason == "retry" || e.Reason == "requeued"):
				explained = true
			case Terminal(e.State) && end == nil:
				end = e
				if e.State == "CANCELLED" {
					cancelAt, cancelAfter = e.At, dispatched
				}
			}
		}
		if dispatched > 1 {
			f.Retried++
		}
		for _, r := range byJob[a.Job] {
			if r.Attempt > dispatched || r.Attempt < 1 {
				f.Phantom = append(f.Phantom, fmt.Sprintf("%s attempt %d accepted on %s at %s: the store dispatched %d",
					a.Job, r.Attempt, r.Host, r.At.Format("15:04:05.000"), dispatched))
			}
		}
		if end == nil {
			until := in.Now
			if in.Now.Sub(a.At) > in.Bound+allowance(in.Faults, a.At, until) {
				f.Lost = append(f.Lost, fmt.Sprintf("%s (%s) acknowledged at %s, %s %s after %s", a.Job, a.Topic, a.At.Format("15:04:05.000"),
					rec.State, rec.Reason, in.Now.Sub(a.At).Round(time.Second)))
			} else {
				f.InFlight++
			}
			continue
		}
		f.Ended++
		took := end.At.Sub(a.At)
		f.Slowest = max(f.Slowest, took)
		if took > in.Bound+allowance(in.Faults, a.At, end.At) {
			f.Late = append(f.Late, fmt.Sprintf("%s (%s) ended %s %s after its acknowledgement, past %s and its faults' allowance",
				a.Job, a.Topic, end.State, took.Round(time.Second), in.Bound))
		}
		if (end.State == "SUCCEEDED" || end.State == "FAILED") && end.Worker != "" && dispatched > 0 && end.Worker != lastWorker {
			f.StaleEnd = append(f.StaleEnd, fmt.Sprintf("%s ended %s by %s, but its last attempt (%d) was dispatched to %s",
				a.Job, end.State, end.Worker, dispatched, lastWorker))
		}
		if end.State == "CANCELLED" {
			f.Cancelled++
			for _, r := range byJob[a.Job] {
				switch {
				case r.Attempt > cancelAfter:
					f.RanAfterCancel = append(f.RanAfterCancel, fmt.Sprintf("%s attempt %d accepted on %s at %s: dispatched after the job was cancelled at %s",
						a.Job, r.Attempt, r.Host, r.At.Format("15:04:05.000"), cancelAt.Format("15:04:05.000")))
				case r.At.After(cancelAt.Add(in.CancelSlack)):
					f.RanAfterCancel = append(f.RanAfterCancel, fmt.Sprintf("%s attempt %d accepted on %s at %s, %s after the job was cancelled",
						a.Job, r.Attempt, r.Host, r.At.Format("15:04:05.000"), r.At.Sub(cancelAt).Round(time.Millisecond)))
				case r.At.After(cancelAt):
					f.CancelRaced++
				}
			}
		}
	}
	return f
}

// String gives the figures and the first violations of each kind.
func (f *Findings) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d jobs acknowledged, %d ended (slowest %s), %d in flight; %d (job, attempt) accepted by hosts, %d jobs retried, %d cancelled (%d attempts accepted while their cancel was in flight); %d results answered (%d after more than one try); %d violations",
		f.Jobs, f.Ended, f.Slowest.Round(time.Second), f.InFlight, f.Attempts, f.Retried, f.Cancelled, f.CancelRaced, f.Answers, f.Resent, f.Violations())
	for _, v := range []struct {
		what string
		ids  []string
	}{
		{"lost (not ended past the bound)", f.Lost}, {"ended late", f.Late}, {"duplicated (a (job, attempt) run twice)", f.Duplicated},
		{"an attempt the store never dispatched", f.Phantom}, {"ran after cancelled", f.RanAfterCancel},
		{"a retry with no fault, timeout or failure", f.Unexplained}, {"ended by a stale result", f.StaleEnd},
		{"event chain broken", f.BadChain}, {"acknowledged, no record", f.Missing},
	} {
		if len(v.ids) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %d", v.what, len(v.ids))
		for _, s := range v.ids[:min(5, len(v.ids))] {
			fmt.Fprintf(&b, "\n    %s", s)
		}
	}
	return b.String()
}
