package safety

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"
)

// PolicyPackage is the Rego package a bundle must declare. Its deny rule
// (a set of messages) and its constraints rule (an object) make the
// decision; both may be absent, meaning no denials and no constraints.
const PolicyPackage = "ward.safety"

// kernelModule is compiled with every bundle. It gives deny and constraints
// defaults, so that one prepared query always has exactly one result even
// when a bundle leaves a rule out or a complete rule is undefined for an
// input. Bundles may not declare its package.
const (
	kernelPackage = "ward.kernel"
	kernelModule  = `package ward.kernel

default deny := set()

deny := data.ward.safety.deny

default constraints := {}

constraints := data.ward.safety.constraints
`
	kernelQuery = "deny = data.ward.kernel.deny; constraints = data.ward.kernel.constraints"
	// directQuery skips the kernel module's defaults: one level of rules
	// less per evaluation. It has no result when a rule is undefined (a
	// policy without one, or a complete rule that did not hold); eval then
	// asks kernelQuery.
	directQuery = "deny = data.ward.safety.deny; constraints = data.ward.safety.constraints"
)

// The variables the queries bind.
var (
	varDeny        = ast.Var("deny")
	varConstraints = ast.Var("constraints")
)

// Errors a bundle can be refused with. Check them with errors.Is.
var (
	// ErrInvalidBundle: the bundle does not parse or compile, or breaks a
	// rule of bundles (no package ward.safety, a reserved package, two
	// data files).
	ErrInvalidBundle = errors.New("safety: invalid bundle")
	// ErrTestsFailed: the bundle compiles but some of its tests fail. The
	// error is a *TestsFailedError listing them.
	ErrTestsFailed = errors.New("safety: policy tests failed")
)

// DefaultTestTimeout bounds one Rego test in Test and Prepare.
const DefaultTestTimeout = 10 * time.Second

// Policy is a compiled bundle, ready to evaluate. It is immutable and safe
// for concurrent use.
type Policy struct {
	revision string
	// The compiled modules and queries, evaluated with OPA's topdown
	// directly: the rego package's per-evaluation set-up (its context,
	// options, result conversion) would cost a fifth of a Check.
	compiler *ast.Compiler
	store    storage.Store
	qc       ast.QueryCompiler
	direct   ast.Body // directQuery, compiled
	query    ast.Body // kernelQuery, compiled
	// fields are the input fields the policy can read: the input document
	// holds only them, and the decision cache keys on them.
	fields fieldSet
	// cacheable is false when the policy calls non-deterministic built-ins
	// (time, randomness, HTTP), so that equal inputs may be decided
	// differently.
	cacheable bool
	tests     int
	// modules caches the input's module objects (inputValue).
	modules *termCache
}

// Revision returns the bundle revision the policy was compiled from.
func (p *Policy) Revision() string { return p.revision }

// Tests returns how many Rego tests the policy passed in Prepare (0 after
// Compile alone).
func (p *Policy) Tests() int { return p.tests }

// Compile parses and compiles the bundle's policy and data, not its tests.
// Errors wrap ErrInvalidBundle.
func Compile(b *Bundle) (*Policy, error) { return compile(b, true) }

// compile compiles b; inline says whether ground refs to data are replaced
// by their values (see inlineData). Tests turn it off to check that it
// changes no decision.
func compile(b *Bundle, inline bool) (*Policy, error) {
	mods, data, err := parseBundle(b, false)
	if err != nil {
		return nil, err
	}
	obj, err := dataObject(data)
	if err != nil {
		return nil, err
	}
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if inline {
		c = c.WithStageAfterID(ast.StageCheckTypes, ast.CompilerStageDefinition{
			Name: "WardInlineData", MetricName: "ward_inline_data", Stage: inlineData(obj),
		})
	}
	if c.Compile(mods); c.Failed() {
		return nil, fmt.Errorf("%w: %w", ErrInvalidBundle, c.Errors)
	}
	qc := c.QueryCompiler()
	prepare := func(query string) (ast.Body, error) {
		body, err := qc.Compile(ast.MustParseBodyWithOpts(query, ast.ParserOptions{RegoVersion: ast.RegoV1}))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
		}
		return body, nil
	}
	direct, err := prepare(directQuery)
	if err != nil {
		return nil, err
	}
	query, err := prepare(kernelQuery)
	if err != nil {
		return nil, err
	}
	return &Policy{
		revision:  b.Revision(),
		compiler:  c,
		store:     inmem.NewFromASTObject(obj),
		qc:        qc,
		direct:    direct,
		query:     query,
		fields:    inputFields(c.Modules),
		cacheable: deterministic(c.Modules),
		modules:   &termCache{max: moduleTermsKept},
	}, nil
}

