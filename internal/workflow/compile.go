package workflow

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm"
)

// DefaultMaxSteps caps a definition's steps when Options.MaxSteps is 0.
const DefaultMaxSteps = 1000

// Options are what Compile checks a definition against.
type Options struct {
	// Served reports whether some pool serves a topic; nil checks none.
	Served func(topic string) bool
	// MaxSteps caps the steps of a definition; 0: DefaultMaxSteps.
	MaxSteps int
}

// Plan is a checked definition, ready to run: its steps in topological
// order (by depth, then id), every expression compiled.
type Plan struct {
	def     *Definition
	steps   []*node // topological order
	byID    map[string]*node
	progs   map[string]*vm.Program // every expression, by its source and env
	refs    map[string][]string    // the steps each of them reads, by the same key
	outputs []string               // Outputs' names, sorted
}

// node is a step of a Plan.
type node struct {
	Step
	pos        int     // index in Plan.steps
	depth      int     // 0 without dependencies, else 1 + its deepest's
	deps       []*node // sorted by id
	dependents []*node // sorted by id
	ancestors  map[string]bool
}

var stepID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Compile checks def and returns its plan. It refuses, naming each
// problem (all of them, joined): a step without an id or topic, a
// duplicate or malformed id, a dependency on an unknown step or on
// itself, a cycle (with its path), a bad expression or template, an
// expression reading a step the step does not depend on, a topic no pool
// serves (with opts.Served), a negative limit, too many steps.
func Compile(def *Definition, opts Options) (*Plan, error) {
	if def == nil {
		return nil, errors.New("workflow: no definition")
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	// unserved are the steps whose topic no pool serves: named with every
	// other problem, but no bar to checking the expressions.
	var unserved []error
	if def.Name == "" {
		fail("the workflow has no name")
	}
	max := opts.MaxSteps
	if max <= 0 {
		max = DefaultMaxSteps
	}
	switch {
	case len(def.Steps) == 0:
		fail("the workflow has no steps")
	case len(def.Steps) > max:
		fail("the workflow has %d steps, more than the %d allowed", len(def.Steps), max)
	}
	if def.MaxParallel < 0 {
		fail("max_parallel is %d, below 0", def.MaxParallel)
	}
	if def.Timeout < 0 {
		fail("timeout is %s, below 0", def.Timeout.Std())
	}
	if err := jsonable(def.Input); err != nil {
		fail("input: %v", err)
	}
	p := &Plan{def: def, byID: map[string]*node{}, progs: map[string]*vm.Program{}, refs: map[string][]string{}}
	for i := range def.Steps {
		s := def.Steps[i]
		label := fmt.Sprintf("step %q", s.ID)
		switch {
		case s.ID == "":
			fail("step %d has no id", i+1)
			continue
		case !stepID.MatchString(s.ID):
			fail("%s: an id is 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit", label)
		case p.byID[s.ID] != nil:
			fail("%s is defined twice", label)
			continue
		}
		if s.Topic == "" {
			fail("%s has no topic", label)
		} else if opts.Served != nil && !opts.Served(s.Topic) {
			unserved = append(unserved, fmt.Errorf("%s: no pool serves topic %q", label, s.Topic))
		}
		if s.MaxParallel < 0 {
			fail("%s: max_parallel is %d, below 0", label, s.MaxParallel)
		}
		if s.MaxParallel > 0 && s.ForEach == "" {
			fail("%s: max_parallel applies to for_each steps only", label)
		}
		if s.Retries != nil && *s.Retries < 0 {
			fail("%s: retries is %d, below 0", label, *s.Retries)
		}
		if s.Timeout < 0 {
			fail("%s: timeout is %s, below 0", label, s.Timeout.Std())
		}
		n := &node{Step: s}
		p.byID[s.ID] = n
		p.steps = append(p.steps, n)
	}
	for _, n := range p.steps {
		seen := map[string]bool{}
		for _, d := range n.DependsOn {
			dep := p.byID[d]
			switch {
			case d == n.ID:
				fail("step %q depends on itself", n.ID)
			case dep == nil:
				fail("step %q depends on unknown step %q", n.ID, d)
			case seen[d]:
				fail("step %q lists %q twice in depends_on", n.ID, d)
			default:
				n.deps = append(n.deps, dep)
				dep.dependents = append(dep.dependents, n)
			}
			seen[d] = true
		}
	}
	if cycle := findCycle(p.steps); cycle != nil {
		fail("the steps form a cycle: %s (each depends on the next)", strings.Join(cycle, " → "))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("workflow %s: %w", def.Name, errors.Join(append(errs, unserved...)...))
	}
	p.order()
	for _, n := range p.steps {
		errs = append(errs, p.compileStep(n)...)
	}
	for name := range def.Outputs {
		p.outputs = append(p.outputs, name)
	}
	sort.Strings(p.outputs) // the errors too are named in a stable order
	for _, name := range p.outputs {
		if err := p.compileExpr(nil, exprOf(def.Outputs[name])); err != nil {
			fail("output %q: %v", name, err)
		}
	}
	if errs = append(errs, unserved...); len(errs) > 0 {
		return nil, fmt.Errorf("workflow %s: %w", def.Name, errors.Join(errs...))
	}
	return p, nil
}

// findCycle returns a cycle's step ids, each depending on the next, the
// first repeated at the end; or nil. Steps are visited in id order, so the cycle named is always the
// same one.
func findCycle(steps []*node) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[*node]int{}
	var path []*node
	var cycle []string
	var visit func(n *node) bool
	visit = func(n *node) bool {
		color[n] = grey
		path = append(path, n)
		deps := slices.Clone(n.deps)
		slices.SortFunc(deps, func(a, b *node) int { return strings.Compare(a.ID, b.ID) })
		for _, d := range deps {
			switch color[d] {
			case grey:
				i := slices.Index(path, d)
				for _, m := range path[i:] {
					cycle = append(cycle, m.ID)
				}
				cycle = append(cycle, d.ID)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return false
	}
	sorted := slices.Clone(steps)
	slices.SortFunc(sorted, func(a, b *node) int { return strings.Compare(a.ID, b.ID) })
	for _, n := range sorted {
		if color[n] == white && visit(n) {
			return cycle
		}
	}
	return nil
}

// order sorts the steps topologically: by depth, then id; and fills each
// step's ancestors.
func (p *Plan) order() {
	var depth func(n *node) int
	done := map[*node]bool{}
	depth = func(n *node) int {
		if done[n] {
			return n.depth
		}
		n.ancestors = map[string]bool{}
		for _, d := range n.deps {
			n.depth = max(n.depth, depth(d)+1)
			n.ancestors[d.ID] = true
			for a := range d.ancestors {
				n.ancestors[a] = true
			}
		}
		done[n] = true
		return n.depth
	}
	for _, n := range p.steps {
		depth(n)
	}
	byOrder := func(a, b *node) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return strings.Compare(a.ID, b.ID)
	}
	slices.SortFunc(p.steps, byOrder)
	for i, n := range p.steps {
		n.pos = i
		slices.SortFunc(n.deps, byOrder)
		slices.SortFunc(n.dependents, byOrder)
	}
}

// Steps returns the step ids in the order the engine considers them:
// topological, by depth, then id.
func (p *Plan) Steps() []string {
	out := make([]string, len(p.steps))
	for i, n := range p.steps {
		out[i] = n.ID
	}
	return out
}

// Step returns the definition of step id, and whether there is one.
func (p *Plan) Step(id string) (Step, bool) {
	n := p.byID[id]
	if n == nil {
		return Step{}, false
	}
	return n.Step, true
}

// Downstream returns step id and every step that depends on it, directly
// or not: what a rerun from id runs again.
func (p *Plan) Downstream(id string) map[string]bool {
	out := map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if out[n.ID] {
			return
		}
		out[n.ID] = true
		for _, d := range n.dependents {
			walk(d)
		}
	}
	if n := p.byID[id]; n != nil {
		walk(n)
	}
	return out
}

