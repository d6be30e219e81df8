package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ABI is how the runtime calls into a module.
type ABI string

// The ABIs. See sandbox/README.md for both contracts.
const (
	// ABICommand is a WASI command (a Go main package built with
	// GOOS=wasip1): one _start per instance, the payload on stdin, the
	// result on stdout.
	ABICommand ABI = "wasi-command"
	// ABIReactor is a WASI reactor (Go with -buildmode=c-shared) that
	// exports ward_run: _initialize once per instance, then ward_run once
	// per job, which reads the payload and writes the result through the
	// host functions of the "ward" import module.
	ABIReactor ABI = "ward-reactor-v1"
)

// Isolation says how many jobs an instance serves.
type Isolation string

// The isolations.
const (
	// Fresh runs every job in a new instance.
	Fresh Isolation = "fresh"
	// Pooled keeps warm instances of a reactor and runs job after job in
	// them, never the jobs of two tenants in one instance.
	Pooled Isolation = "pooled"
)

// Manifest describes a module: what it is, what it asks for, and how to run
// it. It is the YAML file beside the module (echo.yaml beside echo.wasm).
// Zero fields take defaults: the ABI from the module's exports, fresh
// isolation, no capabilities, the Runtime's limits.
type Manifest struct {
	// Name is the module's name, the key pools route by.
	Name string `yaml:"name"`
	// Version is the module's own version, for people.
	Version string `yaml:"version"`
	// ABI must match the module's exports when set.
	ABI ABI `yaml:"abi"`
	// Isolation is fresh (the default) or pooled.
	Isolation Isolation `yaml:"isolation"`
	// Capabilities are what the module asks for. Nothing is granted by
	// asking: the safety decision grants a subset, and the host enforces
	// exactly that (Input.Grants).
	Capabilities Capabilities `yaml:"capabilities"`
	// Limits bound each run.
	Limits Limits `yaml:"limits"`

	// Topic, Pool and Requires are the route a deployed module may declare
	// (`ward module deploy`): the runtime ignores them.
	Topic string `yaml:"topic"`
	// Pool is the pool that serves Topic.
	Pool string `yaml:"pool"`
	// Requires are the capabilities a host of Pool must have.
	Requires []string `yaml:"requires"`
}

// Capabilities are the sandbox capabilities a module may ask for.
type Capabilities struct {
	// HTTPHosts are the hosts it calls: "host", "host:port" or
	// "*.domain"; "*" says it calls whatever host its job names.
	HTTPHosts []string `yaml:"http_hosts"`
	// ReadOnlyDirs are the host directories it reads; "*" says whichever
	// its job names.
	ReadOnlyDirs []string `yaml:"read_only_dirs"`
	// EnvKeys are the environment variables it reads.
	EnvKeys []string `yaml:"env_keys"`
	// Services are the host's named services it calls ("ollama"): the
	// policy grants names, and each host resolves them to its own.
	Services []string `yaml:"services"`
}

// Limits bound one job's run of the module. Input's limits, from the safety
// decision, take precedence; zero takes the Runtime's default.
type Limits struct {
	// Memory caps the instance's linear memory.
	Memory ByteSize `yaml:"memory"`
	// Time caps the run's wall time.
	Time Duration `yaml:"time"`
	// MaxInput caps the payload.
	MaxInput ByteSize `yaml:"max_input"`
	// MaxOutput caps the result, and what the run streams in all.
	MaxOutput ByteSize `yaml:"max_output"`
}

// ByteSize is a number of bytes, written in YAML as an integer or with a
// unit: 512KiB, 64MiB, 1GiB (or KB, MB, GB, also powers of 1024).
type ByteSize int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// ParseByteSize parses "64MiB", "512KiB", "1GiB", "4096" and the like.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<40)/mult {
		return 0, fmt.Errorf("size %q: want a non-negative number of bytes, e.g. 64MiB", s)
	}
	return ByteSize(v * mult), nil
}

// Duration is a time.Duration written in YAML as "10s", "500ms", "2m".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: duration %q: want e.g. 10s or 500ms", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as UnmarshalYAML reads it ("2m0s"), so that a
// manifest written out parses back the same.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// ParseManifest parses and validates a manifest. Unknown fields are errors,
// so that a misspelt limit is not silently ignored.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("sandbox: manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks the fields that do not depend on the module's bytes.
func (m *Manifest) Validate() error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	switch m.ABI {
	case "", ABICommand, ABIReactor:
	default:
		errs = append(errs, fmt.Errorf("abi %q: want %s or %s", m.ABI, ABICommand, ABIReactor))
	}
	switch m.Isolation {
	case "", Fresh, Pooled:
	default:
		errs = append(errs, fmt.Errorf("isolation %q: want %s or %s", m.Isolation, Fresh, Pooled))
	}
	if m.ABI == ABICommand && m.Isolation == Pooled {
		errs = append(errs, errors.New("a wasi-command runs once per instance: it cannot be pooled"))
	}
	if m.Limits.Memory < 0 || m.Limits.Time < 0 || m.Limits.MaxInput < 0 || m.Limits.MaxOutput < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if m.Limits.Memory > maxMemoryBytes {
		errs = append(errs, fmt.Errorf("memory limit %d is over 4 GiB", m.Limits.Memory))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox: manifest %q: %w", m.Name, err)
	}
	return nil
}
