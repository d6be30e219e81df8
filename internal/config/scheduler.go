package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// Strategy names a placement strategy.
type Strategy string

// The placement strategies.
const (
	// StrategyLeastLoaded picks the lowest score active_jobs + cpu_load/100 +
	// gpu_utilization/100. The default.
	StrategyLeastLoaded Strategy = "least-loaded"
	// StrategyRoundRobin takes the eligible workers in turn.
	StrategyRoundRobin Strategy = "round-robin"
	// StrategyHash is rendezvous hashing of the job id and the worker id:
	// spread like random, but the same job on the same snapshot lands on
	// the same worker, and a worker leaving moves only its own jobs.
	StrategyHash Strategy = "hash"
	// StrategyAffinity prefers, in order: the worker a job asks for with
	// previous_worker_id, a worker holding its data_locality key, one in its
	// preferred_zone, one with the pool's preferred capabilities; then the
	// least loaded.
	StrategyAffinity Strategy = "affinity"
	// StrategyResourceFit picks the worker whose free CPU (then memory)
	// fits the job's request most tightly.
	StrategyResourceFit Strategy = "resource-fit"
)

// Strategies returns every strategy.
func Strategies() []Strategy {
	return []Strategy{StrategyLeastLoaded, StrategyRoundRobin, StrategyHash, StrategyAffinity, StrategyResourceFit}
}

// strategyError says why st is not a strategy, or returns "".
func strategyError(key string, st Strategy) string {
	switch {
	case slices.Contains(Strategies(), st):
		return ""
	case st == "random": // its former name
		return fmt.Sprintf("%s %q is now called %q (deterministic rendezvous hashing of the job id, not random)", key, st, StrategyHash)
	}
	return fmt.Sprintf("%s %q is not one of %v", key, st, Strategies())
}

// Scheduler is scheduler.yaml: placement, admission and recovery settings.
// Every key is optional; DefaultScheduler gives the values of unset ones.
type Scheduler struct {
	Placement Placement `yaml:"placement"`
	// Pools sets per-pool placement settings, by pool name.
	Pools          map[string]PoolSettings `yaml:"pools"`
	Queue          Queue                   `yaml:"queue"`
	Tenants        Tenants                 `yaml:"tenants"`
	Retries        Backoff                 `yaml:"retries"`
	FailureDomains FailureDomains          `yaml:"failure_domains"`
	Modes          Modes                   `yaml:"modes"`
	Modules        Modules                 `yaml:"modules"`
}

// Modules settings: deployed modules (the module registry).
type Modules struct {
	// RolloutGrace: after a version becomes active, jobs for its pool wait
	// this long for a host to hold it, then end no_workers.
	RolloutGrace time.Duration `yaml:"rollout_grace"`
}

// Placement settings.
type Placement struct {
	// Strategy is the default strategy of every pool.
	Strategy Strategy `yaml:"strategy"`
	// CPUThreshold (percent): a worker whose CPU load, less the share its
	// own running jobs explain, is above it is skipped. 100 disables it.
	CPUThreshold float64 `yaml:"cpu_threshold"`
	// GPUThreshold (percent): a worker whose GPU utilization is above it is
	// skipped. 100 disables it.
	GPUThreshold float64 `yaml:"gpu_threshold"`
	// Prefetch is how many jobs a worker may hold beyond max_parallel_jobs,
	// waiting on the host, so that it never idles for a dispatch round trip.
	Prefetch int `yaml:"prefetch"`
	// PrefetchWindow adds, per slot of a worker, as many jobs as the pool's
	// jobs take (on average, as this replica saw them run) to fill the
	// window: a host of quick jobs never idles between dispatches, while
	// long jobs wait in the pool's queue, where priorities apply. 0: none.
	PrefetchWindow time.Duration `yaml:"prefetch_window"`
}

// PoolSettings are one pool's placement settings; unset ones are
// placement's.
type PoolSettings struct {
	Strategy Strategy `yaml:"strategy"`
	// Prefetch and PrefetchWindow override placement's for the pool: long
	// jobs (LLM calls) are better off waiting for any free host than
	// queued behind a busy one.
	Prefetch       *int           `yaml:"prefetch"`
	PrefetchWindow *time.Duration `yaml:"prefetch_window"`
}

