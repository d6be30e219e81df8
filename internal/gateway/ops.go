package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/audit"
)

// DrainReply is POST /v1/hosts/{id}/drain's and undrain's answer.
type DrainReply struct {
	WorkerID string `json:"worker_id"`
	// Drained is whether the host is drained now; Changed whether this
	// call changed it (false: it already was as asked).
	Drained bool `json:"drained"`
	Changed bool `json:"changed"`
	// Running is how many jobs the host holds, as the scheduler that
	// answered knows: they finish there.
	Running int32 `json:"running"`
	// Live is whether a host of that name heartbeats, as the scheduler
	// that answered knows (absent from a scheduler older than it): a drain
	// of a name none has is kept, for a host that joins under it.
	Live *bool `json:"live,omitempty"`
}

// opsAPI is the hosts' endpoints (/v1/hosts, drain and undrain) and the
// job store's counts (/v1/stats), asked on the admin's client.
type opsAPI struct {
	deadline
	client *client.Client
	audit  *auditTrail
	log    *slog.Logger
}

func (o *opsAPI) mount(api mountFunc) {
	api("GET", "/v1/hosts", ScopeRead, o.hosts)
	api("POST", "/v1/hosts/{id}/drain", ScopeAdmin, o.drainHost(false))
	api("POST", "/v1/hosts/{id}/undrain", ScopeAdmin, o.drainHost(true))
	api("GET", "/v1/stats", ScopeAdmin, o.stats)
}

// hosts lists the live hosts. A tenant's key sees their capacity, load
// and modules; an admin's their labels and credentials too. A host an
// operator drained (POST /v1/hosts/{id}/drain) carries
// drained_at_unix_ms, from the schedulers' status, asked at the same
// time as the hosts; "drained" names every drained host, live or not.
func (o *opsAPI) hosts(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := o.ctx(r)
	defer cancel()
	var drained map[string]int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		drained = o.drained(ctx)
	}()
	hbs, err := o.client.Workers(ctx, hostWindow)
	<-done
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(hbs))
	for _, hb := range hbs {
		v := apijson.Of(hb)
		if !p.Admin() {
			delete(v, "credential")
			delete(v, "labels")
		}
		if at, ok := drained[hb.GetWorkerId()]; ok {
			v["drained_at_unix_ms"] = at
		}
		out = append(out, v)
	}
	return map[string]any{"hosts": out, "drained": drained}, nil
}

// drained are the hosts an operator drained, with when, as the scheduler
// replicas that answer within hostWindow say (each reads them from the
// store); none when none answers.
func (o *opsAPI) drained(ctx context.Context) map[string]int64 {
	out := map[string]int64{}
	sts, err := o.client.Schedulers(ctx, hostWindow)
	if err != nil {
		o.log.Debug("the schedulers' status (drained hosts) was not read", "err", err)
		return out
	}
	for _, st := range sts {
		for w, at := range st.GetDrained() {
			out[w] = max(out[w], at)
		}
	}
	return out
}

// drainHost drains host {id} (ward workers drain): no scheduler places a
// new job on it until it is undrained, while the jobs it runs finish. The
// drain is kept in the job store; the scheduler audits it with the
// gateway's credential, and the gateway with the key (host.drain,
// host.undrain).
func (o *opsAPI) drainHost(undrain bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
		out, err := o.setDrain(r, p, r.PathValue("id"), undrain)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// setDrain drains or undrains host id for p, and audits a change.
func (o *opsAPI) setDrain(r *http.Request, p Principal, id string, undrain bool) (DrainReply, error) {
	if strings.TrimSpace(id) == "" {
		return DrainReply{}, errorf(http.StatusBadRequest, reason.BadRequest, "name the host")
	}
	ctx, cancel := o.ctx(r)
	defer cancel()
	rep, err := o.client.DrainHost(ctx, id, undrain)
	if err != nil {
		if strings.Contains(err.Error(), "store unavailable") {
			return DrainReply{}, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err)
		}
		return DrainReply{}, err
	}
	if rep.GetChanged() {
		action := audit.HostDrain
		if undrain {
			action = audit.HostUndrain
		}
		o.audit.record(ctx, p, action, id, nil)
	}
	return DrainReply{WorkerID: id, Drained: !undrain, Changed: rep.GetChanged(), Running: rep.GetRunning(), Live: rep.Live}, nil
}

