// Package safety is Ward's safety kernel: it evaluates a Rego policy bundle
// for every job and decides whether the job may run, and under which
// constraints.
//
//   - Bundle, Compile, Test and Prepare read a policy directory, compile it
//     and run its Rego tests: the checks every bundle passes before it is put
//     in force.
//   - Kernel evaluates the policy in force, with a decision cache, and swaps
//     to a new one atomically.
//   - Server exposes a Kernel as the ward.safety.v1.SafetyKernel gRPC
//     service (Check, Explain, health); Client is what the scheduler calls,
//     with a timeout and a circuit breaker, failing with ErrUnavailable.
//   - Push publishes a bundle to the NATS KV bucket, and Reloader keeps a
//     kernel on the newest bundle from that bucket and from its policy
//     directory, publishing every decision on sys.safety.decision.
package safety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// Job and decision ids are random UUIDs, one or more a job: they come from
// uuid's pool of random bytes, read from the system's generator in
// batches, not a getrandom call (and an allocation) each. Set before any
// id is made, as uuid asks.
func init() { uuid.EnableRandPool() }

// ErrNoPolicy is returned by Check on a Kernel that has no bundle loaded.
var ErrNoPolicy = errors.New("safety: no policy loaded")

var (
	decisions = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_decisions_total",
		Help: "Safety decisions made by the kernel, by decision (allow, deny, allow_with_constraints, error).",
	}, []string{"decision"})
	evalSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_safety_evaluation_seconds",
		Help:    "Time the kernel took to decide one Check, cache hits included.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 2, 18), // 1µs to ~130ms
	})
	cacheLookups = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_cache_lookups_total",
		Help: "Decision cache lookups, by result (hit, miss, off: the policy is not cacheable or the cache is disabled).",
	}, []string{"result"})
	policyLoads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_policy_loads_total",
		Help: "Policy bundles put in force (ok) or refused (error).",
	}, []string{"result"})
	policyInfo = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ward_safety_policy_info",
		Help: "1 for the policy revision in force.",
	}, []string{"revision"})

	// Curried once: a label lookup per Check would cost a map access and a
	// lock.
	allowTotal       = decisions.WithLabelValues("allow")
	denyTotal        = decisions.WithLabelValues("deny")
	constrainedTotal = decisions.WithLabelValues("allow_with_constraints")
	errorTotal       = decisions.WithLabelValues("error")
	cacheHits        = cacheLookups.WithLabelValues("hit")
	cacheMisses      = cacheLookups.WithLabelValues("miss")
	cacheOff         = cacheLookups.WithLabelValues("off")
)

// Config configures a Kernel. The zero value is ready to use.
type Config struct {
	// ID names the kernel in decision logs; a random id when empty.
	ID string
	// CacheSize bounds the decision cache, in decisions. Zero means
	// DefaultCacheSize; a negative size disables the cache.
	CacheSize int
	// Log, when set, receives every Check decision (not Explain's). It is
	// called on the Check's goroutine and must not block.
	Log func(*safetyv1.DecisionLog)
}

// Kernel evaluates a compiled policy. It is safe for concurrent use; a
// load swaps the policy and its decision cache atomically while Checks are
// in flight, each Check seeing either the old policy or the new one. A
// zero Kernel has no policy: its Checks fail with ErrNoPolicy until a load
// succeeds.
type Kernel struct {
	cfg Config
	id  string
	cur atomic.Pointer[loaded]
	// sample is the inputs of its recent decisions (impact.go).
	sample sample
}

// loaded is the policy in force with its own decision cache.
type loaded struct {
	policy *Policy
	cache  *decisionCache // nil when the policy is not cacheable or caching is off
	source string
	at     time.Time
}

// NewKernel returns a Kernel with cfg and no policy yet.
func NewKernel(cfg Config) *Kernel {
	k := &Kernel{cfg: cfg, id: cfg.ID}
	if k.id == "" {
		k.id = "kernel-" + uuid.NewString()[:8]
	}
	return k
}

// ID returns the kernel's id.
func (k *Kernel) ID() string {
	if k.id == "" {
		return "kernel"
	}
	return k.id
}

// LoadBundle compiles b and runs its tests (Prepare) and, only if both
// succeed, puts it in force; source says where it came from, for Status.
// On error the policy in force stays in force.
func (k *Kernel) LoadBundle(ctx context.Context, b *Bundle, source string) error {
	p, err := Prepare(ctx, b)
	if err != nil {
		policyLoads.WithLabelValues("error").Inc()
		return err
	}
	k.install(p, source)
	return nil
}

