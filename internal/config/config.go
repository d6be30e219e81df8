// Package config loads Ward's configuration files: pools.yaml (topic → pool
// routing), timeouts.yaml (reconciler thresholds, per-topic timeouts and
// retries) and scheduler.yaml (placement, admission and recovery settings).
// The files in this folder are embedded and used when no path is given, so
// `ward dev` runs with no files at all. A Watcher reloads them on change.
//
// Every error names the file and, where the problem is in the file, the line.
package config

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

//go:embed pools.yaml timeouts.yaml scheduler.yaml workflows/*.yaml
var defaults embed.FS

// Environment variables that name the files.
const (
	EnvPoolConfig      = "POOL_CONFIG_PATH"
	EnvTimeoutConfig   = "TIMEOUT_CONFIG_PATH"
	EnvSchedulerConfig = "SCHEDULER_CONFIG_PATH"
)

// Pool is a set of hosts serving one module.
type Pool struct {
	// Module is the worker module the pool runs; it defaults to the pool's name.
	Module string `yaml:"module"`
	// Requires lists the capabilities a host needs to serve the pool.
	Requires []string `yaml:"requires"`
	// Prefers lists capabilities the pool's jobs run better with. The
	// affinity strategy places on hosts that have them when it can and on
	// the others when it must: chat-advanced prefers gpu, so a CPU-only host
	// with Ollama still serves it when no GPU host can.
	Prefers []string `yaml:"prefers"`
}

// Offers reports whether the pool can meet a job's required capability:
// one it requires of every host, or one it prefers (some hosts have it).
func (p Pool) Offers(capability string) bool {
	return slices.Contains(p.Requires, capability) || slices.Contains(p.Prefers, capability)
}

// Pools is the topic → pool routing table.
type Pools struct {
	Topics map[string][]string `yaml:"-"`
	Pools  map[string]Pool     `yaml:"pools"`
}

// PoolsFor returns the pools a topic maps to, in preference order, or nil.
func (p *Pools) PoolsFor(topic string) []string { return p.Topics[topic] }

