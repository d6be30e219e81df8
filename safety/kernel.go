// Package safety is Ward's safety kernel: it evaluates a Rego policy bundle
// for every job and decides whether the job may run, and under which
// constraints. Kernel does the evaluation in process, Server exposes it as
// the ward.safety.v1.SafetyKernel gRPC service, and Client is what the
// scheduler calls, failing closed with ErrUnavailable.
package safety

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
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
	kernelQuery = "deny := data.ward.kernel.deny; constraints := data.ward.kernel.constraints"
)

// ErrNoPolicy is returned by Check on a Kernel that has no bundle loaded.
var ErrNoPolicy = errors.New("safety: no policy loaded")

var (
	decisions = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_decisions_total",
		Help: "Safety decisions made by the kernel, by decision (allow, deny, allow_with_constraints, error).",
	}, []string{"decision"})
	evalSeconds = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "ward_safety_evaluation_seconds",
		Help:    "Time the kernel took to evaluate the policy for one Check.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 14), // 10µs to ~80ms
	})
	policyLoads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_safety_policy_loads_total",
		Help: "Policy bundle loads, by result (ok, error).",
	}, []string{"result"})

	// Curried once: a label lookup per Check would cost a map access and a
	// lock.
	allowTotal       = decisions.WithLabelValues("allow")
	denyTotal        = decisions.WithLabelValues("deny")
	constrainedTotal = decisions.WithLabelValues("allow_with_constraints")
	errorTotal       = decisions.WithLabelValues("error")
)

// Kernel evaluates a compiled policy bundle. It is safe for concurrent use;
// Load swaps the bundle atomically while Checks are in flight, each Check
// seeing either the old bundle or the new one. Create one with New or
// NewFromDir; a zero Kernel denies nothing and allows nothing: its Checks
// fail with ErrNoPolicy until a Load succeeds.
type Kernel struct {
	cur atomic.Pointer[compiled]
}

// compiled is one loaded bundle. It is never modified after it is built.
type compiled struct {
	query    rego.PreparedEvalQuery
	revision string
}

// New returns a Kernel that evaluates the bundle in fsys (see Load).
func New(fsys fs.FS) (*Kernel, error) {
	k := &Kernel{}
	if err := k.Load(fsys); err != nil {
		return nil, err
	}
	return k, nil
}

// NewFromDir returns a Kernel that evaluates the bundle in the directory dir.
func NewFromDir(dir string) (*Kernel, error) {
	return New(os.DirFS(dir))
}

// Load compiles the bundle in fsys and, only once it compiled, makes it the
// one that Check evaluates. On error the bundle in force stays in force.
//
// The bundle is every *.rego file in fsys, in any directory, except the
// *_test.rego unit tests, plus data.json or data.yaml at the root, if there
// is one, as the policy's data document. The modules are Rego v1 and one of
// them must declare package ward.safety.
func (k *Kernel) Load(fsys fs.FS) error {
	c, err := compile(fsys)
	if err != nil {
		policyLoads.WithLabelValues("error").Inc()
		return err
	}
	k.cur.Store(c)
	policyLoads.WithLabelValues("ok").Inc()
	return nil
}

// Revision returns the revision of the bundle in force: the first 12 hex
// digits of a SHA-256 over its files' names and contents. It is empty when
// no bundle was loaded.
func (k *Kernel) Revision() string {
	if c := k.cur.Load(); c != nil {
		return c.revision
	}
	return ""
}

// Check evaluates the policy for req. The decision is DENY, with every
// deny message sorted as reasons, when any deny rule holds;
// ALLOW_WITH_CONSTRAINTS when the constraints object is not empty; ALLOW
// otherwise. An error means the policy could not be evaluated (it failed at
// run time, or its constraints are malformed); the job must then be treated
// as denied.
func (k *Kernel) Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	c := k.cur.Load()
	if c == nil {
		errorTotal.Inc()
		return nil, ErrNoPolicy
	}
	start := time.Now()
	rs, err := c.query.Eval(ctx, rego.EvalParsedInput(inputValue(req)))
	evalSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		errorTotal.Inc()
		return nil, fmt.Errorf("safety: evaluate policy %s: %w", c.revision, err)
	}
	if len(rs) != 1 {
		// The kernel module defines both bindings for any input, so this
		// is a bug, not a policy outcome.
		errorTotal.Inc()
		return nil, fmt.Errorf("safety: evaluate policy %s: %d results, want 1", c.revision, len(rs))
	}
	b := rs[0].Bindings

	resp := &safetyv1.CheckResponse{
		PolicyRevision: c.revision,
		DecisionId:     uuid.NewString(),
	}
	reasons, err := denyReasons(b["deny"])
	if err != nil {
		errorTotal.Inc()
		return nil, fmt.Errorf("safety: policy %s: %w", c.revision, err)
	}
	if len(reasons) > 0 {
		resp.Decision = safetyv1.Decision_DECISION_DENY
		resp.Reasons = reasons
		denyTotal.Inc()
		return resp, nil
	}
	cons, err := constraints(b["constraints"])
	if err != nil {
		errorTotal.Inc()
		return nil, fmt.Errorf("safety: policy %s: %w", c.revision, err)
	}
	if cons != nil {
		resp.Decision = safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS
		resp.Constraints = cons
		constrainedTotal.Inc()
		return resp, nil
	}
	resp.Decision = safetyv1.Decision_DECISION_ALLOW
	allowTotal.Inc()
	return resp, nil
}