// inlineData is a compiler stage, after type checking, that replaces every
// ground ref into the data document (data.defaults.allowed_topics, the
// whole of data.tenants) by its value, so that evaluations read it from
// the compiled policy instead of the store: no path lookup, no store read,
// no allocation. The data of a loaded bundle never changes, so this changes
// no decision. It leaves alone refs with variables (data.tenants[x]), refs
// under a top-level key that a package also uses (data.ward), refs to
// paths the data does not have, and every bundle that overrides data with
// `with` outside its tests.
func inlineData(data ast.Object) func(*ast.Compiler) *ast.Error {
	return func(c *ast.Compiler) *ast.Error {
		virtual := map[string]bool{}
		overridden := false
		for _, m := range c.Modules {
			if len(m.Package.Path) > 1 {
				if s, ok := m.Package.Path[1].Value.(ast.String); ok {
					virtual[string(s)] = true
				}
			}
			ast.WalkExprs(m, func(e *ast.Expr) bool {
				for _, w := range e.With {
					if r, ok := w.Target.Value.(ast.Ref); ok && r.HasPrefix(ast.DefaultRootRef) {
						overridden = true
					}
				}
				return overridden
			})
		}
		if overridden {
			return nil
		}
		for _, m := range c.Modules {
			ast.WalkTerms(m, func(t *ast.Term) bool {
				r, ok := t.Value.(ast.Ref)
				if !ok || len(r) < 2 || !r.HasPrefix(ast.DefaultRootRef) || !r.IsGround() {
					return false
				}
				if top, ok := r[1].Value.(ast.String); !ok || virtual[string(top)] {
					return false
				}
				if v, err := data.Find(r[1:]); err == nil {
					t.Value = v
				}
				return false
			})
		}
		return nil
	}
}

// Prepare compiles the bundle and runs its tests: the checks every bundle
// passes before a kernel puts it in force. A bundle whose tests fail is
// refused with a *TestsFailedError.
func Prepare(ctx context.Context, b *Bundle) (*Policy, error) {
	p, err := Compile(b)
	if err != nil {
		return nil, err
	}
	results, err := Test(ctx, b)
	if err != nil {
		return nil, err
	}
	var failed []TestResult
	for _, r := range results {
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		return nil, &TestsFailedError{Revision: p.revision, Failed: failed, Total: len(results)}
	}
	p.tests = len(results)
	return p, nil
}

// Test outcomes.
const (
	OutcomePass  = "PASS"
	OutcomeFail  = "FAIL"
	OutcomeError = "ERROR"
	OutcomeSkip  = "SKIPPED"
)

// TestResult is the outcome of one Rego test.
type TestResult struct {
	// Name is the test rule's full name, e.g. data.ward.safety_test.test_x.
	Name string
	// Location is file:line.
	Location string
	// Outcome is OutcomePass, OutcomeFail, OutcomeError or OutcomeSkip.
	Outcome  string
	Duration time.Duration
	// Err says why an ERROR test errored.
	Err string
	// FailedAt says why a FAIL test failed: the first expression of the
	// test that was false, with its location ("blocked_test.rego:6:
	// safety.deny == {...}"); empty when none of the test's own
	// expressions failed (the rule it names was undefined).
	FailedAt string
	// Output is what the test printed with print().
	Output string
}

// Failed reports whether the test failed or errored: a bundle with such a
// test is refused.
func (r TestResult) Failed() bool { return r.Outcome == OutcomeFail || r.Outcome == OutcomeError }

// String is the result on one line: outcome, name, location and error.
func (r TestResult) String() string {
	s := fmt.Sprintf("%s %s (%s)", r.Outcome, r.Name, r.Location)
	if r.Err != "" {
		s += ": " + r.Err
	}
	if r.FailedAt != "" {
		s += ": failed at " + r.FailedAt
	}
	return s
}

// TestsFailedError lists the tests a bundle failed.
type TestsFailedError struct {
	// Revision is the bundle's revision.
	Revision string
	// Failed are the tests that failed or errored, sorted by name.
	Failed []TestResult
	// Total is how many tests ran.
	Total int
}