// Definition returns the definition p was compiled from.
func (p *Plan) Definition() *Definition { return p.def }

// compileStep compiles n's condition, for_each list and payload template.
func (p *Plan) compileStep(n *node) []error {
	var errs []error
	label := fmt.Sprintf("step %q", n.ID)
	if n.If != "" {
		if err := p.compileExpr(n, exprOf(n.If)); err != nil {
			errs = append(errs, fmt.Errorf("%s: if: %v", label, err))
		}
	}
	if n.ForEach != "" {
		// for_each's own expression sees no item: it makes them.
		if err := p.compileExpr(&node{Step: Step{ID: n.ID}, ancestors: n.ancestors}, exprOf(n.ForEach)); err != nil {
			errs = append(errs, fmt.Errorf("%s: for_each: %v", label, err))
		}
	}
	if err := jsonable(n.Payload); err != nil {
		errs = append(errs, fmt.Errorf("%s: payload: %v", label, err))
	} else if err := walkTemplate(n.Payload, func(src string) error { return p.compileExpr(n, src) }); err != nil {
		errs = append(errs, fmt.Errorf("%s: payload: %v", label, err))
	}
	return errs
}

// jsonable says why v, a payload template's or the input's literal
// YAML, cannot be sent as JSON: a map key that is not a string, a number
// JSON has no way to write (.nan, .inf). Compile refuses it rather than
// let every run fail the step.
func jsonable(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if err := jsonable(t[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case map[any]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, fmt.Sprint(k))
		}
		slices.Sort(keys)
		return fmt.Errorf("the key %s is not a string (JSON has only string keys: quote it)", keys[0])
	case []any:
		for i, e := range t {
			if err := jsonable(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("%v is not a number JSON can carry", t)
		}
	}
	return nil
}

