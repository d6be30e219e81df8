package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	p, err := LoadPools("")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PoolsFor("job.echo"); len(got) != 1 || got[0] != "echo" {
		t.Fatalf("job.echo → %v, want [echo]", got)
	}
	if got := p.Pools["chat-advanced"].Requires; len(got) != 1 || got[0] != "ollama" {
		t.Fatalf("chat-advanced requires %v", got)
	}
	if got := p.Pools["repo-scan"].Module; got != "repo-scan" {
		t.Fatalf("module defaults to the pool name, got %q", got)
	}
	if got := p.Pools["chat-advanced"].Prefers; len(got) != 1 || got[0] != "gpu" {
		t.Fatalf("chat-advanced prefers %v, want [gpu] (issue 6: GPU hosts first, CPU hosts with Ollama too)", got)
	}
	to, err := LoadTimeouts("")
	if err != nil {
		t.Fatal(err)
	}
	r := to.Reconciler
	if r.DispatchTimeout != 120*time.Second || r.RunningTimeout != 300*time.Second || r.ScanInterval != 30*time.Second ||
		r.LeaseTTL != 10*time.Second || r.PendingTimeout != 30*time.Second || r.ResultGrace != 10*time.Second {
		t.Fatalf("timeouts %+v", r)
	}
	// The embedded file spells out the defaults an empty file gets.
	empty, err := ParseTimeouts("empty", nil)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Reconciler != to.Reconciler {
		t.Errorf("empty timeouts.yaml %+v, embedded %+v", empty.Reconciler, to.Reconciler)
	}
	if d, run, n := to.For("job.chat.advanced"); d != 120*time.Second || run != 180*time.Second || n != 2 {
		t.Errorf("job.chat.advanced timeouts %v %v %d", d, run, n)
	}
	if d, run, n := to.For("job.echo"); d != 120*time.Second || run != 300*time.Second || n != 0 {
		t.Errorf("job.echo timeouts %v %v %d", d, run, n)
	}
	if d, run := to.Shortest(); d != 120*time.Second || run != 180*time.Second {
		t.Errorf("shortest %v %v", d, run)
	}
}

