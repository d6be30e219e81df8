package safety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/bus"
)

// A kernel keeps the inputs of its recent decisions, a bounded sample per
// tenant, so that a candidate bundle can be judged by what it would
// change before it is pushed (Impact, `ward policy impact`). A decision's
// input is its CheckRequest: names, sizes, digests, labels and grants
// asked, never the payload's bytes. Check keeps the request as it is, with
// no copy and no lock: each tenant's sample is a ring of atomic slots.

const (
	// SampleSize is how many recent decisions' inputs a kernel keeps of a
	// tenant, and SampleTenants of how many tenants (the first to come;
	// the others' decisions are not sampled).
	SampleSize    = 256
	SampleTenants = 256
	// impactJobIDs is how many job ids a flip names.
	impactJobIDs = 10
)

// sample is the rings of recent inputs, by tenant.
type sample struct {
	rings   sync.Map // tenant -> *ring
	tenants atomic.Int32
}

// ring is one tenant's recent inputs: slot next%SampleSize is the next
// to be written.
type ring struct {
	next  atomic.Uint64
	slots [SampleSize]atomic.Pointer[safetyv1.CheckRequest]
}

// keep remembers req, which its caller no longer changes.
func (s *sample) keep(req *safetyv1.CheckRequest) {
	v, ok := s.rings.Load(req.GetTenantId())
	if !ok {
		if s.tenants.Load() >= SampleTenants {
			return
		}
		var loaded bool
		if v, loaded = s.rings.LoadOrStore(req.GetTenantId(), &ring{}); !loaded {
			s.tenants.Add(1)
		}
	}
	r := v.(*ring)
	r.slots[(r.next.Add(1)-1)%SampleSize].Store(req)
}

// each calls fn with every input kept, each tenant's newest first.
func (s *sample) each(fn func(*safetyv1.CheckRequest)) (tenants int) {
	s.rings.Range(func(_, v any) bool {
		tenants++
		r := v.(*ring)
		n := r.next.Load()
		for i := uint64(0); i < SampleSize && i < n; i++ {
			if req := r.slots[(n-1-i)%SampleSize].Load(); req != nil {
				fn(req)
			}
		}
		return true
	})
	return tenants
}