// exprOf is a condition's or list's expression: its text, without the
// ${{ }} it may be written in.
func exprOf(s string) string {
	if m := wholeExpr.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// compileExpr compiles src for step n (nil: the run's outputs), checks
// the steps it reads, and keeps the program (progKey).
func (p *Plan) compileExpr(n *node, src string) error {
	if strings.TrimSpace(src) == "" {
		return errors.New("empty expression")
	}
	prog, err := compileMetered(src, exprOptions(sampleEnv(n))...)
	if err != nil {
		return fmt.Errorf("expression %q: %v", src, err)
	}
	root := prog.Node()
	v := &stepRefs{}
	ast.Walk(&root, v)
	if v.now {
		return fmt.Errorf("expression %q calls now(): an expression must give the same value when the run's log is replayed, on any replica, at any time (pass the time in the input)", src)
	}
	for _, id := range v.ids {
		switch {
		case p.byID[id] == nil:
			return fmt.Errorf("expression %q reads steps.%s: there is no such step", src, id)
		case n != nil && !n.ancestors[id]:
			return fmt.Errorf("expression %q reads steps.%s, which step %q does not depend on (add it to depends_on)", src, id, n.ID)
		}
	}
	p.progs[progKey(n, src)] = prog
	p.refs[progKey(n, src)] = v.ids
	return nil
}

// progKey is where a step's compiled expression is kept: the same text
// compiles differently in a for_each step (item, index) and elsewhere.
func progKey(n *node, src string) string {
	if n != nil && n.ForEach != "" {
		return "each\x00" + src
	}
	return src
}

// maxExprNodes bounds an expression's size: a definition is a tenant's
// input.
const maxExprNodes = 2000

// env is what an expression reads: input, steps, run; eachEnv adds a
// for_each item and its index. They are structs, not maps, so that item,
// whose type is known only when the run gives it, checks as any value.
type env struct {
	Input map[string]any `expr:"input"`
	Steps map[string]any `expr:"steps"`
	Run   map[string]any `expr:"run"`
	Meter *meter         `expr:"#meter_state"` // meterVar: no expression can name it
}

type eachEnv struct {
	Input map[string]any `expr:"input"`
	Steps map[string]any `expr:"steps"`
	Run   map[string]any `expr:"run"`
	Item  any            `expr:"item"`
	Index int            `expr:"index"`
	Meter *meter         `expr:"#meter_state"`
}

// sampleEnv is the variables an expression of step n may read.
func sampleEnv(n *node) any {
	if n != nil && n.ForEach != "" {
		return eachEnv{}
	}
	return env{}
}

// exprOptions are every expression's compile options: its variables
// (env), its size bound, and builtins that give the same value wherever
// and whenever they run, as the log's replay needs: keys, values and
// toPairs list in key order, not Go's random map order. (now() is
// refused: stepRefs. date() without a zone reads its time as UTC, not in
// the replica's zone.) What one evaluation may do is bounded: meter.go.
func exprOptions(env any) []expr.Option {
	return []expr.Option{expr.Env(env), expr.MaxNodes(maxExprNodes),
		inKeyOrder("keys"), inKeyOrder("values"), inKeyOrder("toPairs"),
		bounded("repeat"), bounded("replace"), bounded("join")}
}

// inKeyOrder replaces builtin name (keys, values or toPairs) with one
// that lists the map's entries in key order.
func inKeyOrder(name string) expr.Option {
	return func(c *conf.Config) {
		b := c.Builtins[name]
		if b == nil {
			return
		}
		c.Functions[name] = &builtin.Function{Name: name, Validate: b.Validate, Func: func(args ...any) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("%s: want 1 argument, got %d", name, len(args))
			}
			m := reflect.ValueOf(args[0])
			if m.Kind() != reflect.Map {
				return nil, fmt.Errorf("%s: %T is not a map", name, args[0])
			}
			keys := m.MapKeys()
			slices.SortStableFunc(keys, compareKeys)
			out := make([]any, len(keys))
			for i, k := range keys {
				switch name {
				case "keys":
					out[i] = k.Interface()
				case "values":
					out[i] = m.MapIndex(k).Interface()
				default:
					out[i] = []any{k.Interface(), m.MapIndex(k).Interface()}
				}
			}
			return out, nil
		}}
	}
}