func TestSchedulerDefaults(t *testing.T) {
	embedded, err := LoadScheduler("")
	if err != nil {
		t.Fatal(err)
	}
	empty, err := ParseScheduler("empty", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The embedded file documents exactly the defaults.
	if !reflect.DeepEqual(embedded, DefaultScheduler()) {
		t.Errorf("embedded scheduler.yaml:\n%+v\nDefaultScheduler():\n%+v", embedded, DefaultScheduler())
	}
	if empty.Placement != embedded.Placement || empty.Queue != embedded.Queue || empty.Tenants.Default != embedded.Tenants.Default {
		t.Errorf("empty file %+v differs from the defaults", empty)
	}
	if got := embedded.StrategyFor("chat-advanced"); got != StrategyAffinity {
		t.Errorf("chat-advanced strategy %s", got)
	}
	if got := embedded.StrategyFor("echo"); got != StrategyLeastLoaded {
		t.Errorf("echo strategy %s", got)
	}
	if l := embedded.Tenants.For("bench"); l.Rate != 0 || l.MaxConcurrentJobs != 100 {
		t.Errorf("bench limits %+v: want no rate limit", l)
	}
	if l := embedded.Tenants.For("acme"); l.Rate != 50 || l.Burst != 100 || l.MaxConcurrentJobs != 100 {
		t.Errorf("acme limits %+v", l)
	}
}

func TestSchedulerOverrides(t *testing.T) {
	s, err := ParseScheduler("t", []byte(`
placement:
  strategy: round-robin
  prefetch: 0
pools:
  echo: {strategy: hash}
tenants:
  default: {rate: 10}
  overrides:
    acme: {max_concurrent_jobs: 3}
    free: {rate: 0.5}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.StrategyFor("echo") != StrategyHash || s.StrategyFor("chat-advanced") != StrategyAffinity || s.StrategyFor("x") != StrategyRoundRobin {
		t.Errorf("strategies: echo %s chat-advanced %s x %s", s.StrategyFor("echo"), s.StrategyFor("chat-advanced"), s.StrategyFor("x"))
	}
	if s.Placement.Prefetch != 0 || s.Placement.CPUThreshold != 90 {
		t.Errorf("placement %+v: set keys change, unset keep their defaults", s.Placement)
	}
	if l := s.Tenants.For("acme"); l.MaxConcurrentJobs != 3 || l.Rate != 10 || l.Burst != 100 {
		t.Errorf("acme %+v", l)
	}
	if l := s.Tenants.For("free"); l.Rate != 0.5 || l.Burst != 100 {
		t.Errorf("free %+v", l)
	}
	if l := s.Tenants.For("bench"); l.Rate != 0 {
		t.Errorf("bench %+v: the default override stays", l)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0, 50 * time.Millisecond},
		{1, 0.999999, 100 * time.Millisecond},
		{2, 0, 100 * time.Millisecond},
		{3, 0.5, 300 * time.Millisecond},
		{5, 0, 500 * time.Millisecond},
		{50, 0, 500 * time.Millisecond},
	} {
		if got := b.Delay(tc.n, tc.jitter).Round(time.Millisecond); got != tc.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", tc.n, tc.jitter, got, tc.want)
		}
	}
}

func TestPoolsTopicList(t *testing.T) {
	p, err := ParsePools("t", []byte("topics:\n  job.a: [x, y]\npools:\n  x: {}\n  y: {module: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PoolsFor("job.a"); len(got) != 2 || got[1] != "y" {
		t.Fatalf("got %v", got)
	}
	if got := p.TopicsFor("y"); len(got) != 1 || got[0] != "job.a" {
		t.Fatalf("TopicsFor = %v", got)
	}
}

func TestPoolsErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"undeclared pool": {"topics:\n  job.a: nope\npools: {}\n", "line 2: topic \"job.a\" maps to pool \"nope\""},
		"empty list":      {"topics:\n  job.a: []\n", "line 2: topic \"job.a\" maps to no pool"},
		"map value":       {"topics:\n  job.a: {x: 1}\n", "line 2"},
		"unknown key":     {"topics: {}\npoolz: {}\n", "line 2"},
		"not yaml":        {"topics: [\n", "t:"},
		"empty requires":  {"pools:\n  x:\n    requires: [\"\"]\n", "line 2: pool \"x\" lists an empty capability"},
		"bad prefers":     {"pools:\n  x:\n    prefers: 3\n", "line 3"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePools("t", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestTimeoutsErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"not a duration":   {"reconciler:\n  dispatch_timeout: soon\n", "line 2"},
		"negative":         {"reconciler:\n  running_timeout: -1s\n", "line 2: reconciler.running_timeout must not be negative"},
		"short lease":      {"reconciler:\n\n  lease_ttl: 1ms\n", "line 3: reconciler.lease_ttl"},
		"unknown key":      {"reconciler:\n  scan: 1s\n", "line 2"},
		"topic retries":    {"topics:\n  job.a:\n    max_retries: -1\n", "line 3: topic \"job.a\": max_retries"},
		"topic negative":   {"topics:\n  job.a: {running_timeout: -2s}\n", "line 2: topic \"job.a\""},
		"topic not a map":  {"topics:\n  job.a: 3\n", "line 2"},
		"too many retries": {"topics:\n  job.a: {max_retries: 1000}\n", "line 2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTimeouts("t", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	to, err := ParseTimeouts("t", nil)
	if err != nil || to.Reconciler.ScanInterval != 30*time.Second {
		t.Fatalf("empty file: %v %+v", err, to)
	}
}

func FuzzParsePools(f *testing.F) {
	data, _ := defaults.ReadFile("pools.yaml")
	f.Add(data)
	f.Add([]byte("topics:\n  job.a: [x]\npools:\n  x: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePools("fuzz", data)
		if err != nil {
			checkErr(t, err, data)
			return
		}
		for topic, pools := range p.Topics {
			for _, pool := range pools {
				if _, ok := p.Pools[pool]; !ok {
					t.Fatalf("topic %q maps to undeclared pool %q", topic, pool)
				}
			}
		}
	})
}

func TestSchedulerErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"unknown strategy":      {"placement:\n  strategy: fastest\n", "line 2: placement.strategy \"fastest\""},
		"pool strategy":         {"pools:\n  echo:\n    strategy: nope\n", "line 3: pools.echo.strategy"},
		"renamed strategy":      {"placement:\n  strategy: random\n", "line 2: placement.strategy \"random\" is now called \"hash\""},
		"renamed pool strategy": {"pools:\n  echo:\n    strategy: random\n", "line 3: pools.echo.strategy \"random\" is now called \"hash\""},
		"cpu threshold":         {"placement:\n  cpu_threshold: 120\n", "line 2: placement.cpu_threshold"},
		"zero threshold":        {"placement:\n  gpu_threshold: 0\n", "line 2: placement.gpu_threshold"},
		"negative cap":          {"queue:\n  cap: -1\n", "line 2: queue.cap"},
		"aging":                 {"queue:\n  aging_factor: 0s\n", "line 2: queue.aging_factor"},
		"rate":                  {"tenants:\n  default:\n    rate: -5\n", "line 3: rate"},
		"override rate":         {"tenants:\n  overrides:\n    acme:\n      burst: -1\n", "line 4: burst"},
		"backoff":               {"retries:\n  base: 2s\n  max: 1s\n", "line 3: backoff max"},
		"threshold":             {"failure_domains:\n  threshold: 1.5\n", "line 2: failure_domains.threshold"},
		"degraded":              {"modes:\n  degraded_max_priority: 11\n", "line 2: modes.degraded_max_priority"},
		"rollout grace":         {"modules:\n  rollout_grace: 0s\n", "line 2: modules.rollout_grace"},
		"unknown key":           {"queue:\n  size: 3\n", "line 2"},
		"wrong type":            {"queue:\n  cap: lots\n", "line 2"},
		"not yaml":              {"queue: [\n", "t:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseScheduler("t", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// checkErr fails a fuzz case whose error does not name the file, or, when
// it mentions a line, names one beyond the file's end.
func checkErr(t *testing.T, err error, data []byte) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "config: fuzz") {
		t.Fatalf("error does not name the file: %v", err)
	}
	// YAML breaks lines at \n, \r\n, \r, NEL, LS and PS.
	lines := 1 + strings.Count(strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(string(data)), "\n")
	var line int
	if i := strings.Index(msg, "line "); i >= 0 {
		if _, scanErr := fmt.Sscanf(msg[i:], "line %d", &line); scanErr == nil && line > lines {
			t.Fatalf("error names line %d of a %d-line file: %v", line, lines, err)
		}
	}
}

func FuzzParseScheduler(f *testing.F) {
	data, _ := defaults.ReadFile("scheduler.yaml")
	f.Add(data)
	f.Add([]byte("placement:\n  strategy: affinity\ntenants:\n  overrides:\n    a: {rate: 1}\n"))
	f.Add([]byte("queue: {cap: -1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScheduler("fuzz", data)
		if err != nil {
			checkErr(t, err, data)
			return
		}
		if s.Queue.AgingFactor <= 0 || s.Placement.CPUThreshold <= 0 || s.Tenants.Backoff.Max < s.Tenants.Backoff.Base {
			t.Fatalf("accepted invalid settings: %+v", s)
		}
		for pool := range s.Pools {
			if !slices.Contains(Strategies(), s.StrategyFor(pool)) {
				t.Fatalf("pool %q has strategy %q", pool, s.StrategyFor(pool))
			}
		}
	})
}

func FuzzParseTimeouts(f *testing.F) {
	data, _ := defaults.ReadFile("timeouts.yaml")
	f.Add(data)
	f.Add([]byte("reconciler: {scan_interval: 1s}\ntopics: {a: {max_retries: 2}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		to, err := ParseTimeouts("fuzz", data)
		if err != nil {
			checkErr(t, err, data)
			return
		}
		if to.Reconciler.ScanInterval <= 0 || to.Reconciler.DispatchTimeout <= 0 || to.Reconciler.LeaseTTL <= 0 {
			t.Fatalf("accepted invalid timeouts: %+v", to.Reconciler)
		}
	})
}