// Queue settings: jobs that cannot be placed now wait in a per-pool queue.
type Queue struct {
	// Cap is how many jobs may wait per pool; past it submissions for the
	// pool are refused at once (queue_full). 0: no cap.
	Cap int `yaml:"cap"`
	// AgingFactor: a waiting job's effective priority is priority −
	// wait/AgingFactor, so nothing waits forever behind higher priorities.
	AgingFactor time.Duration `yaml:"aging_factor"`
	// MaxWait: a job that waited this long ends FAILED pool_overloaded.
	MaxWait time.Duration `yaml:"max_wait"`
	// PumpInterval is how often each replica looks at the queues even when
	// nothing told it capacity freed.
	PumpInterval time.Duration `yaml:"pump_interval"`
}

// TenantLimits are the limits of one tenant.
type TenantLimits struct {
	// MaxConcurrentJobs caps the tenant's SCHEDULED, DISPATCHED and RUNNING
	// jobs across every replica, unless the safety decision sets a cap.
	// 0: unlimited.
	MaxConcurrentJobs int `yaml:"max_concurrent_jobs"`
	// Rate is the submissions per second the tenant may make (a token
	// bucket shared by every replica). 0: unlimited.
	Rate float64 `yaml:"rate"`
	// Burst is the bucket's size; 0 means twice the rate (at least 1).
	Burst int `yaml:"burst"`
}

// TenantOverride changes some of a tenant's limits; nil fields keep the default's.
type TenantOverride struct {
	MaxConcurrentJobs *int     `yaml:"max_concurrent_jobs"`
	Rate              *float64 `yaml:"rate"`
	Burst             *int     `yaml:"burst"`
}

// Tenants settings.
type Tenants struct {
	Default   TenantLimits              `yaml:"default"`
	Overrides map[string]TenantOverride `yaml:"overrides"`
	// WaitBudget: a job whose tenant stays at its limit this long ends
	// FAILED tenant_limit.
	WaitBudget time.Duration `yaml:"wait_budget"`
	// Backoff spaces a waiting job's tries.
	Backoff Backoff `yaml:"backoff"`
}

// For returns tenant's limits.
func (t *Tenants) For(tenant string) TenantLimits {
	l := t.Default
	if o, ok := t.Overrides[tenant]; ok {
		if o.MaxConcurrentJobs != nil {
			l.MaxConcurrentJobs = *o.MaxConcurrentJobs
		}
		if o.Rate != nil {
			l.Rate = *o.Rate
		}
		if o.Burst != nil {
			l.Burst = *o.Burst
		}
	}
	if l.Burst == 0 && l.Rate > 0 {
		l.Burst = max(1, int(math.Ceil(2*l.Rate)))
	}
	return l
}

// Backoff is an exponential backoff with jitter: the n-th wait (from 1) is
// drawn from [d/2, d] where d = min(Max, Base·2^(n−1)).
type Backoff struct {
	Base time.Duration `yaml:"base"`
	Max  time.Duration `yaml:"max"`
}

// Delay returns the n-th wait (n from 1) given a jitter draw in [0, 1).
func (b Backoff) Delay(n int, jitter float64) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// FailureDomains settings: zones that fail often are throttled, workers
// that fail often are quarantined.
type FailureDomains struct {
	// Window is the sliding window of a zone's failure rate.
	Window time.Duration `yaml:"window"`
	// Threshold is the failure rate (0–1) above which a zone is throttled.
	Threshold float64 `yaml:"threshold"`
	// MinSamples is how many results a window needs before its rate counts.
	MinSamples int `yaml:"min_samples"`
	// ThrottleRate is the dispatches per second a throttled zone still gets
	// (token bucket; other zones are preferred meanwhile).
	ThrottleRate float64 `yaml:"throttle_rate"`
	// QuarantineFailures failures of one worker within QuarantineWindow
	// quarantine it for QuarantineCooldown. 0 failures: never.
	QuarantineFailures int           `yaml:"quarantine_failures"`
	QuarantineWindow   time.Duration `yaml:"quarantine_window"`
	QuarantineCooldown time.Duration `yaml:"quarantine_cooldown"`
}

// Modes settings.
type Modes struct {
	// DegradedMaxPriority: in DEGRADED mode, submissions with a priority
	// number above it (lower priority) are refused.
	DegradedMaxPriority int `yaml:"degraded_max_priority"`
}