// compareKeys orders map keys: strings as strings, numbers as numbers,
// anything else (and ties between kinds) by type and text.
func compareKeys(a, b reflect.Value) int {
	x, y := a.Interface(), b.Interface()
	if s, ok := x.(string); ok {
		if t, ok := y.(string); ok {
			return strings.Compare(s, t)
		}
	}
	if f, ok := number(a); ok {
		if g, ok := number(b); ok {
			if c := cmp.Compare(f, g); c != 0 {
				return c
			}
		}
	}
	return cmp.Or(strings.Compare(fmt.Sprintf("%T", x), fmt.Sprintf("%T", y)), strings.Compare(fmt.Sprint(x), fmt.Sprint(y)))
}

func number(v reflect.Value) (float64, bool) {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch {
	case v.CanInt():
		return float64(v.Int()), true
	case v.CanUint():
		return float64(v.Uint()), true
	case v.CanFloat():
		return v.Float(), true
	}
	return 0, false
}

// stepRefs collects the step ids an expression reads (steps.x,
// steps["x"]), and whether it calls now().
type stepRefs struct {
	ids []string
	now bool
}

func (v *stepRefs) Visit(n *ast.Node) {
	if b, ok := (*n).(*ast.BuiltinNode); ok && b.Name == "now" {
		v.now = true
	}
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	if id, ok := m.Node.(*ast.IdentifierNode); !ok || id.Value != "steps" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok && !slices.Contains(v.ids, s.Value) {
		v.ids = append(v.ids, s.Value)
	}
}