// Error lists the failed tests, one a line.
func (e *TestsFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "safety: bundle %s: %d of %d policy tests failed", e.Revision, len(e.Failed), e.Total)
	for _, r := range e.Failed {
		b.WriteString("\n  ")
		b.WriteString(r.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrTestsFailed) true.
func (e *TestsFailedError) Unwrap() error { return ErrTestsFailed }

// Test runs the bundle's Rego tests (rules named test_* in any package of
// its *_test.rego and other files), with the bundle's data, as `opa test`
// would. The results are sorted by name. An error means the tests could
// not run: the bundle, tests included, does not compile.
func Test(ctx context.Context, b *Bundle) ([]TestResult, error) {
	results, _, err := test(ctx, b, false)
	return results, err
}

// Coverage is which lines of the bundle's policy files the tests ran.
type Coverage struct {
	// Files maps each policy file (tests excluded) to its coverage.
	Files map[string]FileCoverage
	// Percent is over every policy file.
	Percent float64
}

// FileCoverage is one file's line coverage.
type FileCoverage struct {
	// Covered is how many lines the tests ran.
	Covered int
	// NotCovered are the lines no test ran, in order.
	NotCovered []int
	// Percent is the share of the file's lines the tests ran.
	Percent float64
}

// TestBundle checks b as `ward policy test` does: its policy must compile
// as a kernel compiles it, tests or no tests (an error wrapping
// ErrInvalidBundle otherwise), then its tests run as in Test. With
// coverage set it reports the lines of the policy files they ran too (the
// Coverage is nil otherwise). Unlike Prepare, a test that fails is a
// result, not an error.
func TestBundle(ctx context.Context, b *Bundle, coverage bool) ([]TestResult, *Coverage, error) {
	if _, err := Compile(b); err != nil {
		return nil, nil, err
	}
	return test(ctx, b, coverage)
}

func test(ctx context.Context, b *Bundle, coverage bool) ([]TestResult, *Coverage, error) {
	mods, data, err := parseBundle(b, true)
	if err != nil {
		return nil, nil, err
	}
	runner := tester.NewRunner().
		SetStore(inmem.NewFromObject(data)).
		SetDefaultRegoVersion(ast.RegoV1).
		CapturePrintOutput(true).
		SetTimeout(DefaultTestTimeout).
		SetModules(mods)
	var cov *cover.Cover
	if coverage {
		cov = cover.New()
		runner = runner.SetCoverageQueryTracer(cov)
	}
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
	}
	var results []TestResult
	for r := range ch {
		tr := TestResult{
			Name:     r.Package + "." + r.Name,
			Duration: r.Duration,
			Output:   string(r.Output),
		}
		if r.Location != nil {
			tr.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		switch {
		case r.Error != nil:
			tr.Outcome, tr.Err = OutcomeError, r.Error.Error()
		case r.Skip:
			tr.Outcome = OutcomeSkip
		case r.Fail:
			tr.Outcome = OutcomeFail
		default:
			tr.Outcome = OutcomePass
		}
		results = append(results, tr)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("safety: policy tests: %w", err)
	}
	explainFailures(ctx, mods, data, results)
	slices.SortFunc(results, func(a, b TestResult) int { return strings.Compare(a.Name, b.Name) })
	if cov == nil {
		return results, nil, nil
	}
	policy := map[string]*ast.Module{}
	for name, m := range mods {
		if name != "<kernel>" && !isTest(name) {
			policy[name] = m
		}
	}
	rep := cov.Report(policy)
	c := &Coverage{Files: map[string]FileCoverage{}, Percent: rep.Coverage}
	for name, fr := range rep.Files {
		if _, ok := policy[name]; !ok {
			continue
		}
		fc := FileCoverage{Covered: fr.CoveredLines, Percent: fr.Coverage}
		for _, r := range fr.NotCovered {
			for row := r.Start.Row; row <= r.End.Row; row++ {
				fc.NotCovered = append(fc.NotCovered, row)
			}
		}
		c.Files[name] = fc
	}
	return results, c, nil
}

// parseBundle parses the bundle's modules (with tests when tests is set)
// and data, and adds the kernel module.
func parseBundle(b *Bundle, tests bool) (map[string]*ast.Module, map[string]any, error) {
	mods := map[string]*ast.Module{}
	data := map[string]any{}
	var dataFile string
	havePolicy := false
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		bs := b.Files[name]
		if name == "data.json" || name == "data.yaml" {
			if dataFile != "" {
				return nil, nil, fmt.Errorf("%w: both %s and %s present", ErrInvalidBundle, dataFile, name)
			}
			dataFile = name
			if err := util.Unmarshal(bs, &data); err != nil {
				return nil, nil, fmt.Errorf("%w: parse %s: %w", ErrInvalidBundle, name, err)
			}
			if data == nil {
				data = map[string]any{}
			}
			continue
		}
		if isTest(name) && !tests {
			continue
		}
		mod, err := ast.ParseModuleWithOpts(name, string(bs), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalidBundle, err)
		}
		if mod == nil {
			// The file holds only comments.
			continue
		}
		switch pkg := strings.TrimPrefix(mod.Package.Path.String(), "data."); {
		case pkg == PolicyPackage:
			havePolicy = true
		case pkg == kernelPackage || strings.HasPrefix(pkg, kernelPackage+"."):
			return nil, nil, fmt.Errorf("%w: %s: package %s is reserved for the kernel", ErrInvalidBundle, name, pkg)
		}
		mods[name] = mod
	}
	if !havePolicy {
		return nil, nil, fmt.Errorf("%w: no module declares package %s", ErrInvalidBundle, PolicyPackage)
	}
	kmod, err := ast.ParseModuleWithOpts("ward.kernel.rego", kernelModule, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, nil, fmt.Errorf("safety: parse kernel module: %w", err)
	}
	// The key cannot collide with a bundle file: those end in .rego.
	mods["<kernel>"] = kmod
	return mods, data, nil
}

