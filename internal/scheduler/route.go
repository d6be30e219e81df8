package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// Shards is a job store split into shards with owners (jobstore.Owned,
// log=NAME&shards=N): this process serves the shards it owns, and the
// scheduler sends what belongs to the others to their owners.
type Shards interface {
	Shards() int
	ShardOf(tenant string) int
	Owns(shard int) bool
	// HasOwner reports whether some process owns the shard (as lately
	// seen): one that has none answers nothing.
	HasOwner(shard int) bool
	// Holds reports whether a shard this process owns holds job id.
	Holds(id string) bool
	// Hold keeps the shard owned while a handler works on it: giving it
	// up waits for release. ok is false where it is not owned.
	Hold(shard int) (release func(), ok bool)
	OnOwnership(f func(shard int, owned bool))
}

// router sends each message about a tenant's jobs to the owner of the
// tenant's shard, over the bus: every replica takes its share of the
// queue group's messages as before, handles those of the shards it owns,
// and forwards the rest, as they came (subject, reply, headers, data), on
// sys.scheduler.shard.<i>.<subject> (bus.ShardSubject), which only the
// owner of shard i subscribes to while it owns it. The owner answers the
// client directly. A request for every tenant (an admin's _all, the DLQ,
// the stats) is gathered: asked of every shard, each owner answering for
// that shard alone (jobstore.OnlyShard), and the answers merged.
//
// Only schedulers may publish or subscribe there (auth/perms.go): a
// forwarded message's subject names its tenant or host as the original
// did, and the owner trusts it as it would the original's.
type router struct {
	s      *Scheduler
	shards Shards
	ctx    context.Context

	mu     sync.Mutex
	routes []func(ctx context.Context, shard int) (*bus.Subscription, error)
	subs   map[int][]*bus.Subscription
	closed bool
}

// Headers of a forwarded message.
const (
	// hdrGather: a gather's request, to be answered for the shard the
	// subject names alone.
	hdrGather = "Ward-Gather"
	// hdrHops counts the forwards: an owner that gave the shard up since
	// forwards once more, to its new owner, and no further.
	hdrHops = "Ward-Hops"
)

var (
	forwarded = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_forwarded_total",
		Help: "Messages a scheduler took for another's shard (a logged store of shards with owners), by subject and outcome: sent to the shard's owner; no_owner (a request answered as no responders, a report dropped for its host to send again); not_held (a report naming no tenant, of a job no shard here holds, left for its host to send again).",
	}, []string{"subject", "outcome"})
	gathered = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_gathers_total",
		Help: "Requests for every tenant a scheduler gathered from every shard's owner, by subject and outcome (ok, partial: a shard did not answer).",
	}, []string{"subject", "outcome"})
)

func newRouter(s *Scheduler, sh Shards) *router {
	return &router{s: s, shards: sh, subs: map[int][]*bus.Subscription{}}
}

// start subscribes to the forwards of the shards owned, now and as they
// come and go.
func (r *router) start(ctx context.Context) {
	r.ctx = ctx
	r.shards.OnOwnership(r.owned)
}

// owned subscribes to shard i's forwards when it is taken, and drains
// them when it is given up (before the store closes its log).
func (r *router) owned(i int, owned bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if !owned {
		subs := r.subs[i]
		delete(r.subs, i)
		ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
		defer cancel()
		for _, sub := range subs {
			if err := sub.Drain(ctx); err != nil {
				r.s.log.Warn("draining a shard's forwards", "shard", i, "err", err)
			}
		}
		r.s.log.Info("shard given up", "shard", i)
		return
	}
	for _, f := range r.routes {
		sub, err := f(r.ctx, i)
		if err != nil {
			r.s.log.Error("could not subscribe to a shard's forwards; its messages wait for another owner", "shard", i, "err", err)
			continue
		}
		r.subs[i] = append(r.subs[i], sub)
	}
	if err := r.s.cfg.Bus.Flush(); err != nil {
		r.s.log.Warn("flushing a shard's subscriptions", "shard", i, "err", err)
	}
	r.s.log.Info("shard owned", "shard", i)
}