// LoadTested compiles b and puts it in force without running its tests:
// for bundles whose tests have passed already, such as the embedded
// default one (tested with Ward itself). It saves a start-up the time the
// tests take.
func (k *Kernel) LoadTested(b *Bundle, source string) error {
	p, err := Compile(b)
	if err != nil {
		policyLoads.WithLabelValues("error").Inc()
		return err
	}
	k.install(p, source)
	return nil
}

// install puts a compiled policy in force, with an empty decision cache.
func (k *Kernel) install(p *Policy, source string) {
	l := &loaded{policy: p, source: source, at: time.Now()}
	if size := k.cacheSize(); size > 0 && p.cacheable {
		l.cache = newDecisionCache(size)
	}
	old := k.cur.Swap(l)
	policyLoads.WithLabelValues("ok").Inc()
	if old != nil && old.policy.revision != p.revision {
		policyInfo.DeleteLabelValues(old.policy.revision)
	}
	policyInfo.WithLabelValues(p.revision).Set(1)
}

func (k *Kernel) cacheSize() int {
	switch {
	case k.cfg.CacheSize == 0:
		return DefaultCacheSize
	case k.cfg.CacheSize < 0:
		return 0
	}
	return k.cfg.CacheSize
}

// Revision returns the revision of the policy in force (see
// Bundle.Revision), or "" when none was loaded.
func (k *Kernel) Revision() string {
	if l := k.cur.Load(); l != nil {
		return l.policy.revision
	}
	return ""
}

// Policy returns the policy in force, where it came from and when it was
// put in force; p is nil when none was loaded.
func (k *Kernel) Policy() (p *Policy, source string, at time.Time) {
	if l := k.cur.Load(); l != nil {
		return l.policy, l.source, l.at
	}
	return nil, "", time.Time{}
}

// CacheLen returns how many decisions the cache holds, and whether there is
// a cache.
func (k *Kernel) CacheLen() (int, bool) {
	if l := k.cur.Load(); l != nil && l.cache != nil {
		return l.cache.len(), true
	}
	return 0, false
}

// Check decides on req. The decision is DENY, with every deny message
// sorted as reasons, when any deny rule holds; ALLOW_WITH_CONSTRAINTS when
// the constraints object is not empty; ALLOW otherwise. Every response has
// its own decision id; equal inputs (in the fields the policy reads) may be
// answered from the cache, which is dropped whenever the policy changes.
// The response's reasons and constraints may be shared with other
// responses: treat them as read-only.
//
// An error means the policy could not be evaluated (it failed at run time,
// or its constraints are malformed); the job must then be treated as
// denied.
func (k *Kernel) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	l := k.cur.Load()
	if l == nil {
		errorTotal.Inc()
		return nil, ErrNoPolicy
	}
	start := time.Now()
	enc := encodedPool.Get().(*encoded)
	defer encodedPool.Put(enc)
	enc.encode(req)

	var (
		d      *decision
		cached bool
		key    []byte
	)
	if l.cache != nil {
		key = enc.keyFor(l.policy.fields)
		if d = l.cache.get(key); d != nil {
			cached = true
			cacheHits.Inc()
		} else {
			cacheMisses.Inc()
		}
	} else {
		cacheOff.Inc()
	}
	if d == nil {
		var err error
		if d, err = l.policy.eval(ctx, req, enc, nil); err != nil {
			errorTotal.Inc()
			return nil, err
		}
		if l.cache != nil {
			l.cache.put(key, d)
		}
	}
	resp := &safetyv1.CheckResponse{
		Decision:       d.kind,
		Reasons:        d.reasons,
		Constraints:    d.constraints,
		PolicyRevision: l.policy.revision,
		DecisionId:     uuid.NewString(),
		InputDigest:    enc.digest(),
		Cached:         cached,
	}
	elapsed := time.Since(start)
	resp.EvalNs = elapsed.Nanoseconds()
	evalSeconds.Observe(elapsed.Seconds())
	switch d.kind {
	case safetyv1.Decision_DECISION_DENY:
		denyTotal.Inc()
	case safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS:
		constrainedTotal.Inc()
	default:
		allowTotal.Inc()
	}
	k.sample.keep(req)
	if k.cfg.Log != nil {
		k.cfg.Log(&safetyv1.DecisionLog{
			DecisionId: resp.DecisionId, JobId: req.GetJobId(), TenantId: req.GetTenantId(), Topic: req.GetTopic(),
			InputDigest: resp.InputDigest, Decision: d.kind, Reasons: d.reasons, PolicyRevision: resp.PolicyRevision,
			EvalNs: resp.EvalNs, Cached: cached, AtUnixMs: start.UnixMilli(), KernelId: k.ID(), Constraints: d.constraints,
		})
	}
	return resp, nil
}