// StatsReply is GET /v1/stats's answer: the job store's exact counts by
// state (every state, 0 included), and with steps, how many jobs were
// created and ended (by ended state) in each step, oldest first; step i
// covers [until - (steps-i)·step, until - (steps-i-1)·step).
type StatsReply struct {
	States      map[string]int64   `json:"states"`
	Total       int64              `json:"total"`
	StepMS      int64              `json:"step_ms,omitempty"`
	Steps       int                `json:"steps"`
	UntilUnixMS int64              `json:"until_unix_ms,omitempty"`
	Created     []int64            `json:"created"`
	Ended       map[string][]int64 `json:"ended"`
}

// jobStates are the states, in their order.
var jobStates = []string{"PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "DENIED"}

// terminalStates are the states a job ends in.
var terminalStates = map[string]bool{"SUCCEEDED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "DENIED": true}

// maxStatsSteps bounds GET /v1/stats's steps (jobstore.MaxThroughputSteps).
const maxStatsSteps = 1440

// statsQuery reads GET /v1/stats's step (a duration, 1s or more; 1m when
// absent), steps (0 to 1440; 60 when absent) and until (as since and until
// of GET /v1/jobs; now when absent).
func statsQuery(r *http.Request) (step time.Duration, steps int, until time.Time, err error) {
	v := r.URL.Query()
	step, steps = time.Minute, 60
	if s := v.Get("step"); s != "" {
		d, perr := time.ParseDuration(s)
		if perr != nil || d < time.Second {
			return 0, 0, time.Time{}, errorf(http.StatusBadRequest, reason.BadRequest, "step %q is not a duration of 1s or more (1m, 15m)", s)
		}
		step = d
	}
	if s := v.Get("steps"); s != "" {
		n, perr := strconv.Atoi(s)
		if perr != nil || n < 0 || n > maxStatsSteps {
			return 0, 0, time.Time{}, errorf(http.StatusBadRequest, reason.BadRequest, "steps %q is not a number from 0 to %d", s, maxStatsSteps)
		}
		steps = n
	}
	if s := v.Get("until"); s != "" {
		ms, perr := parseTime(s)
		if perr != nil {
			return 0, 0, time.Time{}, errorf(http.StatusBadRequest, reason.BadRequest, "until: %v", perr)
		}
		until = time.UnixMilli(ms)
	}
	return step, steps, until, nil
}

// stats is the job store's exact counts (ward jobs stats): an admin's, as
// they cover every tenant.
func (o *opsAPI) stats(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	step, steps, until, err := statsQuery(r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := o.ctx(r)
	defer cancel()
	st, err := o.client.Stats(ctx, step, steps, until)
	if err != nil {
		if strings.Contains(err.Error(), "store unavailable") {
			return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err)
		}
		return nil, err
	}
	out := StatsReply{States: map[string]int64{}, Steps: len(st.GetCreated()), Created: st.GetCreated(), Ended: map[string][]int64{}}
	for _, state := range jobStates {
		out.States[state] = st.GetStates()[state]
		out.Total += out.States[state]
	}
	if out.Created == nil {
		out.Created = []int64{}
	}
	if out.Steps > 0 {
		out.StepMS, out.UntilUnixMS = st.GetStepMs(), st.GetUntilUnixMs()
		for state := range terminalStates {
			counts := make([]int64, out.Steps)
			copy(counts, st.GetEnded()[state].GetCounts())
			out.Ended[state] = counts
		}
	}
	return out, nil
}