// compile reads, parses and compiles the bundle in fsys and prepares the
// kernel query against it.
func compile(fsys fs.FS) (*compiled, error) {
	files := map[string][]byte{}
	var dataFile string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch {
		case strings.HasSuffix(p, "_test.rego"):
			return nil
		case strings.HasSuffix(p, ".rego"):
		case p == "data.json" || p == "data.yaml":
			if dataFile != "" {
				return fmt.Errorf("both %s and %s present", dataFile, p)
			}
			dataFile = p
		default:
			return nil
		}
		bs, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files[p] = bs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("safety: read bundle: %w", err)
	}

	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)

	// The revision covers names as well as contents, so renaming a file is
	// a new revision; the length prefixes keep the encoding unambiguous.
	h := sha256.New()
	opts := []func(*rego.Rego){
		rego.Query(kernelQuery),
		rego.SetRegoVersion(ast.RegoV1),
	}
	havePolicy := false
	data := map[string]any{}
	for _, name := range names {
		bs := files[name]
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(bs))
		h.Write(bs)

		if name == dataFile {
			if err := util.Unmarshal(bs, &data); err != nil {
				return nil, fmt.Errorf("safety: parse %s: %w", name, err)
			}
			continue
		}
		mod, err := ast.ParseModuleWithOpts(name, string(bs), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, fmt.Errorf("safety: parse bundle: %w", err)
		}
		if mod == nil {
			// The file holds only comments.
			continue
		}
		switch pkg := strings.TrimPrefix(mod.Package.Path.String(), "data."); {
		case pkg == PolicyPackage:
			havePolicy = true
		case pkg == kernelPackage || strings.HasPrefix(pkg, kernelPackage+"."):
			return nil, fmt.Errorf("safety: %s: package %s is reserved for the kernel", name, pkg)
		}
		opts = append(opts, rego.ParsedModule(mod))
	}
	if !havePolicy {
		return nil, fmt.Errorf("safety: bundle declares no package %s", PolicyPackage)
	}
	revision := hex.EncodeToString(h.Sum(nil))[:12]

	kmod, err := ast.ParseModuleWithOpts("ward.kernel.rego", kernelModule, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, fmt.Errorf("safety: parse kernel module: %w", err)
	}
	opts = append(opts, rego.ParsedModule(kmod), rego.Store(inmem.NewFromObject(data)))

	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		return nil, fmt.Errorf("safety: compile bundle: %w", err)
	}
	return &compiled{query: pq, revision: revision}, nil
}