// Impact evaluates the inputs of the kernel's recent decisions against
// the policy in force and against candidate, and reports the decisions
// that would change, grouped by tenant, old and new decision and reason.
func (k *Kernel) Impact(ctx context.Context, candidate *Policy) (*safetyv1.ImpactReply, error) {
	l := k.cur.Load()
	if l == nil {
		return nil, ErrNoPolicy
	}
	reply := &safetyv1.ImpactReply{KernelId: k.ID(), Revision: l.policy.Revision(), CandidateRevision: candidate.Revision()}
	type key struct {
		tenant   string
		from, to safetyv1.Decision
		reason   string
	}
	groups := map[key]*safetyv1.ImpactFlip{}
	var errs []error
	reply.Tenants = int32(k.sample.each(func(req *safetyv1.CheckRequest) {
		if ctx.Err() != nil || len(errs) > 0 {
			return
		}
		was, err := l.policy.eval(ctx, req, nil, nil)
		if err != nil {
			errs = append(errs, err)
			return
		}
		now, err := candidate.eval(ctx, req, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("the candidate: %w", err))
			return
		}
		reply.Evaluated++
		if was.kind == now.kind {
			return
		}
		why := first(now.reasons)
		if now.kind != safetyv1.Decision_DECISION_DENY {
			why = first(was.reasons)
		}
		g := groups[key{req.GetTenantId(), was.kind, now.kind, why}]
		if g == nil {
			g = &safetyv1.ImpactFlip{TenantId: req.GetTenantId(), From: was.kind, To: now.kind, Reason: why}
			groups[key{req.GetTenantId(), was.kind, now.kind, why}] = g
		}
		g.Count++
		if len(g.JobIds) < impactJobIDs && !slices.Contains(g.JobIds, req.GetJobId()) {
			g.JobIds = append(g.JobIds, req.GetJobId())
		}
		if !slices.Contains(g.Topics, req.GetTopic()) {
			g.Topics = append(g.Topics, req.GetTopic())
		}
	}))
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	for _, g := range groups {
		sort.Strings(g.Topics)
		reply.Flips = append(reply.Flips, g)
	}
	sort.Slice(reply.Flips, func(i, j int) bool {
		a, b := reply.Flips[i], reply.Flips[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.TenantId != b.TenantId {
			return a.TenantId < b.TenantId
		}
		return a.Reason < b.Reason
	})
	return reply, nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// ImpactSummary is what every kernel answered to an ImpactRequest, with
// their flips merged.
type ImpactSummary struct {
	// Kernels are the kernels' answers, sorted by kernel id.
	Kernels []*safetyv1.ImpactReply `json:"kernels"`
	// Evaluated is how many recent decisions they evaluated in all.
	Evaluated int64 `json:"evaluated"`
	// Flips are the decisions that would change, merged across kernels:
	// by tenant, old and new decision and reason, most first.
	Flips []*safetyv1.ImpactFlip `json:"flips"`
}

// Impacts asks every running kernel what candidate would change of its
// recent decisions (sys.safety.impact): it learns how many kernels run
// from their status (within statusWait), then waits for that many
// answers, or until ctx ends.
func Impacts(ctx context.Context, nc *nats.Conn, candidate *Bundle, statusWait time.Duration) (*ImpactSummary, error) {
	sts, err := Statuses(ctx, nc, statusWait)
	if err != nil {
		return nil, err
	}
	if len(sts) == 0 {
		return nil, errors.New("safety: impact: no kernel answered on " + bus.SubjectSafetyStatus)
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("safety: impact: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, err := proto.Marshal(&safetyv1.ImpactRequest{Bundle: candidate.Proto()})
	if err != nil {
		return nil, err
	}
	if max := nc.MaxPayload(); int64(len(req)) > max {
		return nil, fmt.Errorf("safety: impact: the bundle is %d bytes, more than a message holds (%d)", len(req), max)
	}
	if err := nc.PublishRequest(bus.SubjectSafetyImpact, inbox, req); err != nil {
		return nil, fmt.Errorf("safety: impact: %w", err)
	}
	s := &ImpactSummary{}
	for len(s.Kernels) < len(sts) {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if len(s.Kernels) == 0 {
				return nil, fmt.Errorf("safety: impact: no kernel answered: %w", err)
			}
			break
		}
		r := &safetyv1.ImpactReply{}
		if proto.Unmarshal(msg.Data, r) == nil {
			s.Kernels = append(s.Kernels, r)
		}
	}
	sort.Slice(s.Kernels, func(i, j int) bool { return s.Kernels[i].GetKernelId() < s.Kernels[j].GetKernelId() })
	type key struct {
		tenant   string
		from, to safetyv1.Decision
		reason   string
	}
	merged := map[key]*safetyv1.ImpactFlip{}
	for _, r := range s.Kernels {
		s.Evaluated += r.GetEvaluated()
		for _, f := range r.GetFlips() {
			k := key{f.GetTenantId(), f.GetFrom(), f.GetTo(), f.GetReason()}
			m := merged[k]
			if m == nil {
				m = &safetyv1.ImpactFlip{TenantId: f.GetTenantId(), From: f.GetFrom(), To: f.GetTo(), Reason: f.GetReason()}
				merged[k] = m
				s.Flips = append(s.Flips, m)
			}
			m.Count += f.GetCount()
			for _, id := range f.GetJobIds() {
				if len(m.JobIds) < impactJobIDs && !slices.Contains(m.JobIds, id) {
					m.JobIds = append(m.JobIds, id)
				}
			}
			for _, t := range f.GetTopics() {
				if !slices.Contains(m.Topics, t) {
					m.Topics = append(m.Topics, t)
				}
			}
		}
	}
	for _, f := range s.Flips {
		sort.Strings(f.Topics)
	}
	sort.SliceStable(s.Flips, func(i, j int) bool { return s.Flips[i].GetCount() > s.Flips[j].GetCount() })
	return s, nil
}
