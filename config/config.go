// Package config loads Ward's configuration files: pools.yaml (topic → pool
// routing) and timeouts.yaml (reconciler thresholds). The files in this
// folder are embedded and used when no path is given, so `ward dev` runs
// with no files at all.
package config

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed pools.yaml timeouts.yaml
var defaults embed.FS

// Environment variables that name the files.
const (
	EnvPoolConfig    = "POOL_CONFIG_PATH"
	EnvTimeoutConfig = "TIMEOUT_CONFIG_PATH"
)

// Pool is a set of hosts serving one module.
type Pool struct {
	// Module is the worker module the pool runs; it defaults to the pool's name.
	Module string `yaml:"module"`
	// Requires lists the capabilities a host needs to serve the pool.
	Requires []string `yaml:"requires"`
}

// Pools is the topic → pool routing table.
type Pools struct {
	Topics map[string][]string `yaml:"-"`
	Pools  map[string]Pool     `yaml:"pools"`
}

// PoolsFor returns the pools a topic maps to, or nil.
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
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %s: %w", name, err)
	}
	p := &Pools{Topics: make(map[string][]string, len(f.Topics)), Pools: make(map[string]Pool, len(f.Pools))}
	for pool, def := range f.Pools {
		if def == nil {
			def = &Pool{}
		}
		if def.Module == "" {
			def.Module = pool
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
				return nil, fmt.Errorf("config: %s: line %d: topic %q: %w", name, node.Line, topic, err)
			}
		default:
			return nil, fmt.Errorf("config: %s: line %d: topic %q must map to a pool name or a list of them", name, node.Line, topic)
		}
		if len(pools) == 0 {
			return nil, fmt.Errorf("config: %s: line %d: topic %q maps to no pool", name, node.Line, topic)
		}
		for _, pool := range pools {
			if _, ok := p.Pools[pool]; !ok {
				return nil, fmt.Errorf("config: %s: line %d: topic %q maps to pool %q, which is not declared under pools", name, node.Line, topic, pool)
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

// Timeouts are the reconciler's thresholds.
type Timeouts struct {
	Reconciler struct {
		DispatchTimeout time.Duration `yaml:"dispatch_timeout"`
		RunningTimeout  time.Duration `yaml:"running_timeout"`
		ScanInterval    time.Duration `yaml:"scan_interval"`
	} `yaml:"reconciler"`
}

// ParseTimeouts parses timeouts.yaml, filling unset values with the defaults
// (dispatch 120 s, running 300 s, scan every 30 s).
func ParseTimeouts(name string, data []byte) (*Timeouts, error) {
	var t Timeouts
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %s: %w", name, err)
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
	} {
		switch {
		case *d.v < 0:
			return nil, fmt.Errorf("config: %s: reconciler.%s must not be negative", name, d.key)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	return &t, nil
}

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