// inputValue builds the policy's input document from req directly as a Rego
// value: going through protojson and back would cost several times the
// evaluation itself. Every field is present, zero values included, under
// its proto name, so that policies need no defaults.
func inputValue(req *safetyv1.CheckRequest) ast.Value {
	labels := make([][2]*ast.Term, 0, len(req.GetLabels()))
	for k, v := range req.GetLabels() {
		labels = append(labels, ast.Item(ast.StringTerm(k), ast.StringTerm(v)))
	}
	mod := req.GetModule()
	g := mod.GetRequested()
	return ast.NewObject(
		ast.Item(ast.InternedTerm("job_id"), ast.StringTerm(req.GetJobId())),
		ast.Item(ast.InternedTerm("topic"), ast.StringTerm(req.GetTopic())),
		ast.Item(ast.InternedTerm("tenant_id"), ast.StringTerm(req.GetTenantId())),
		ast.Item(ast.InternedTerm("labels"), ast.NewTerm(ast.NewObject(labels...))),
		ast.Item(ast.InternedTerm("requires"), stringsTerm(req.GetRequires())),
		ast.Item(ast.InternedTerm("priority"), ast.InternedTerm(req.GetPriority())),
		ast.Item(ast.InternedTerm("payload_size"), ast.InternedTerm(req.GetPayloadSize())),
		ast.Item(ast.InternedTerm("module"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("name"), ast.StringTerm(mod.GetName())),
			ast.Item(ast.InternedTerm("digest"), ast.StringTerm(mod.GetDigest())),
			ast.Item(ast.InternedTerm("requested"), ast.ObjectTerm(
				ast.Item(ast.InternedTerm("http_hosts"), stringsTerm(g.GetHttpHosts())),
				ast.Item(ast.InternedTerm("read_only_dirs"), stringsTerm(g.GetReadOnlyDirs())),
				ast.Item(ast.InternedTerm("env_keys"), stringsTerm(g.GetEnvKeys())),
				ast.Item(ast.InternedTerm("memory_limit_bytes"), ast.InternedTerm(g.GetMemoryLimitBytes())),
				ast.Item(ast.InternedTerm("time_limit_ms"), ast.InternedTerm(g.GetTimeLimitMs())),
			)),
		)),
		ast.Item(ast.InternedTerm("pool"), ast.StringTerm(req.GetPool())),
	)
}

func stringsTerm(ss []string) *ast.Term {
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(ts...)
}

// denyReasons turns the deny set into sorted messages. A message that is
// not a string is kept in its JSON form rather than dropped: a deny is a
// deny. Messages are made valid UTF-8, which proto strings must be, since
// policies may echo input that is not.
func denyReasons(v any) ([]string, error) {
	set, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("deny is %T, want a set of messages", v)
	}
	if len(set) == 0 {
		return nil, nil
	}
	reasons := make([]string, len(set))
	for i, m := range set {
		s, ok := m.(string)
		if !ok {
			bs, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("deny message %v: %w", m, err)
			}
			s = string(bs)
		}
		reasons[i] = strings.ToValidUTF8(s, "\uFFFD")
	}
	slices.Sort(reasons)
	return reasons, nil
}

// errConstraints is wrapped by every malformed-constraints error.
var errConstraints = errors.New("malformed constraints")

// constraints converts the constraints object. It returns nil for an empty
// object. Unknown keys and values of the wrong type are errors, so that a
// typo in a policy shows at once instead of silently granting nothing.
func constraints(v any) (*wardv1.Constraints, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: constraints is %T, want an object", errConstraints, v)
	}
	if len(obj) == 0 {
		return nil, nil
	}
	c := &wardv1.Constraints{}
	var err error
	for key, val := range obj {
		switch key {
		case "max_concurrent_jobs":
			c.MaxConcurrentJobs, err = int32Field(key, val)
		case "max_retries":
			c.MaxRetries, err = int32Field(key, val)
		case "deadline_ms":
			c.DeadlineMs, err = int64Field(key, val)
		case "grants":
			c.Grants, err = grants(val)
		default:
			err = fmt.Errorf("%w: unknown key %q", errConstraints, key)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

func grants(v any) (*wardv1.Grants, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: grants is %T, want an object", errConstraints, v)
	}
	g := &wardv1.Grants{}
	var err error
	for key, val := range obj {
		name := "grants." + key
		switch key {
		case "http_hosts":
			g.HttpHosts, err = stringsField(name, val)
		case "read_only_dirs":
			g.ReadOnlyDirs, err = stringsField(name, val)
		case "env_keys":
			g.EnvKeys, err = stringsField(name, val)
		case "memory_limit_bytes":
			g.MemoryLimitBytes, err = int64Field(name, val)
		case "time_limit_ms":
			g.TimeLimitMs, err = int64Field(name, val)
		default:
			err = fmt.Errorf("%w: unknown key %q", errConstraints, name)
		}
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

func int64Field(name string, v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%w: %s is %T, want a number", errConstraints, name, v)
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%w: %s is %s, want an integer from 0 to %d", errConstraints, name, n, int64(math.MaxInt64))
	}
	return i, nil
}

func int32Field(name string, v any) (int32, error) {
	i, err := int64Field(name, v)
	if err != nil {
		return 0, err
	}
	if i > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s is %d, want an integer from 0 to %d", errConstraints, name, i, math.MaxInt32)
	}
	return int32(i), nil
}

func stringsField(name string, v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %T, want an array of strings", errConstraints, name, v)
	}
	ss := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is %T, want a string", errConstraints, name, i, e)
		}
		ss[i] = strings.ToValidUTF8(s, "\uFFFD")
	}
	return ss, nil
}