// DefaultScheduler returns the settings of an empty scheduler.yaml; the
// embedded scheduler.yaml spells out the same values.
func DefaultScheduler() *Scheduler {
	return &Scheduler{
		Placement: Placement{Strategy: StrategyLeastLoaded, CPUThreshold: 90, GPUThreshold: 90, Prefetch: 1,
			PrefetchWindow: 100 * time.Millisecond},
		// The LLM pools prefer GPU hosts (pools.yaml) and fall back to
		// CPU-only hosts with Ollama.
		Pools: map[string]PoolSettings{
			"chat-advanced": {Strategy: StrategyAffinity, Prefetch: new(int), PrefetchWindow: new(time.Duration)},
			"code-llm":      {Strategy: StrategyAffinity, Prefetch: new(int), PrefetchWindow: new(time.Duration)}},
		Queue: Queue{Cap: 1000, AgingFactor: 10 * time.Second, MaxWait: 10 * time.Minute, PumpInterval: 250 * time.Millisecond},
		Tenants: Tenants{
			Default: TenantLimits{MaxConcurrentJobs: 100, Rate: 50, Burst: 100},
			// `ward bench` submits as tenant bench, thousands of jobs a second.
			Overrides:  map[string]TenantOverride{"bench": {Rate: new(float64)}},
			WaitBudget: 2 * time.Minute,
			Backoff:    Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second},
		},
		Retries: Backoff{Base: 500 * time.Millisecond, Max: 30 * time.Second},
		FailureDomains: FailureDomains{Window: time.Minute, Threshold: 0.3, MinSamples: 10, ThrottleRate: 2,
			QuarantineFailures: 5, QuarantineWindow: time.Minute, QuarantineCooldown: 30 * time.Second},
		Modes:   Modes{DegradedMaxPriority: 5},
		Modules: Modules{RolloutGrace: 2 * time.Minute},
	}
}

// PrefetchFor returns pool's prefetch.
func (s *Scheduler) PrefetchFor(pool string) int {
	if p, ok := s.Pools[pool]; ok && p.Prefetch != nil {
		return *p.Prefetch
	}
	return s.Placement.Prefetch
}

// PrefetchWindowFor returns pool's prefetch window.
func (s *Scheduler) PrefetchWindowFor(pool string) time.Duration {
	if p, ok := s.Pools[pool]; ok && p.PrefetchWindow != nil {
		return *p.PrefetchWindow
	}
	return s.Placement.PrefetchWindow
}

// StrategyFor returns pool's strategy.
func (s *Scheduler) StrategyFor(pool string) Strategy {
	if p, ok := s.Pools[pool]; ok && p.Strategy != "" {
		return p.Strategy
	}
	return s.Placement.Strategy
}