// Explain evaluates req like Check, but never from the cache and without
// logging, and reports which rules fired and the input document.
func (k *Kernel) Explain(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.ExplainResponse, error) {
	l := k.cur.Load()
	if l == nil {
		return nil, ErrNoPolicy
	}
	return l.policy.Explain(ctx, req)
}

// Explain evaluates req against p alone and reports the decision, the
// rules that fired and the input document.
func (p *Policy) Explain(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.ExplainResponse, error) {
	start := time.Now()
	tr := &ruleTracer{}
	d, err := p.eval(ctx, req, nil, tr)
	if err != nil {
		return nil, err
	}
	var enc encoded
	enc.encode(req)
	in, err := json.Marshal(mustJSON(inputValue(req, allFields, nil, nil)))
	if err != nil {
		return nil, fmt.Errorf("safety: explain: %w", err)
	}
	return &safetyv1.ExplainResponse{
		Result: &safetyv1.CheckResponse{
			Decision: d.kind, Reasons: d.reasons, Constraints: d.constraints,
			PolicyRevision: p.revision, DecisionId: uuid.NewString(),
			InputDigest: enc.digest(), EvalNs: time.Since(start).Nanoseconds(),
		},
		Fired: tr.fired,
		Input: string(in),
	}, nil
}

// noMetrics is shared by every evaluation: OPA would otherwise allocate a
// metrics registry per query.
var noMetrics = metrics.NoOp()

// eval evaluates the policy for req; enc, when not nil, is req encoded.
// tracer, when set, sees every event.
func (p *Policy) eval(ctx context.Context, req *safetyv1.CheckRequest, enc *encoded, tracer topdown.QueryTracer) (*decision, error) {
	input := ast.NewTerm(inputValue(req, p.fields, enc, p.modules))
	denyTerm, consTerm, err := p.run(ctx, p.direct, input, tracer)
	if err == nil && denyTerm == nil {
		denyTerm, consTerm, err = p.run(ctx, p.query, input, tracer)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return nil, fmt.Errorf("safety: evaluate policy %s: %w", p.revision, err)
	}
	if denyTerm == nil || consTerm == nil {
		// The kernel module defines both for any input, so this is a bug,
		// not a policy outcome.
		return nil, fmt.Errorf("safety: evaluate policy %s: no result", p.revision)
	}
	reasons, err := denyReasons(denyTerm.Value)
	if err != nil {
		return nil, fmt.Errorf("safety: policy %s: %w", p.revision, err)
	}
	if len(reasons) > 0 {
		return &decision{kind: safetyv1.Decision_DECISION_DENY, reasons: reasons}, nil
	}
	cons, err := constraints(consTerm.Value)
	if err != nil {
		return nil, fmt.Errorf("safety: policy %s: %w", p.revision, err)
	}
	if cons != nil {
		return &decision{kind: safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS, constraints: cons}, nil
	}
	return &decision{kind: safetyv1.Decision_DECISION_ALLOW}, nil
}

