// Package workflow is Ward's workflow engine: a workflow is a DAG of steps,
// each an ordinary job (a topic and a payload), declared in YAML.
//
// The package is pure: it parses and checks definitions (Compile), and
// drives one run (Engine) as a deterministic state machine — which steps
// are ready, in which order they are assigned, what each one's payload is
// once its dependencies' outputs are known, and how the run ends. Every
// change is an Event in a hash chain (Log), which Verify checks and Replay
// re-derives. The scheduler turns assignments into jobs and feeds their
// ends back; the job store keeps the log.
package workflow

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Definition is a workflow as written in YAML (config/workflows/*.yaml, or
// submitted inline).
type Definition struct {
	// Name is the workflow's name: what `ward workflow run NAME` runs.
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Input holds the defaults of the run's input, merged under what the
	// submitter gives (`ward workflow run --input`).
	Input map[string]any `yaml:"input,omitempty" json:"input,omitempty"`
	// Timeout bounds the whole run; 0 takes timeouts.yaml's (seed: 10m).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// MaxParallel caps the run's steps running at once; 0: no cap of its
	// own (the tenant's and the scheduler's still hold).
	MaxParallel int    `yaml:"max_parallel,omitempty" json:"max_parallel,omitempty"`
	Steps       []Step `yaml:"steps" json:"steps"`
	// Outputs are the run's results, by name: expressions over the steps'
	// outputs, evaluated when the run succeeds.
	Outputs map[string]string `yaml:"outputs,omitempty" json:"outputs,omitempty"`
}

// Step is one node of the DAG: a job on Topic with Payload.
type Step struct {
	// ID names the step; [a-z0-9_-], unique in the definition. Expressions
	// read its output as steps.<id>.output (steps["<id>"] when it has a
	// dash).
	ID    string `yaml:"id" json:"id"`
	Topic string `yaml:"topic" json:"topic"`
	// Payload is the job's payload: a template. A string that is one
	// ${{ expression }} takes the expression's value; ${{ }} inside a
	// longer string is replaced by the value's text; maps and lists are
	// rendered member by member. A string payload is sent as its bytes,
	// anything else as JSON.
	Payload any `yaml:"payload,omitempty" json:"payload,omitempty"`
	// DependsOn are the steps that must end before this one starts.
	DependsOn []string `yaml:"depends_on,omitempty" json:"depends_on,omitempty"`
	// If, when set, is a condition (an expression, with or without ${{ }})
	// evaluated when the step becomes ready: false skips it.
	If string `yaml:"if,omitempty" json:"if,omitempty"`
	// ForEach, when set, is an expression giving a list: the step runs once
	// per item (item and index in its expressions), at most MaxParallel at
	// once, and its output is the list of their outputs, in order.
	ForEach     string `yaml:"for_each,omitempty" json:"for_each,omitempty"`
	MaxParallel int    `yaml:"max_parallel,omitempty" json:"max_parallel,omitempty"`
	// Retries overrides timeouts.yaml's retries for the step's jobs
	// (seed: 1); nil keeps it.
	Retries *int `yaml:"retries,omitempty" json:"retries,omitempty"`
	// Timeout bounds each of the step's jobs; 0 takes timeouts.yaml's
	// child timeout (seed: 3m).
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// AllowFailure lets the run go on, and succeed, when the step fails:
	// its dependents run, and see state FAILED and no output.
	AllowFailure bool `yaml:"allow_failure,omitempty" json:"allow_failure,omitempty"`
}

// Duration is a time.Duration written as "90s", "3m", "1h30m".
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as YAML that reads back as d: every string that
// holds a line break is written double-quoted. yaml.v3 writes such a
// string as a literal block, and one of line breaks alone ("\n") then
// reads back as another ("") — FuzzWorkflow found it in a step's payload.
func (d Definition) MarshalYAML() (any, error) {
	type yamlStep struct {
		ID           any      `yaml:"id"`
		Topic        any      `yaml:"topic"`
		Payload      any      `yaml:"payload,omitempty"`
		DependsOn    []any    `yaml:"depends_on,omitempty"`
		If           any      `yaml:"if,omitempty"`
		ForEach      any      `yaml:"for_each,omitempty"`
		MaxParallel  int      `yaml:"max_parallel,omitempty"`
		Retries      *int     `yaml:"retries,omitempty"`
		Timeout      Duration `yaml:"timeout,omitempty"`
		AllowFailure bool     `yaml:"allow_failure,omitempty"`
	}
	type yamlDef struct {
		Name        any            `yaml:"name"`
		Description any            `yaml:"description,omitempty"`
		Input       any            `yaml:"input,omitempty"`
		Timeout     Duration       `yaml:"timeout,omitempty"`
		MaxParallel int            `yaml:"max_parallel,omitempty"`
		Steps       []yamlStep     `yaml:"steps"`
		Outputs     map[string]any `yaml:"outputs,omitempty"`
	}
	y := yamlDef{Name: quoted(d.Name), Description: omitted(d.Description), Timeout: d.Timeout, MaxParallel: d.MaxParallel,
		Steps: make([]yamlStep, len(d.Steps))}
	if len(d.Input) > 0 {
		y.Input = quoteLineBreaks(d.Input)
	}
	if len(d.Outputs) > 0 {
		y.Outputs = make(map[string]any, len(d.Outputs))
		for k, v := range d.Outputs {
			y.Outputs[k] = quoted(v)
		}
	}
	for i, st := range d.Steps {
		ys := yamlStep{ID: quoted(st.ID), Topic: quoted(st.Topic), If: omitted(st.If), ForEach: omitted(st.ForEach),
			MaxParallel: st.MaxParallel, Retries: st.Retries, Timeout: st.Timeout, AllowFailure: st.AllowFailure}
		if st.Payload != nil {
			ys.Payload = quoteLineBreaks(st.Payload)
		}
		for _, dep := range st.DependsOn {
			ys.DependsOn = append(ys.DependsOn, quoted(dep))
		}
		y.Steps[i] = ys
	}
	if y.Steps == nil {
		y.Steps = []yamlStep{}
	}
	return y, nil
}

// quoted is s as YAML writes it back: double-quoted when it holds a line
// break (quoteLineBreaks).
func quoted(s string) any {
	if strings.ContainsAny(s, "\n\r") {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	}
	return s
}

// omitted is quoted, or nil for "" (an omitempty field left out).
func omitted(s string) any {
	if s == "" {
		return nil
	}
	return quoted(s)
}

// quoteLineBreaks returns v with every string in it that holds a line
// break as a double-quoted scalar, keys too.
func quoteLineBreaks(v any) any {
	switch x := v.(type) {
	case string:
		return quoted(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = quoteLineBreaks(e)
		}
		return out
	case map[string]any:
		// A mapping node, so that a key with a line break is quoted too.
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
			if strings.ContainsAny(k, "\n\r") {
				kn.Style = yaml.DoubleQuotedStyle
			}
			vn := &yaml.Node{}
			if err := vn.Encode(quoteLineBreaks(x[k])); err != nil {
				return x
			}
			n.Content = append(n.Content, kn, vn)
		}
		return n
	case map[any]any:
		out := make(map[any]any, len(x))
		for k, e := range x {
			out[k] = quoteLineBreaks(e)
		}
		return out
	}
	return v
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalText writes d as a duration string (JSON).
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration string (JSON).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Parse reads a definition from YAML. Unknown fields are errors, so that
// a misspelt key (dependson, max-parallel) is not silently ignored.
func Parse(src []byte) (*Definition, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var d Definition
	if err := dec.Decode(&d); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("workflow: empty definition")
		}
		return nil, fmt.Errorf("workflow: %w", err)
	}
	return &d, nil
}

// ParseFile reads a definition from a YAML file.
func ParseFile(path string) (*Definition, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	d, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}