// ParseScheduler parses scheduler.yaml over the defaults. name is used in
// error messages.
func ParseScheduler(name string, data []byte) (*Scheduler, error) {
	s := DefaultScheduler()
	root, err := decode(name, data, s)
	if err != nil {
		return nil, err
	}
	if err := s.validate(name, root); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadScheduler reads scheduler.yaml from path, or the embedded default when path is empty.
func LoadScheduler(path string) (*Scheduler, error) {
	data, name, err := read(path, "scheduler.yaml")
	if err != nil {
		return nil, err
	}
	return ParseScheduler(name, data)
}

func (s *Scheduler) validate(name string, root *yaml.Node) error {
	check := func(ok bool, msg string, path ...string) error {
		if ok {
			return nil
		}
		return lineErr(name, lineOf(root, path...), "%s", msg)
	}
	p, q, t, f := &s.Placement, &s.Queue, &s.Tenants, &s.FailureDomains
	checks := []error{
		check(strategyError("placement.strategy", p.Strategy) == "", strategyError("placement.strategy", p.Strategy), "placement", "strategy"),
		check(p.CPUThreshold > 0 && p.CPUThreshold <= 100, "placement.cpu_threshold must be in (0, 100]", "placement", "cpu_threshold"),
		check(p.GPUThreshold > 0 && p.GPUThreshold <= 100, "placement.gpu_threshold must be in (0, 100]", "placement", "gpu_threshold"),
		check(p.Prefetch >= 0 && p.Prefetch <= 1000, "placement.prefetch must be 0..1000", "placement", "prefetch"),
		check(p.PrefetchWindow >= 0 && p.PrefetchWindow <= time.Minute, "placement.prefetch_window must be 0..1m", "placement", "prefetch_window"),
		check(q.Cap >= 0, "queue.cap must not be negative", "queue", "cap"),
		check(q.AgingFactor >= time.Millisecond, "queue.aging_factor must be at least 1ms", "queue", "aging_factor"),
		check(q.MaxWait > 0, "queue.max_wait must be positive", "queue", "max_wait"),
		check(q.PumpInterval >= time.Millisecond, "queue.pump_interval must be at least 1ms", "queue", "pump_interval"),
		checkLimits(name, root, t.Default, "tenants", "default"),
		check(t.WaitBudget > 0, "tenants.wait_budget must be positive", "tenants", "wait_budget"),
		checkBackoff(name, root, t.Backoff, "tenants", "backoff"),
		checkBackoff(name, root, s.Retries, "retries"),
		check(f.Window > 0, "failure_domains.window must be positive", "failure_domains", "window"),
		check(f.Threshold > 0 && f.Threshold <= 1, "failure_domains.threshold must be in (0, 1]", "failure_domains", "threshold"),
		check(f.MinSamples >= 1, "failure_domains.min_samples must be at least 1", "failure_domains", "min_samples"),
		check(f.ThrottleRate > 0, "failure_domains.throttle_rate must be positive", "failure_domains", "throttle_rate"),
		check(f.QuarantineFailures >= 0, "failure_domains.quarantine_failures must not be negative", "failure_domains", "quarantine_failures"),
		check(f.QuarantineWindow > 0, "failure_domains.quarantine_window must be positive", "failure_domains", "quarantine_window"),
		check(f.QuarantineCooldown > 0, "failure_domains.quarantine_cooldown must be positive", "failure_domains", "quarantine_cooldown"),
		check(s.Modes.DegradedMaxPriority >= 0 && s.Modes.DegradedMaxPriority <= 10, "modes.degraded_max_priority must be 0..10", "modes", "degraded_max_priority"),
		check(s.Modules.RolloutGrace > 0, "modules.rollout_grace must be positive", "modules", "rollout_grace"),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	for _, pool := range sortedKeys(s.Pools) {
		ps := s.Pools[pool]
		key := "pools." + pool + ".strategy"
		if err := check(ps.Strategy == "" || strategyError(key, ps.Strategy) == "", strategyError(key, ps.Strategy), "pools", pool, "strategy"); err != nil {
			return err
		}
		if err := check(ps.Prefetch == nil || (*ps.Prefetch >= 0 && *ps.Prefetch <= 1000), fmt.Sprintf("pools.%s.prefetch must be 0..1000", pool), "pools", pool, "prefetch"); err != nil {
			return err
		}
		if err := check(ps.PrefetchWindow == nil || (*ps.PrefetchWindow >= 0 && *ps.PrefetchWindow <= time.Minute), fmt.Sprintf("pools.%s.prefetch_window must be 0..1m", pool), "pools", pool, "prefetch_window"); err != nil {
			return err
		}
	}
	for _, tenant := range sortedKeys(t.Overrides) {
		if err := checkLimits(name, root, t.For(tenant), "tenants", "overrides", tenant); err != nil {
			return err
		}
	}
	return nil
}

func checkLimits(name string, root *yaml.Node, l TenantLimits, path ...string) error {
	switch {
	case l.MaxConcurrentJobs < 0:
		return lineErr(name, lineOf(root, append(path, "max_concurrent_jobs")...), "max_concurrent_jobs must not be negative")
	case l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		return lineErr(name, lineOf(root, append(path, "rate")...), "rate must be a number ≥ 0")
	case l.Burst < 0:
		return lineErr(name, lineOf(root, append(path, "burst")...), "burst must not be negative")
	}
	return nil
}

func checkBackoff(name string, root *yaml.Node, b Backoff, path ...string) error {
	switch {
	case b.Base <= 0:
		return lineErr(name, lineOf(root, append(path, "base")...), "backoff base must be positive")
	case b.Max < b.Base:
		return lineErr(name, lineOf(root, append(path, "max")...), "backoff max must be at least its base")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