// run evaluates one compiled query and returns its deny and constraints
// bindings, both nil when it has no result.
func (p *Policy) run(ctx context.Context, body ast.Body, input *ast.Term, tracer topdown.QueryTracer) (deny, cons *ast.Term, err error) {
	txn, err := p.store.NewTransaction(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer p.store.Abort(ctx, txn)
	// An external cancel spares a goroutine per query to watch ctx;
	// AfterFunc costs nothing when ctx cannot end.
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	q := topdown.NewQuery(body).
		WithQueryCompiler(p.qc).
		WithCompiler(p.compiler).
		WithStore(p.store).
		WithTransaction(txn).
		WithInput(input).
		WithCancel(cancel).
		WithMetrics(noMetrics).
		WithIndexing(true).
		WithEarlyExit(true)
	if tracer != nil {
		q = q.WithQueryTracer(tracer)
	}
	results := 0
	err = q.Iter(ctx, func(qr topdown.QueryResult) error {
		results++
		deny, cons = qr[varDeny], qr[varConstraints]
		return nil
	})
	if err == nil && results > 1 {
		err = fmt.Errorf("%d results, want 1", results)
	}
	return deny, cons, err
}

// mustJSON converts a ground value to Go; values that cannot be (there are
// none in a policy's results) become their Rego text.
func mustJSON(v ast.Value) any {
	x, err := ast.JSON(v)
	if err != nil {
		return v.String()
	}
	return x
}

// denyReasons turns the deny set into sorted messages. A message that is
// not a string is kept in its JSON form rather than dropped: a deny is a
// deny. Messages are made valid UTF-8, which proto strings must be, since
// policies may echo input that is not.
func denyReasons(v ast.Value) ([]string, error) {
	set, ok := v.(ast.Set)
	if !ok {
		return nil, fmt.Errorf("deny is %s, want a set of messages", ast.ValueName(v))
	}
	if set.Len() == 0 {
		return nil, nil
	}
	reasons := make([]string, 0, set.Len())
	var err error
	set.Foreach(func(t *ast.Term) {
		s, ok := t.Value.(ast.String)
		if !ok {
			bs, jerr := json.Marshal(mustJSON(t.Value))
			if jerr != nil && err == nil {
				err = fmt.Errorf("deny message %v: %w", t, jerr)
			}
			s = ast.String(bs)
		}
		reasons = append(reasons, strings.ToValidUTF8(string(s), "\uFFFD"))
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(reasons)
	return reasons, nil
}

// errConstraints is wrapped by every malformed-constraints error.
var errConstraints = errors.New("malformed constraints")

// constraints converts the constraints object. It returns nil for an empty
// object. Unknown keys and values of the wrong type are errors, so that a
// typo in a policy shows at once instead of silently granting nothing.
func constraints(v ast.Value) (*wardv1.Constraints, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%w: constraints is %s, want an object", errConstraints, ast.ValueName(v))
	}
	if obj.Len() == 0 {
		return nil, nil
	}
	c := &wardv1.Constraints{}
	err := obj.Iter(func(k, val *ast.Term) error {
		key, ok := k.Value.(ast.String)
		if !ok {
			return fmt.Errorf("%w: key %v is not a string", errConstraints, k)
		}
		var err error
		switch key {
		case "max_concurrent_jobs":
			c.MaxConcurrentJobs, err = int32Field(string(key), val.Value)
		case "max_retries":
			c.MaxRetries, err = int32Field(string(key), val.Value)
		case "deadline_ms":
			c.DeadlineMs, err = int64Field(string(key), val.Value)
		case "grants":
			c.Grants, err = grants(val.Value)
		default:
			err = fmt.Errorf("%w: unknown key %q", errConstraints, string(key))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func grants(v ast.Value) (*wardv1.Grants, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%w: grants is %s, want an object", errConstraints, ast.ValueName(v))
	}
	g := &wardv1.Grants{}
	err := obj.Iter(func(k, val *ast.Term) error {
		key, ok := k.Value.(ast.String)
		if !ok {
			return fmt.Errorf("%w: grants key %v is not a string", errConstraints, k)
		}
		name := "grants." + string(key)
		var err error
		switch key {
		case "http_hosts":
			g.HttpHosts, err = stringsField(name, val.Value)
		case "read_only_dirs":
			g.ReadOnlyDirs, err = stringsField(name, val.Value)
		case "env_keys":
			g.EnvKeys, err = stringsField(name, val.Value)
		case "services":
			g.Services, err = stringsField(name, val.Value)
		case "memory_limit_bytes":
			g.MemoryLimitBytes, err = int64Field(name, val.Value)
		case "time_limit_ms":
			g.TimeLimitMs, err = int64Field(name, val.Value)
		default:
			err = fmt.Errorf("%w: unknown key %q", errConstraints, name)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func int64Field(name string, v ast.Value) (int64, error) {
	n, ok := v.(ast.Number)
	if !ok {
		return 0, fmt.Errorf("%w: %s is %s, want a number", errConstraints, name, ast.ValueName(v))
	}
	i, ok := n.Int64()
	if !ok || i < 0 {
		return 0, fmt.Errorf("%w: %s is %s, want an integer from 0 to %d", errConstraints, name, n, int64(math.MaxInt64))
	}
	return i, nil
}

func int32Field(name string, v ast.Value) (int32, error) {
	i, err := int64Field(name, v)
	if err != nil {
		return 0, err
	}
	if i > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s is %d, want an integer from 0 to %d", errConstraints, name, i, math.MaxInt32)
	}
	return int32(i), nil
}

// stringsField converts an array or set of strings.
func stringsField(name string, v ast.Value) ([]string, error) {
	var terms []*ast.Term
	switch x := v.(type) {
	case *ast.Array:
		x.Foreach(func(t *ast.Term) { terms = append(terms, t) })
	case ast.Set:
		x.Sorted().Foreach(func(t *ast.Term) { terms = append(terms, t) })
	default:
		return nil, fmt.Errorf("%w: %s is %s, want an array of strings", errConstraints, name, ast.ValueName(v))
	}
	ss := make([]string, len(terms))
	for i, t := range terms {
		s, ok := t.Value.(ast.String)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is %s, want a string", errConstraints, name, i, ast.ValueName(t.Value))
		}
		ss[i] = strings.ToValidUTF8(string(s), "\uFFFD")
	}
	return ss, nil
}