// dataObject converts data to Rego values, once: the store holds them as
// such, so that no evaluation converts them again.
func dataObject(data map[string]any) (ast.Object, error) {
	v, err := ast.InterfaceToValue(data)
	if err != nil {
		return nil, fmt.Errorf("%w: data: %w", ErrInvalidBundle, err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%w: data is %T, want an object", ErrInvalidBundle, v)
	}
	return obj, nil
}

// deterministic reports whether no module calls a non-deterministic
// built-in.
func deterministic(mods map[string]*ast.Module) bool {
	ok := true
	check := func(op ast.Ref) {
		if b, found := ast.BuiltinMap[op.String()]; found && b.Nondeterministic {
			ok = false
		}
	}
	for _, m := range mods {
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if e.IsCall() {
				check(e.Operator())
			}
			return !ok
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if c, isCall := t.Value.(ast.Call); isCall && len(c) > 0 {
				if r, isRef := c[0].Value.(ast.Ref); isRef {
					check(r)
				}
			}
			return !ok
		})
	}
	return ok
}

// explainFailures fills the FailedAt of the tests that failed: it runs
// them again, traced (tracing every test would slow the passing ones), and
// finds the first expression of each test's own body that was false.
func explainFailures(ctx context.Context, mods map[string]*ast.Module, data map[string]any, results []TestResult) {
	failed := map[string]int{}
	var names []string
	for i, r := range results {
		if r.Outcome == OutcomeFail {
			failed[r.Name] = i
			names = append(names, regexp.QuoteMeta(r.Name))
		}
	}
	if len(names) == 0 {
		return
	}
	ch, err := tester.NewRunner().
		SetStore(inmem.NewFromObject(data)).
		SetDefaultRegoVersion(ast.RegoV1).
		CapturePrintOutput(true).
		SetTimeout(DefaultTestTimeout).
		SetModules(mods).
		EnableTracing(true).
		Filter("^("+strings.Join(names, "|")+")$").
		RunTests(ctx, nil)
	if err != nil {
		return
	}
	for r := range ch {
		i, ok := failed[r.Package+"."+r.Name]
		if !ok || !r.Fail || r.Location == nil {
			continue
		}
		results[i].FailedAt = failedAt(r.Location, r.Trace)
	}
}

// failedAt is the first expression of the test at loc whose evaluation
// failed, as "file:row: text"; expressions of other rules the test calls
// are not its own.
func failedAt(loc *ast.Location, trace []*topdown.Event) string {
	last := loc.Row + strings.Count(string(loc.Text), "\n")
	for _, ev := range trace {
		if ev.Op != topdown.FailOp || ev.Location == nil || ev.Location.File != loc.File {
			continue
		}
		if _, ok := ev.Node.(*ast.Expr); !ok || ev.Location.Row < loc.Row || ev.Location.Row > last {
			continue
		}
		text := strings.Join(strings.Fields(string(ev.Location.Text)), " ")
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return fmt.Sprintf("%s:%d: %s", ev.Location.File, ev.Location.Row, text)
	}
	return ""
}