// TopicsFor returns the topics mapped to pool, sorted.
func (p *Pools) TopicsFor(pool string) []string {
	var out []string
	for topic, pools := range p.Topics {
		if slices.Contains(pools, pool) {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out
}

// poolsFile is pools.yaml as written: a topic maps to a name or a list.
type poolsFile struct {
	Topics map[string]yaml.Node `yaml:"topics"`
	Pools  map[string]*Pool     `yaml:"pools"`
}

// ParsePools parses pools.yaml. name is used in error messages.
func ParsePools(name string, data []byte) (*Pools, error) {
	var f poolsFile
	root, err := decode(name, data, &f)
	if err != nil {
		return nil, err
	}
	p := &Pools{Topics: make(map[string][]string, len(f.Topics)), Pools: make(map[string]Pool, len(f.Pools))}
	for pool, def := range f.Pools {
		if def == nil {
			def = &Pool{}
		}
		if def.Module == "" {
			def.Module = pool
		}
		if pool == "" {
			return nil, lineErr(name, lineOf(root, "pools"), "a pool has an empty name")
		}
		if slices.Contains(def.Requires, "") || slices.Contains(def.Prefers, "") {
			return nil, lineErr(name, lineOf(root, "pools", pool), "pool %q lists an empty capability", pool)
		}
		p.Pools[pool] = *def
	}
	for topic, node := range f.Topics {
		var pools []string
		switch node.Kind {
		case yaml.ScalarNode:
			pools = []string{node.Value}
		case yaml.SequenceNode:
			if err := node.Decode(&pools); err != nil {
				return nil, lineErr(name, node.Line, "topic %q: %v", topic, err)
			}
		default:
			return nil, lineErr(name, node.Line, "topic %q must map to a pool name or a list of them", topic)
		}
		if len(pools) == 0 {
			return nil, lineErr(name, node.Line, "topic %q maps to no pool", topic)
		}
		for _, pool := range pools {
			if _, ok := p.Pools[pool]; !ok {
				return nil, lineErr(name, node.Line, "topic %q maps to pool %q, which is not declared under pools", topic, pool)
			}
		}
		p.Topics[topic] = pools
	}
	return p, nil
}

// LoadPools reads pools.yaml from path, or the embedded default when path is empty.
func LoadPools(path string) (*Pools, error) {
	data, name, err := read(path, "pools.yaml")
	if err != nil {
		return nil, err
	}
	return ParsePools(name, data)
}

// Timeouts are the reconciler's thresholds and the per-topic overrides.
type Timeouts struct {
	Reconciler struct {
		// DispatchTimeout: a job DISPATCHED longer than this has lost its host.
		DispatchTimeout time.Duration `yaml:"dispatch_timeout"`
		// RunningTimeout: a job RUNNING longer than this is stopped.
		RunningTimeout time.Duration `yaml:"running_timeout"`
		// ScanInterval is how often the reconciler looks.
		ScanInterval time.Duration `yaml:"scan_interval"`
		// LeaseTTL is how long the reconciler's lease lasts unrenewed: the
		// replica holding it runs the reconciler, and another takes over
		// within LeaseTTL of its death.
		LeaseTTL time.Duration `yaml:"lease_ttl"`
		// PendingTimeout: a PENDING job that waits in no queue (the replica
		// admitting it died) is admitted again after this long.
		PendingTimeout time.Duration `yaml:"pending_timeout"`
		// ResultGrace: a DISPATCHED or RUNNING job whose result is stored but
		// was never reported (the result message was lost) is completed from
		// the store after this long.
		ResultGrace time.Duration `yaml:"result_grace"`
	} `yaml:"reconciler"`
	// Topics overrides the timeouts and sets retries per topic.
	Topics map[string]TopicTimeouts `yaml:"topics"`
	// Workflows are the defaults of workflow runs and their steps; a
	// definition's own timeout, a step's timeout and retries win.
	Workflows WorkflowTimeouts `yaml:"workflows"`
}

// WorkflowTimeouts are the workflow defaults (seed: a step 3 min, a run
// 10 min, 1 retry).
type WorkflowTimeouts struct {
	// StepTimeout bounds each step's job (its deadline).
	StepTimeout time.Duration `yaml:"step_timeout"`
	// RunTimeout bounds a whole run: past it, the run ends TIMEOUT and its
	// running steps are cancelled.
	RunTimeout time.Duration `yaml:"run_timeout"`
	// StepRetries is how often a step's job is retried.
	StepRetries int `yaml:"step_retries"`
	// MaxRunningRuns caps a tenant's running runs on a replica; one more is
	// refused (workflow_busy). Default 100.
	MaxRunningRuns int `yaml:"max_running_runs"`
}

// TopicTimeouts are one topic's overrides; zero fields use the reconciler's.
type TopicTimeouts struct {
	DispatchTimeout time.Duration `yaml:"dispatch_timeout"`
	RunningTimeout  time.Duration `yaml:"running_timeout"`
	// MaxRetries is how often a failed job of the topic is retried when its
	// budget does not say.
	MaxRetries int `yaml:"max_retries"`
}

// For returns the timeouts that apply to topic.
func (t *Timeouts) For(topic string) (dispatch, running time.Duration, maxRetries int) {
	dispatch, running = t.Reconciler.DispatchTimeout, t.Reconciler.RunningTimeout
	if o, ok := t.Topics[topic]; ok {
		if o.DispatchTimeout > 0 {
			dispatch = o.DispatchTimeout
		}
		if o.RunningTimeout > 0 {
			running = o.RunningTimeout
		}
		maxRetries = o.MaxRetries
	}
	return dispatch, running, maxRetries
}

// Shortest returns the shortest dispatch and running timeouts of any topic,
// so that one scan finds every candidate.
func (t *Timeouts) Shortest() (dispatch, running time.Duration) {
	dispatch, running = t.Reconciler.DispatchTimeout, t.Reconciler.RunningTimeout
	for _, o := range t.Topics {
		if o.DispatchTimeout > 0 {
			dispatch = min(dispatch, o.DispatchTimeout)
		}
		if o.RunningTimeout > 0 {
			running = min(running, o.RunningTimeout)
		}
	}
	return dispatch, running
}

// ParseTimeouts parses timeouts.yaml, filling unset values with the defaults
// (dispatch 120 s, running 300 s, scan every 30 s, lease 10 s, pending 30 s,
// result grace 10 s).
func ParseTimeouts(name string, data []byte) (*Timeouts, error) {
	var t Timeouts
	root, err := decode(name, data, &t)
	if err != nil {
		return nil, err
	}
	r := &t.Reconciler
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
		key string
	}{
		{&r.DispatchTimeout, 120 * time.Second, "dispatch_timeout"},
		{&r.RunningTimeout, 300 * time.Second, "running_timeout"},
		{&r.ScanInterval, 30 * time.Second, "scan_interval"},
		{&r.LeaseTTL, 10 * time.Second, "lease_ttl"},
		{&r.PendingTimeout, 30 * time.Second, "pending_timeout"},
		{&r.ResultGrace, 10 * time.Second, "result_grace"},
	} {
		switch {
		case *d.v < 0:
			return nil, lineErr(name, lineOf(root, "reconciler", d.key), "reconciler.%s must not be negative", d.key)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	w := &t.Workflows
	switch {
	case w.StepTimeout < 0 || w.RunTimeout < 0:
		return nil, lineErr(name, lineOf(root, "workflows"), "workflows: timeouts must not be negative")
	case w.StepRetries < 0 || w.StepRetries > MaxRetriesLimit:
		return nil, lineErr(name, lineOf(root, "workflows", "step_retries"), "workflows.step_retries must be 0..%d", MaxRetriesLimit)
	case w.MaxRunningRuns < 0:
		return nil, lineErr(name, lineOf(root, "workflows", "max_running_runs"), "workflows.max_running_runs must not be negative")
	}
	if w.StepTimeout == 0 {
		w.StepTimeout = 3 * time.Minute
	}
	if w.RunTimeout == 0 {
		w.RunTimeout = 10 * time.Minute
	}
	if w.MaxRunningRuns == 0 {
		w.MaxRunningRuns = 100
	}
	if !hasKey(root, "workflows", "step_retries") {
		w.StepRetries = 1
	}
	if r.LeaseTTL < 100*time.Millisecond {
		return nil, lineErr(name, lineOf(root, "reconciler", "lease_ttl"), "reconciler.lease_ttl must be at least 100ms")
	}
	for topic, o := range t.Topics {
		switch {
		case topic == "":
			return nil, lineErr(name, lineOf(root, "topics"), "a topic has an empty name")
		case o.DispatchTimeout < 0, o.RunningTimeout < 0:
			return nil, lineErr(name, lineOf(root, "topics", topic), "topic %q: timeouts must not be negative", topic)
		case o.MaxRetries < 0 || o.MaxRetries > MaxRetriesLimit:
			return nil, lineErr(name, lineOf(root, "topics", topic, "max_retries"), "topic %q: max_retries must be 0..%d", topic, MaxRetriesLimit)
		}
	}
	return &t, nil
}

// MaxRetriesLimit bounds every max_retries setting.
const MaxRetriesLimit = 100

// LoadTimeouts reads timeouts.yaml from path, or the embedded default when path is empty.
func LoadTimeouts(path string) (*Timeouts, error) {
	data, name, err := read(path, "timeouts.yaml")
	if err != nil {
		return nil, err
	}
	return ParseTimeouts(name, data)
}

func read(path, def string) ([]byte, string, error) {
	if path == "" {
		data, err := defaults.ReadFile(def)
		return data, "embedded " + def, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, path, fmt.Errorf("config: %w", err)
	}
	return data, path, nil
}

// decode decodes data into v, refusing unknown keys, and also returns the
// document's node tree so that later checks can name lines. An empty file
// decodes to v unchanged.
func decode(name string, data []byte, v any) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	return &root, nil
}

// lineOf returns the line of the value at path (mapping keys from the
// document's root), or of the deepest key found on the way; 0 when the
// first key is absent (the value is a default).
func lineOf(root *yaml.Node, path ...string) int {
	n := root
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// hasKey reports whether the document sets the value at path.
func hasKey(root *yaml.Node, path ...string) bool {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n != nil
}

// lineErr formats an error naming the file and, when known, the line.
func lineErr(name string, line int, format string, args ...any) error {
	if line > 0 {
		return fmt.Errorf("config: %s: line %d: %s", name, line, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("config: %s: %s", name, fmt.Sprintf(format, args...))
}

// Workflows returns the workflow definitions (YAML) by file name: the
// embedded ones (workflows/*.yaml: the seed workflows), and, when dir is
// set, every *.yaml and *.yml file in it, which replace the embedded
// files of the same name. The scheduler parses and checks them.
func Workflows(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	entries, err := defaults.ReadDir("workflows")
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	for _, e := range entries {
		b, err := defaults.ReadFile("workflows/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		out["embedded "+e.Name()] = b
	}
	if dir == "" {
		return out, nil
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("config: workflows: %w", err)
	}
	for _, f := range files {
		name := f.Name()
		if f.IsDir() || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("config: workflows: %w", err)
		}
		delete(out, "embedded "+name)
		out[filepath.Join(dir, name)] = b
	}
	return out, nil
}