// close drains every forward subscription; ownership changes after it
// are ignored.
func (r *router) close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	all := r.subs
	r.subs = map[int][]*bus.Subscription{}
	r.mu.Unlock()
	var errs []error
	for _, subs := range all {
		for _, sub := range subs {
			if err := sub.Drain(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// forward sends msg as it came to shard i's owner. With none (a takeover
// under way), a request is answered at once as NATS answers one nobody
// serves (no responders: the requester asks again), and a publish is
// dropped (a host sends its reports again until answered).
func (r *router) forward(i int, msg *nats.Msg, hops int) {
	if !r.shards.HasOwner(i) {
		forwarded.WithLabelValues(baseOf(msg.Subject), "no_owner").Inc()
		if msg.Reply != "" {
			if err := noResponders(r.s.cfg.Bus.NATS(), msg.Reply); err != nil {
				r.s.log.Debug("no-responders answer not sent; the requester times out", "subject", msg.Subject, "err", err)
			}
		}
		return
	}
	out := &nats.Msg{Subject: bus.ShardSubject(i, msg.Subject), Reply: msg.Reply, Data: msg.Data, Header: nats.Header{}}
	for k, v := range msg.Header {
		out.Header[k] = v
	}
	if hops == 0 {
		// From a sender, not a scheduler: its gather mark is no one's.
		out.Header.Del(hdrGather)
	}
	out.Header.Set(hdrHops, strconv.Itoa(hops+1))
	if err := r.s.cfg.Bus.NATS().PublishMsg(out); err != nil {
		r.s.log.Warn("could not forward a message to its shard's owner; the sender asks again", "subject", msg.Subject, "shard", i, "err", err)
		return
	}
	forwarded.WithLabelValues(baseOf(msg.Subject), "sent").Inc()
}

// hold keeps shard i owned while msg, sent to its owner, is handled
// (Shards.Hold). Where this process gave the shard up since msg was sent,
// msg goes on to the new owner, once, and hold reports false.
func (r *router) hold(i int, msg *nats.Msg) (release func(), ok bool) {
	if release, ok = r.shards.Hold(i); !ok {
		if hops, _ := strconv.Atoi(msg.Header.Get(hdrHops)); hops < 2 {
			r.forward(i, msg, hops)
		}
	}
	return release, ok
}

// noResponders answers a request as the NATS server answers one nobody
// serves: an empty message with status 503, which the NATS clients report
// as no responders.
func noResponders(nc *nats.Conn, reply string) error {
	return nc.PublishMsg(&nats.Msg{Subject: reply, Header: nats.Header{"Status": []string{"503"}}})
}

// baseOf is a subject without its tenant or worker token, as a label.
func baseOf(subject string) string {
	if i := strings.LastIndexByte(subject, '.'); i > 0 {
		return subject[:i]
	}
	return subject
}

// gatherKey is the context key of a gather's shard (gatheredShard).
type gatherKey struct{}

// gatheredShard reports whether ctx is a gather's, for which shard.
func gatheredShard(ctx context.Context) (int, bool) {
	i, ok := ctx.Value(gatherKey{}).(int)
	return i, ok
}

// merger merges the answers of every shard's owner to a gathered request
// (nil where none came) into the answer to req.
type merger func(req *nats.Msg, answers []*nats.Msg) proto.Message

// gather asks every shard's owner msg's request, for its shard alone,
// and answers msg with merge of the answers (nil where a shard did not
// answer: no owner now, or too slow).
func (r *router) gather(ctx context.Context, msg *nats.Msg, merge merger) {
	n := r.shards.Shards()
	answers := make([]*nats.Msg, n)
	var wg sync.WaitGroup
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i := range n {
		if !r.shards.HasOwner(i) {
			continue // nobody would answer: the merge says so
		}
		wg.Go(func() {
			out := &nats.Msg{Subject: bus.ShardSubject(i, msg.Subject), Data: msg.Data, Header: nats.Header{}}
			for k, v := range msg.Header {
				out.Header[k] = v
			}
			out.Header.Set(hdrGather, strconv.Itoa(i))
			if msg.Reply == "" { // a publish (a cancel not asked as a request): every owner hears it
				if err := r.s.cfg.Bus.NATS().PublishMsg(out); err != nil {
					r.s.log.Warn("could not send a request to a shard's owner", "subject", msg.Subject, "shard", i, "err", err)
				}
				return
			}
			a, err := r.s.cfg.Bus.NATS().RequestMsgWithContext(gctx, out)
			if err != nil {
				r.s.log.Warn("a shard's owner did not answer a gathered request", "subject", msg.Subject, "shard", i, "err", err)
				return
			}
			answers[i] = a
		})
	}
	wg.Wait()
	if msg.Reply == "" {
		return
	}
	outcome := "ok"
	if slices.Contains(answers, nil) {
		outcome = "partial"
	}
	gathered.WithLabelValues(baseOf(msg.Subject), outcome).Inc()
	if err := r.s.cfg.Bus.Reply(msg, merge(msg, answers)); err != nil {
		r.s.log.Debug("gathered reply failed", "subject", msg.Subject, "err", err)
	}
}

// decodeAll decodes the answers into new Ts (nil where none came).
func decodeAll[T any, P interface {
	*T
	proto.Message
}](answers []*nats.Msg) (out []P, missing int) {
	for _, a := range answers {
		if a == nil {
			missing++
			continue
		}
		p := P(new(T))
		if err := proto.Unmarshal(a.Data, p); err != nil {
			missing++
			continue
		}
		out = append(out, p)
	}
	return out, missing
}

// unanswered is what a merged answer says of the shards that did not answer.
func unanswered(missing, n int) string {
	return fmt.Sprintf("%d of %d shards did not answer (no owner at the moment, or too slow): ask again", missing, n)
}

// routing says where a message goes: the tenant whose shard owns it, or
// all (a gather), or neither (handled here); job, for a host's report that
// names no tenant (a host older than tenant_id), is handled here only
// where a shard of this process holds the job.
type routing struct {
	tenant string
	all    bool
	job    string
}

// routeSub subscribes h to subject as bus.Subscribe does and, with a router,
// sends each message key routes to another process's shard to its owner,
// gathers those it routes to all with merge (nil: handled here), and
// subscribes h to the forwards of each shard this process owns.
func routeSub[T any, P interface {
	*T
	proto.Message
}](ctx context.Context, s *Scheduler, subject, queue string, w *bus.Workers, key func(*nats.Msg, P) routing, merge merger, h bus.Handler[P]) (*bus.Subscription, error) {
	r := s.router
	if r == nil {
		return bus.Subscribe(ctx, s.cfg.Bus, subject, queue, w, s.log, h)
	}
	r.mu.Lock()
	if direct(subject) {
		// A host's report to the owner of the shard its dispatch names
		// (bus.ReportSubject), or a client's submission to its tenant's
		// (bus.SubmitSubject): straight to the owner, no forward.
		r.routes = append(r.routes, func(ctx context.Context, i int) (*bus.Subscription, error) {
			suffix := "." + strconv.Itoa(i)
			return bus.Subscribe(ctx, s.cfg.Bus, subject+suffix, queue, w, s.log, func(ctx context.Context, msg *nats.Msg, m P) {
				msg.Subject = strings.TrimSuffix(msg.Subject, suffix)
				switch to := key(msg, m); {
				case to.tenant != "" && r.shards.ShardOf(to.tenant) != i:
					// Sent to another's shard (a client's stale or wrong
					// guess): on to the tenant's.
					r.forward(r.shards.ShardOf(to.tenant), msg, 0)
					return
				case to.all && merge != nil:
					// An admin's request for every tenant, sent to one
					// shard's subject: gathered, as on the plain one.
					r.gather(ctx, msg, merge)
					return
				}
				release, ok := r.hold(i, msg)
				if !ok {
					return
				}
				defer release()
				h(ctx, msg, m)
			})
		})
	}
	r.routes = append(r.routes, func(ctx context.Context, i int) (*bus.Subscription, error) {
		prefix := bus.ShardSubject(i, "")
		// In the queue group: were a fenced former owner still subscribed
		// for a moment, one of the two gets each message, not both.
		return bus.Subscribe(ctx, s.cfg.Bus, prefix+subject, queue, w, s.log, func(ctx context.Context, msg *nats.Msg, m P) {
			msg.Subject = strings.TrimPrefix(msg.Subject, prefix)
			release, ok := r.hold(i, msg)
			if !ok {
				return
			}
			defer release()
			if g := msg.Header.Get(hdrGather); g != "" {
				if gi, err := strconv.Atoi(g); err == nil && gi == i {
					h(context.WithValue(jobstore.OnlyShard(ctx, i), gatherKey{}, i), msg, m)
				}
				return
			}
			h(ctx, msg, m)
		})
	})
	r.mu.Unlock()
	return bus.Subscribe(ctx, s.cfg.Bus, subject, queue, w, s.log, func(ctx context.Context, msg *nats.Msg, m P) {
		switch to := key(msg, m); {
		case to.all && merge != nil:
			r.gather(ctx, msg, merge)
		case to.tenant != "":
			i := r.shards.ShardOf(to.tenant)
			release, ok := r.shards.Hold(i)
			if !ok {
				r.forward(i, msg, 0)
				return
			}
			defer release()
			h(ctx, msg, m)
		case to.job != "" && !r.shards.Holds(to.job):
			// A report that names no tenant, of a job another owns: not
			// answered, so that its host sends it again, and the queue
			// group hands it to another replica.
			forwarded.WithLabelValues(baseOf(msg.Subject), "not_held").Inc()
		default:
			h(ctx, msg, m)
		}
	})
}

// direct reports whether subject is one its senders may send to the
// owner of a shard directly, with the shard as one more token: a host's
// report subjects (results, progress, context requests, result parts),
// and a tenant's submissions, gets, lists and cancels.
func direct(subject string) bool {
	for _, base := range []string{bus.SubjectResult, bus.SubjectProgress, bus.SubjectContext, bus.SubjectResultPart, bus.SubjectSubmit,
		bus.SubjectJobGet, bus.SubjectJobList, bus.SubjectCancel} {
		if subject == base+".*" {
			return true
		}
	}
	return false
}

// ------------------------------------------------------------ the keys

// bySubject routes by the tenant the subject names; an admin's _all is
// gathered.
func bySubject[P any](msg *nats.Msg, _ P) routing {
	if t := tenantOf(msg); t != "" {
		return routing{tenant: t}
	}
	return routing{all: true}
}

// byTenantField routes by the tenant a host's message names (tenant_id);
// one that names none goes by its job (routing.job).
func byTenantField[P interface {
	GetTenantId() string
	GetJobId() string
}](_ *nats.Msg, m P) routing {
	if t := m.GetTenantId(); t != "" {
		return routing{tenant: t}
	}
	return routing{job: m.GetJobId()}
}

// submitRouting routes a submission by its subject's tenant (an _all
// submission is refused here).
func submitRouting(msg *nats.Msg, _ *wardv1.JobRequest) routing {
	return routing{tenant: tenantOf(msg)}
}

// listRouting routes a listing by its subject's tenant, an admin's that
// names a tenant by that tenant, and gathers the rest.
func listRouting(msg *nats.Msg, q *wardv1.ListJobsRequest) routing {
	if t := tenantOf(msg); t != "" {
		return routing{tenant: t}
	}
	if q.GetTenant() != "" {
		return routing{tenant: q.GetTenant()}
	}
	return routing{all: true}
}

// dlqRouting routes a DLQ listing of one tenant to its shard, and
// gathers the rest.
func dlqRouting(_ *nats.Msg, q *wardv1.DLQListRequest) routing {
	if q.GetTenantId() != "" {
		return routing{tenant: q.GetTenantId()}
	}
	return routing{all: true}
}

// toAll gathers every request.
func toAll[P any](*nats.Msg, P) routing { return routing{all: true} }

// ------------------------------------------------------------ the merges

// firstFound merges the answers of a request about one job or run by id
// (an admin's): the first that found it (found), else the first answer.
func firstFound[T any, P interface {
	*T
	proto.Message
}](found, absent func(P) bool, none func(missing, n int) P) merger {
	return func(_ *nats.Msg, answers []*nats.Msg) proto.Message {
		all, missing := decodeAll[T, P](answers)
		for _, a := range all {
			if found(a) {
				return a
			}
		}
		// Not found is the answer only when every shard said so: one that
		// failed (its owner's read refused, say) may hold it.
		for _, a := range all {
			if !absent(a) {
				return a
			}
		}
		if missing > 0 || len(all) == 0 {
			return none(missing, len(answers))
		}
		return all[0]
	}
}

// What each id request's answer says when it found the job or run, and
// what is answered when no shard did and some did not answer.
func jobFound(r *wardv1.GetJobReply) bool { return r.GetJob() != nil }
func jobAbsent(r *wardv1.GetJobReply) bool {
	return r.GetJob() == nil && strings.HasSuffix(r.GetError(), " not found")
}
func jobNone(missing, n int) *wardv1.GetJobReply {
	// Not "not found": a shard that did not answer may hold it.
	return &wardv1.GetJobReply{Error: "the job could not be looked up: " + unanswered(missing, n)}
}
func runFound(r *wardv1.WorkflowGetReply) bool { return r.GetRun() != nil }
func runAbsent(r *wardv1.WorkflowGetReply) bool {
	return r.GetRun() == nil && strings.Contains(r.GetError(), "not found")
}
func runNone(missing, n int) *wardv1.WorkflowGetReply {
	return &wardv1.WorkflowGetReply{Error: "the run could not be looked up: " + unanswered(missing, n)}
}
func retried(r *wardv1.SubmitReply) bool { return r.GetAccepted() }
func retryAbsent(r *wardv1.SubmitReply) bool {
	return !r.GetAccepted() && strings.HasSuffix(r.GetMessage(), " not found")
}
func retryNone(missing, n int) *wardv1.SubmitReply {
	return refuse(reason.StoreError, "not retried: %s", unanswered(missing, n))
}
func dropped(r *wardv1.DLQDropReply) bool    { return r.GetDropped() }
func notDropped(r *wardv1.DLQDropReply) bool { return !r.GetDropped() && r.GetError() == "" }
func dropNone(missing, n int) *wardv1.DLQDropReply {
	return &wardv1.DLQDropReply{Error: "not dropped: " + unanswered(missing, n)}
}

// mergeList merges the owners' pages of an admin's listing by the
// cursors at their jobs (jobstore.MergePages).
func mergeList(req *nats.Msg, answers []*nats.Msg) proto.Message {
	all, missing := decodeAll[wardv1.ListJobsReply](answers)
	out := &wardv1.ListJobsReply{}
	cursors, nexts := make([][]string, len(all)), make([]string, len(all))
	for i, a := range all {
		if a.GetError() != "" {
			out.Error = a.GetError()
			return out
		}
		cursors[i], nexts[i] = a.GetCursors(), a.GetNextCursor()
	}
	keep, next, err := jobstore.MergePages(cursors, nexts, listLimit(req))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, k := range keep {
		out.Jobs = append(out.Jobs, all[k[0]].Jobs[k[1]])
	}
	out.NextCursor = next
	if missing > 0 {
		out.Error = unanswered(missing, len(answers))
	}
	return out
}

// listLimit is the page size of an admin's listing request.
func listLimit(msg *nats.Msg) int {
	q := &wardv1.ListJobsRequest{}
	_ = proto.Unmarshal(msg.Data, q)
	lq, _ := listQuery("", q)
	if lq.Limit == 0 {
		return jobstore.DefaultListLimit
	}
	return lq.Limit
}

// mergeDLQ merges the owners' DLQ entries, newest first.
func mergeDLQ(req *nats.Msg, answers []*nats.Msg) proto.Message {
	q := &wardv1.DLQListRequest{}
	_ = proto.Unmarshal(req.Data, q)
	limit := dlqLimit(q)
	all, missing := decodeAll[wardv1.DLQListReply](answers)
	out := &wardv1.DLQListReply{}
	for _, a := range all {
		out.Entries = append(out.Entries, a.GetEntries()...)
		if a.GetError() != "" {
			out.Error = a.GetError()
		}
	}
	slices.SortStableFunc(out.Entries, func(a, b *wardv1.DLQEntry) int { return cmp.Compare(b.GetAtUnixMs(), a.GetAtUnixMs()) })
	out.Entries = out.Entries[:min(limit, len(out.Entries))]
	if missing > 0 && out.Error == "" {
		out.Error = unanswered(missing, len(answers))
	}
	return out
}

// mergeStats sums the owners' counts and steps.
func mergeStats(_ *nats.Msg, answers []*nats.Msg) proto.Message {
	all, missing := decodeAll[wardv1.JobStatsReply](answers)
	out := &wardv1.JobStatsReply{States: map[string]int64{}}
	for _, a := range all {
		if a.GetError() != "" {
			out.Error = a.GetError()
		}
		for st, n := range a.GetStates() {
			out.States[st] += n
		}
		out.StepMs, out.UntilUnixMs = a.GetStepMs(), a.GetUntilUnixMs()
		out.Created = addSteps(out.Created, a.GetCreated())
		for st, c := range a.GetEnded() {
			if out.Ended == nil {
				out.Ended = map[string]*wardv1.StepCounts{}
			}
			sum := out.Ended[st]
			if sum == nil {
				sum = &wardv1.StepCounts{}
				out.Ended[st] = sum
			}
			sum.Counts = addSteps(sum.Counts, c.GetCounts())
		}
	}
	if missing > 0 && out.Error == "" {
		out.Error = unanswered(missing, len(answers))
	}
	return out
}

// addSteps adds the counts of src to dst's, step by step, and returns
// dst, grown to src's steps where it has fewer.
func addSteps(dst, src []int64) []int64 {
	if len(dst) < len(src) {
		dst = append(dst, make([]int64, len(src)-len(dst))...)
	}
	for i, n := range src {
		dst[i] += n
	}
	return dst
}

// mergeRuns merges the owners' runs, newest first.
func mergeRuns(req *nats.Msg, answers []*nats.Msg) proto.Message {
	q := &wardv1.WorkflowListRequest{}
	_ = proto.Unmarshal(req.Data, q)
	limit := runListLimit(q)
	all, _ := decodeAll[wardv1.WorkflowListReply](answers)
	out := &wardv1.WorkflowListReply{}
	for _, a := range all {
		out.Runs = append(out.Runs, a.GetRuns()...)
		if out.Workflows == nil {
			out.Workflows = a.GetWorkflows()
		}
	}
	slices.SortStableFunc(out.Runs, func(a, b *wardv1.WorkflowRun) int {
		return cmp.Or(cmp.Compare(b.GetCreatedAtUnixMs(), a.GetCreatedAtUnixMs()), strings.Compare(b.GetRunId(), a.GetRunId()))
	})
	out.Runs = out.Runs[:min(limit, len(out.Runs))]
	return out
}
