package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ward-run/ward/api/reason"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/policies"
)

// AdminParts are what the admin's endpoints use besides the client.
type AdminParts struct {
	// Registry is the module registry (modules, rollback).
	Registry *modreg.Registry
	// JS is the JetStream the audit log lives in.
	JS jetstream.JetStream
	// PolicyBucket is the kernels' policy bucket; "" is safety's default.
	PolicyBucket string
	// Pools is the pools.yaml the schedulers read, which a deployed
	// module's route must not contradict; the embedded default when nil.
	Pools *config.Pools
	// ModuleKey signs deployed modules (hosts with trusted keys run only
	// signed versions); nil deploys them unsigned.
	ModuleKey ed25519.PrivateKey
	// PolicyKey signs pushed bundles (kernels with a public key load only
	// signed ones); nil pushes them unsigned.
	PolicyKey *safety.PolicySigningKey
}

// dlqAPI is the dead-letter queue's endpoints (/v1/dlq), asked on the
// admin's client; a tenant's key's job is checked through its own.
type dlqAPI struct {
	deadline
	client  *client.Client
	clients *tenantClients
	audit   *auditTrail
}

func (dq *dlqAPI) mount(api mountFunc) {
	api("GET", "/v1/dlq", ScopeRead, dq.dlq)
	api("POST", "/v1/dlq/{id}/retry", ScopeSubmit, dq.dlqRetry)
	api("DELETE", "/v1/dlq/{id}", ScopeSubmit, dq.dlqDrop)
}

// modulesAPI is the module registry's endpoints (/v1/modules): the
// registry (nil: 503), the hosts (on the admin's client) for the modules
// they serve of their own, the pools deploys are checked against and the
// key that signs them.
type modulesAPI struct {
	deadline
	client  *client.Client
	reg     *modreg.Registry
	pools   *config.Pools
	key     ed25519.PrivateKey
	maxBody int64
	audit   *auditTrail
	log     *slog.Logger
}

func (ma *modulesAPI) mount(api mountFunc) {
	api("GET", "/v1/modules", ScopeRead, ma.modules)
	api("GET", "/v1/modules/{name}", ScopeRead, ma.module)
	api("POST", "/v1/modules", ScopeAdmin, ma.moduleDeploy)
	api("POST", "/v1/modules/{name}/rollback", ScopeAdmin, ma.moduleRollback)
}

// policiesAPI is the safety policy's endpoints (/v1/policies): the
// kernels' bucket and statuses (over the admin's client's NATS), the key
// that signs pushed bundles, and the compiled policy last evaluated.
type policiesAPI struct {
	deadline
	client *client.Client
	bucket string
	key    *safety.PolicySigningKey
	audit  *auditTrail
	cache  policyCache
}

func (pa *policiesAPI) mount(api mountFunc) {
	api("GET", "/v1/policies", ScopeRead, pa.policyStatus)
	api("POST", "/v1/policies/eval", ScopeRead, pa.policyEval)
	api("POST", "/v1/policies/test", ScopeAdmin, pa.policyTest)
	api("POST", "/v1/policies/impact", ScopeAdmin, pa.policyImpact)
	api("GET", "/v1/policies/history", ScopeAdmin, pa.policyHistory)
	api("POST", "/v1/policies/rollback", ScopeAdmin, pa.policyRollback)
	api("PUT", "/v1/policies", ScopeAdmin, pa.policyPush)
}

// auditTrail is the audit log (Config.Admin.JS; nil: none): what the
// endpoints that change things record, and GET /v1/audit.
type auditTrail struct {
	deadline
	js  jetstream.JetStream
	log *slog.Logger
}

func (at *auditTrail) mount(api mountFunc) {
	api("GET", "/v1/audit", ScopeAdmin, at.list)
}

// hostWindow is how long the hosts are given to answer.
const hostWindow = 300 * time.Millisecond

// dlq lists the dead-lettered jobs: a tenant's key sees its tenant's.
func (dq *dlqAPI) dlq(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	limit, err := limitParam(r, 100)
	if err != nil {
		return nil, err
	}
	ctx, cancel := dq.ctx(r)
	defer cancel()
	// The DLQ is read on an admin's subject: a tenant's key asks for its
	// tenant's entries, and they are checked here again (a scheduler from
	// before tenant_id would send every tenant's).
	tenant := ""
	if !p.Admin() {
		tenant = p.Tenant
	}
	entries, err := dq.client.TenantDLQ(ctx, tenant, limit)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, e := range entries {
		if len(out) == limit {
			break
		}
		if p.Admin() || e.GetTenantId() == p.Tenant {
			out = append(out, apijson.Of(e))
		}
	}
	return map[string]any{"entries": out}, nil
}

// own checks that job id is p's to act on, for what goes through an
// admin's subject (the DLQ): an admin's any job, a tenant's its own, read
// through its tenant's client (another's is not found).
func (dq *dlqAPI) own(ctx context.Context, p Principal, id string) error {
	if p.Admin() {
		return nil
	}
	if _, err := dq.clients.of(p).Get(ctx, id, false); err != nil {
		return notFound(err, "job", id)
	}
	return nil
}

func (dq *dlqAPI) dlqRetry(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	id := r.PathValue("id")
	ctx, cancel := dq.ctx(r)
	defer cancel()
	if err := dq.own(ctx, p, id); err != nil {
		return nil, err
	}
	rep, err := dq.client.RetryDLQ(ctx, id)
	if rep != nil && !rep.GetAccepted() {
		if strings.HasSuffix(rep.GetMessage(), " not found") {
			return nil, errorf(http.StatusNotFound, CodeNotFound, "%s", rep.GetMessage())
		}
		if rep.GetReason() == string(reason.BadRequest) {
			return nil, errorf(http.StatusConflict, CodeConflict, "%s", rep.GetMessage())
		}
		return nil, refusal(rep, err)
	}
	if err != nil {
		return nil, notFound(err, "dead-lettered job", id)
	}
	dq.audit.record(ctx, p, audit.DLQRetry, id, map[string]string{"new_job_id": rep.GetJobId()})
	return withStatus{http.StatusAccepted, apijson.Of(rep)}, nil
}

// dlqDrop removes a job's entry from the DLQ; the job stays.
func (dq *dlqAPI) dlqDrop(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	id := r.PathValue("id")
	ctx, cancel := dq.ctx(r)
	defer cancel()
	if err := dq.own(ctx, p, id); err != nil {
		return nil, err
	}
	ok, err := dq.client.DropDLQ(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "job %s is not in the DLQ", id)
	}
	dq.audit.record(ctx, p, audit.DLQDrop, id, nil)
	return map[string]any{"job_id": id, "dropped": true}, nil
}

func (ma *modulesAPI) registry() (*modreg.Registry, error) {
	if ma.reg == nil {
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "this gateway has no module registry")
	}
	return ma.reg, nil
}

// ModuleView is a module as the API shows it.
type ModuleView struct {
	Name string `json:"name"`
	// Source is where the module comes from: "registry" for a module of
	// the registry (ward module deploy), "host" for one live hosts serve
	// of their own (their --modules directory: the built-in ones), which
	// the registry does not hold.
	Source   string           `json:"source"`
	Active   *modreg.Active   `json:"active,omitempty"`
	Versions []modreg.Version `json:"versions,omitempty"`
	Events   []modreg.Event   `json:"events,omitempty"`
	// Digests are a host module's: each digest live hosts serve it at
	// (none of the registry's versions), with how many serve it.
	Digests []HostDigest `json:"digests,omitempty"`
}

// HostDigest is a digest of a module live hosts serve of their own, and
// how many of them serve it.
type HostDigest = modreg.HostDigest

// The modules' sources.
const (
	SourceRegistry = "registry"
	SourceHost     = "host"
)

func moduleView(m modreg.Module, full bool) ModuleView {
	v := ModuleView{Name: m.Name, Source: SourceRegistry, Active: m.Active}
	if full {
		v.Versions, v.Events = m.Versions, m.Events
		for i := range v.Versions {
			v.Versions[i].Signature = nil // whether it is signed is Active.Signed
		}
	}
	return v
}

// hostModules are the modules live hosts serve of their own (their
// --modules directory: the built-in ones), as ward module ls lists them
// (modreg.HostModules).
func hostModules(ms []modreg.Module, hbs []*wardv1.Heartbeat) []ModuleView {
	served := make([]map[string]string, len(hbs))
	for i, hb := range hbs {
		served[i] = hb.GetModules()
	}
	hms := modreg.HostModules(ms, served)
	out := make([]ModuleView, 0, len(hms))
	for _, hm := range hms {
		out = append(out, ModuleView{Name: hm.Name, Source: SourceHost, Digests: hm.Digests})
	}
	return out
}

// modules lists the registry's modules (source registry), then the
// modules live hosts serve of their own (source host), from one ask of
// the hosts.
func (ma *modulesAPI) modules(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	reg, err := ma.registry()
	if err != nil {
		return nil, err
	}
	ctx, cancel := ma.ctx(r)
	defer cancel()
	ms, err := reg.List(ctx)
	if err != nil {
		return nil, err
	}
	hbs, err := ma.client.Workers(ctx, hostWindow)
	if err != nil {
		return nil, err
	}
	out := make([]ModuleView, 0, len(ms))
	for _, m := range ms {
		out = append(out, moduleView(m, false))
	}
	out = append(out, hostModules(ms, hbs)...)
	return map[string]any{"modules": out}, nil
}

// findModule is the registry's module name, in full; else the module of
// that name live hosts serve of their own (source host); else a 404.
func (ma *modulesAPI) findModule(ctx context.Context, reg *modreg.Registry, name string) (ModuleView, error) {
	ms, err := reg.List(ctx)
	if err != nil {
		return ModuleView{}, err
	}
	for _, m := range ms {
		if m.Name == name {
			return moduleView(m, true), nil
		}
	}
	// The hosts are asked only for a name the registry does not hold.
	hbs, err := ma.client.Workers(ctx, hostWindow)
	if err != nil {
		return ModuleView{}, err
	}
	for _, hm := range hostModules(ms, hbs) {
		if hm.Name == name {
			return hm, nil
		}
	}
	return ModuleView{}, errorf(http.StatusNotFound, CodeNotFound, "module %s is not deployed, and no live host serves it", name)
}

func (ma *modulesAPI) module(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	reg, err := ma.registry()
	if err != nil {
		return nil, err
	}
	ctx, cancel := ma.ctx(r)
	defer cancel()
	return ma.findModule(ctx, reg, r.PathValue("name"))
}

func (ma *modulesAPI) moduleRollback(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	reg, err := ma.registry()
	if err != nil {
		return nil, err
	}
	ctx, cancel := ma.ctx(r)
	defer cancel()
	name := r.PathValue("name")
	m, err := ma.findModule(ctx, reg, name)
	if err != nil {
		return nil, err
	}
	if m.Source == SourceHost {
		n := 0
		for _, d := range m.Digests {
			n += d.Hosts
		}
		return nil, errorf(http.StatusConflict, CodeConflict,
			"module %s is not in the registry: %d live host(s) serve their own %s (from their --modules directory), so it has no version to go back to; "+
				"`ward module deploy %s.wasm` puts a version in the registry, which hosts then serve instead", name, n, name, name)
	}
	a, err := reg.Rollback(modreg.WithActor(ctx, p.Actor()), name)
	if err != nil {
		return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
	}
	ma.audit.record(ctx, p, audit.ModuleRollback, name, map[string]string{"version": a.Version, "digest": a.Digest})
	return a, nil
}

// moduleDeploy stores a module version and makes it the active one: a
// multipart form with the file "module" (the .wasm), optionally
// "manifest" (its YAML), and the fields name, version (over the
// manifest's) and force (deploy although pools.yaml routes its topic
// elsewhere). Everything is checked before anything is stored. The hosts
// load it as they see it (GET /v1/modules/{name}: their reports).
func (ma *modulesAPI) moduleDeploy(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	reg, err := ma.registry()
	if err != nil {
		return nil, err
	}
	if err := r.ParseMultipartForm(ma.maxBody); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the body is not a multipart form with the file module: %v", err)
	}
	defer func() {
		// A large upload is spooled to temporary files.
		if err := r.MultipartForm.RemoveAll(); err != nil {
			ma.log.Warn("module deploy: the upload's temporary files were not removed", "err", err)
		}
	}()
	file := func(name string) ([]byte, error) {
		f, _, err := r.FormFile(name)
		if errors.Is(err, http.ErrMissingFile) {
			return nil, nil
		}
		if err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%s: %v", name, err)
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	wasm, err := file("module")
	if err != nil {
		return nil, err
	}
	if wasm == nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the form has no file module (the .wasm)")
	}
	manifest, err := file("manifest")
	if err != nil {
		return nil, err
	}
	v, err := modreg.NewVersion(wasm, manifest, r.FormValue("name"), r.FormValue("version"))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v; nothing was stored", err)
	}
	ctx, cancel := ma.ctx(r)
	defer cancel()
	pools := ma.pools
	if pools == nil {
		if pools, err = config.LoadPools(""); err != nil {
			return nil, err
		}
	}
	conflicts, err := reg.RouteConflicts(ctx, pools, v)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 && r.FormValue("force") != "true" {
		var why []string
		for _, c := range conflicts {
			why = append(why, fmt.Sprintf("%s → pool %s: %s", c.Topic, c.Pool, c.Why))
		}
		return nil, errorf(http.StatusConflict, CodeConflict, "%s %s declares a route that would not apply (%s); nothing was stored (force=true deploys it anyway)",
			v.Name, v.Version, strings.Join(why, "; "))
	}
	if ma.key != nil {
		v.Signature = modreg.Sign(ma.key, modreg.Digest(wasm))
	}
	a, err := reg.Deploy(modreg.WithActor(ctx, p.Actor()), v, wasm)
	if err != nil {
		return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
	}
	ma.audit.record(ctx, p, audit.ModuleDeploy, a.Name, map[string]string{"version": a.Version, "digest": a.Digest, "signed": fmt.Sprint(a.Signed)})
	return withStatus{http.StatusCreated, a}, nil
}

// PushRequest is PUT /v1/policies's body: a bundle's files by path
// (*.rego, their *_test.rego, data.json or data.yaml).
type PushRequest struct {
	Files map[string]string `json:"files"`
}

// policyPush checks a bundle as every kernel will (it compiles, its tests
// pass), signs it with the gateway's policy key, and pushes it to the
// kernels' bucket: every kernel puts it in force at once.
func (pa *policiesAPI) policyPush(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in PushRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if len(in.Files) == 0 {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the bundle has no files")
	}
	b := &safety.Bundle{Files: map[string][]byte{}}
	for name, data := range in.Files {
		b.Files[name] = []byte(data)
	}
	ctx, cancel := pa.ctx(r)
	defer cancel()
	opts := safety.PushOptions{By: p.Actor(), SigningKey: pa.key, Unsigned: pa.key == nil}
	res, err := safety.Push(ctx, pa.client.Bus().NATS(), pa.bucket, b, opts)
	var tf *safety.TestsFailedError
	switch {
	case errors.As(err, &tf):
		return nil, errorf(http.StatusUnprocessableEntity, reason.BadRequest, "%v; nothing was pushed", err)
	case errors.Is(err, safety.ErrInvalidBundle):
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v; nothing was pushed", err)
	case err != nil:
		return nil, err
	}
	if !res.Unchanged {
		pa.audit.record(ctx, p, audit.PolicyPush, res.Bucket, map[string]string{"revision": res.Revision, "signed": fmt.Sprint(res.KeyID != "")})
	}
	return map[string]any{"bucket": res.Bucket, "revision": res.Revision, "tests": res.Tests,
		"unchanged": res.Unchanged, "signed": res.KeyID != "", "key_id": res.KeyID}, nil
}

// record records what p did, best effort: a failure is logged.
func (at *auditTrail) record(ctx context.Context, p Principal, action, target string, detail map[string]string) {
	if at.js == nil {
		return
	}
	e := audit.Entry{Actor: p.Actor(), Action: action, Target: target, Detail: detail}
	if err := audit.Record(ctx, at.js, e); err != nil {
		at.log.Warn("audit record failed", "action", action, "target", target, "err", err)
	}
}

func (at *auditTrail) list(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	if at.js == nil {
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "this gateway has no audit log")
	}
	q := r.URL.Query()
	f := audit.Filter{Action: q.Get("action"), Actor: q.Get("actor")}
	if f.Action != "" {
		if err := audit.CheckAction(f.Action); err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
		}
	}
	var err error
	if f.Limit, err = limitParam(r, audit.DefaultLimit); err != nil { // audit.MaxLimit is 1000 too
		return nil, err
	}
	if t := q.Get("since"); t != "" {
		ms, err := parseTime(t)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "since: %v", err)
		}
		f.Since = time.UnixMilli(ms)
	}
	ctx, cancel := at.ctx(r)
	defer cancel()
	es, err := audit.List(ctx, at.js, f)
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []audit.Entry{}
	}
	return map[string]any{"entries": es}, nil
}

// policyCache keeps the compiled policy of the revision last evaluated.
type policyCache struct {
	mu  sync.Mutex
	rev string
	p   *safety.Policy
	b   *safety.Bundle
}

var embeddedOnce = sync.OnceValues(func() (*safety.Bundle, error) { return safety.ReadBundle(policies.FS) })

// currentPolicy is the bundle in force: the one pushed last, else the
// embedded default.
func (pa *policiesAPI) currentPolicy(ctx context.Context) (*safety.Bundle, string, error) {
	b, _, err := safety.Current(ctx, pa.client.Bus().NATS(), pa.bucket)
	if errors.Is(err, safety.ErrNoBundle) {
		b, err = embeddedOnce()
		return b, "embedded", err
	}
	return b, "bucket", err
}

func (pa *policiesAPI) compiled(ctx context.Context) (*safety.Policy, *safety.Bundle, string, error) {
	b, source, err := pa.currentPolicy(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	pa.cache.mu.Lock()
	defer pa.cache.mu.Unlock()
	if pa.cache.p != nil && pa.cache.rev == b.Revision() {
		return pa.cache.p, b, source, nil
	}
	p, err := safety.Compile(b)
	if err != nil {
		return nil, nil, "", err
	}
	pa.cache.rev, pa.cache.p, pa.cache.b = b.Revision(), p, b
	return p, b, source, nil
}

// PolicyStatus is GET /v1/policies's answer.
type PolicyStatus struct {
	Revision string            `json:"revision"`
	Source   string            `json:"source"`
	Files    map[string]string `json:"files,omitempty"`
	Kernels  []map[string]any  `json:"kernels"`
}

func (pa *policiesAPI) policyStatus(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := pa.ctx(r)
	defer cancel()
	b, source, err := pa.currentPolicy(ctx)
	if err != nil {
		return nil, err
	}
	sts, err := safety.Statuses(ctx, pa.client.Bus().NATS(), hostWindow)
	if err != nil {
		return nil, err
	}
	out := PolicyStatus{Revision: b.Revision(), Source: source, Kernels: []map[string]any{}}
	if r.URL.Query().Get("files") == "true" {
		out.Files = map[string]string{}
		for name, data := range b.Files {
			out.Files[name] = string(data)
		}
	}
	for _, st := range sts {
		out.Kernels = append(out.Kernels, apijson.Of(st))
	}
	return out, nil
}

// policyEval explains the decision of the policy in force on a
// CheckRequest (its protojson), as `ward policy eval` does.
func (pa *policiesAPI) policyEval(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	raw, err := readAll(r)
	if err != nil {
		return nil, err
	}
	req := &safetyv1.CheckRequest{}
	if err := protojson.Unmarshal(raw, req); err != nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the body is not a CheckRequest: %v", err)
	}
	if !p.Admin() {
		req.TenantId = p.Tenant // a tenant asks about its own jobs
	}
	ctx, cancel := pa.ctx(r)
	defer cancel()
	pol, _, source, err := pa.compiled(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := pol.Explain(ctx, req)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, reason.BadRequest, "%v", err)
	}
	v := apijson.Of(resp)
	v["source"] = source
	return v, nil
}

// TestReply is POST /v1/policies/test's answer.
type TestReply struct {
	Revision string           `json:"revision"`
	Passed   bool             `json:"passed"`
	Results  []map[string]any `json:"results"`
}

func (pa *policiesAPI) policyTest(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := pa.ctx(r)
	defer cancel()
	b, _, err := pa.currentPolicy(ctx)
	if err != nil {
		return nil, err
	}
	res, err := safety.Test(ctx, b)
	if err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, reason.BadRequest, "%v", err)
	}
	out := TestReply{Revision: b.Revision(), Passed: true, Results: []map[string]any{}}
	for _, t := range res {
		if t.Failed() {
			out.Passed = false
		}
		m := map[string]any{"name": t.Name, "location": t.Location, "outcome": t.Outcome, "duration_ms": t.Duration.Milliseconds()}
		if t.Err != "" {
			m["error"] = t.Err
		}
		if t.Output != "" {
			m["output"] = t.Output
		}
		out.Results = append(out.Results, m)
	}
	return out, nil
}

// ImpactRequest is POST /v1/policies/impact's body: a candidate bundle's
// files by path. With Base (the default) the candidate is the bundle in
// force with Files added or replaced, an empty file removing one; without
// it Files are the whole candidate.
type ImpactRequest struct {
	Files map[string]string `json:"files"`
	Base  *bool             `json:"base,omitempty"`
	// KVRevision, instead of Files, names a kept revision of the policy
	// history (GET /v1/policies/history's kv_revision): the candidate is
	// the bundle a rollback to it would put back in force.
	KVRevision uint64 `json:"kv_revision,omitempty"`
}

// ImpactReply is POST /v1/policies/impact's answer: what `ward policy
// impact -o json` prints (kernels, evaluated, flips, in the API's view of
// their messages: enums by their short names, ALLOW, DENY), with the
// candidate's revision and that of the bundle it was built on.
type ImpactReply struct {
	Revision     string           `json:"revision"`
	BaseRevision string           `json:"base_revision,omitempty"`
	Kernels      []map[string]any `json:"kernels"`
	Evaluated    int64            `json:"evaluated"`
	Flips        []map[string]any `json:"flips"`
	// DeniesActive are the jobs of the flips to DENY that run or wait
	// now (not ended): the candidate would deny work of a kind in flight
	// (`ward policy push` and `rollback` ask before they go on).
	DeniesActive []ActiveJob `json:"denies_active"`
	// For a kv_revision: the revision kept there, whether it is in force
	// already (a rollback to it changes nothing), and whether it is
	// signed.
	KVRevision uint64 `json:"kv_revision,omitempty"`
	InForce    bool   `json:"in_force,omitempty"`
	Signed     bool   `json:"signed,omitempty"`
	KeyID      string `json:"key_id,omitempty"`
}

// ActiveJob is a job that runs or waits, and its state.
type ActiveJob struct {
	JobID string `json:"job_id"`
	State string `json:"state"`
}

// impactStatusWait is how long policyImpact waits for the kernels to say
// they run, as `ward policy impact` does.
const impactStatusWait = time.Second

// policyImpact asks every kernel which of its recent decisions a
// candidate bundle would change (`ward policy impact`): nothing is put in
// force, so nothing is audited. 400 for a candidate that does not
// compile, 503 when no kernel answers or every kernel refused.
func (pa *policiesAPI) policyImpact(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in ImpactRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	ctx, cancel := pa.ctx(r)
	defer cancel()
	out := ImpactReply{Kernels: []map[string]any{}, Flips: []map[string]any{}, DeniesActive: []ActiveJob{}}
	var b *safety.Bundle
	if in.KVRevision != 0 {
		// A rollback's candidate: the kept revision's bundle, as it was
		// pushed.
		if len(in.Files) > 0 || in.Base != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "kv_revision names the whole candidate: no files or base with it")
		}
		hb, pr, err := safety.HistoryBundle(ctx, pa.client.Bus().NATS(), pa.bucket, in.KVRevision)
		switch {
		case errors.Is(err, safety.ErrNotInHistory):
			return nil, errorf(http.StatusNotFound, CodeNotFound, "%v", err)
		case errors.Is(err, safety.ErrRevisionDeleted):
			return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
		case err != nil:
			return nil, err
		}
		cur, _, err := pa.currentPolicy(ctx)
		if err != nil {
			return nil, err
		}
		b, out.BaseRevision = hb, cur.Revision()
		out.KVRevision, out.InForce, out.Signed, out.KeyID = in.KVRevision, pr.InForce, pr.Signed, pr.KeyID
	} else {
		files := map[string][]byte{}
		if in.Base == nil || *in.Base {
			cur, _, err := pa.currentPolicy(ctx)
			if err != nil {
				return nil, err
			}
			maps.Copy(files, cur.Files)
			out.BaseRevision = cur.Revision()
		}
		for name, data := range in.Files {
			if data == "" {
				delete(files, name)
				continue
			}
			files[name] = []byte(data)
		}
		if len(files) == 0 {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the candidate bundle has no files")
		}
		// The names as a kernel checks them, then the policy as it compiles it.
		var err error
		if b, err = safety.BundleFromProto(&safetyv1.PolicyBundle{Files: files}); err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
		}
	}
	if _, err := safety.Compile(b); err != nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
	}
	out.Revision = b.Revision()
	sum, err := safety.Impacts(ctx, pa.client.Bus().NATS(), b, impactStatusWait)
	switch {
	case err != nil && strings.Contains(err.Error(), "no kernel answered"):
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "%v", err)
	case err != nil && strings.Contains(err.Error(), "more than a message holds"):
		return nil, errorf(http.StatusRequestEntityTooLarge, reason.InputTooLarge, "%v", err)
	case err != nil:
		return nil, err
	}
	var refused []string
	for _, k := range sum.Kernels {
		if k.GetError() != "" {
			refused = append(refused, k.GetKernelId()+": "+k.GetError())
		}
		out.Kernels = append(out.Kernels, apijson.Of(k))
	}
	if len(refused) > 0 && len(refused) == len(sum.Kernels) {
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "every kernel refused the comparison: %s", strings.Join(refused, "; "))
	}
	out.Evaluated = sum.Evaluated
	for _, f := range sum.Flips {
		out.Flips = append(out.Flips, apijson.Of(f))
	}
	for _, rec := range pa.client.DeniedInFlight(ctx, sum.Flips) {
		out.DeniesActive = append(out.DeniesActive, ActiveJob{JobID: rec.GetJobId(), State: strings.TrimPrefix(rec.GetState().String(), "JOB_STATE_")})
	}
	return out, nil
}

// HistoryReply is GET /v1/policies/history's answer: what `ward policy
// history -o json` prints, newest first.
type HistoryReply struct {
	Bucket    string                  `json:"bucket"`
	Revisions []safety.PolicyRevision `json:"revisions"`
}

// policyHistory lists the pushes the policy bucket keeps (`ward policy
// history`).
func (pa *policiesAPI) policyHistory(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := pa.ctx(r)
	defer cancel()
	h, err := safety.History(ctx, pa.client.Bus().NATS(), pa.bucket)
	if err != nil {
		return nil, err
	}
	if h == nil {
		h = []safety.PolicyRevision{}
	}
	return HistoryReply{Bucket: pa.policyBucket(), Revisions: h}, nil
}

func (pa *policiesAPI) policyBucket() string {
	if b := pa.bucket; b != "" {
		return b
	}
	return safety.DefaultBucket
}

// RollbackRequest is POST /v1/policies/rollback's body: the bucket
// revision to go back to (GET /v1/policies/history's kv_revision).
type RollbackRequest struct {
	KVRevision uint64 `json:"kv_revision"`
}

// RollbackReply is POST /v1/policies/rollback's answer.
type RollbackReply struct {
	Bucket string `json:"bucket"`
	// RolledBackTo is the bucket revision rolled back to, Revision its
	// bundle's revision, KVRevision the bucket revision written (0 when
	// Unchanged).
	RolledBackTo uint64 `json:"rolled_back_to"`
	Revision     string `json:"revision"`
	KVRevision   uint64 `json:"kv_revision"`
	Unchanged    bool   `json:"unchanged"`
	Signed       bool   `json:"signed"`
	KeyID        string `json:"key_id,omitempty"`
}

// policyRollback puts an earlier pushed bundle back in force (`ward policy
// rollback`): its stored bytes, signature included, become the bucket's
// newest value. 404 for a revision the bucket does not keep, 409 for a
// deletion or a push that came in between.
func (pa *policiesAPI) policyRollback(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in RollbackRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	ctx, cancel := pa.ctx(r)
	defer cancel()
	return pa.rollbackPolicy(ctx, p, in.KVRevision)
}

// rollbackPolicy rolls the policy back to bucket revision rev for p, and
// audits it (policy.push, with rollback_of) unless nothing changed.
func (pa *policiesAPI) rollbackPolicy(ctx context.Context, p Principal, rev uint64) (RollbackReply, error) {
	if rev == 0 {
		return RollbackReply{}, errorf(http.StatusBadRequest, reason.BadRequest, "kv_revision is required: a bucket revision GET /v1/policies/history lists")
	}
	res, err := safety.Rollback(ctx, pa.client.Bus().NATS(), pa.bucket, rev, safety.RollbackOptions{By: p.Actor()})
	switch {
	case errors.Is(err, safety.ErrNotInHistory):
		return RollbackReply{}, errorf(http.StatusNotFound, CodeNotFound, "%v", err)
	case errors.Is(err, safety.ErrRevisionDeleted), errors.Is(err, safety.ErrBucketChanged):
		return RollbackReply{}, errorf(http.StatusConflict, CodeConflict, "%v", err)
	case err != nil:
		return RollbackReply{}, err
	}
	if !res.Unchanged {
		pa.audit.record(ctx, p, audit.PolicyPush, res.Bucket, map[string]string{"revision": res.Revision, "signed": fmt.Sprint(res.Signed),
			"rollback_of": fmt.Sprint(rev), "kv_revision": fmt.Sprint(res.KVRevision)})
	}
	return RollbackReply{Bucket: res.Bucket, RolledBackTo: rev, Revision: res.Revision, KVRevision: res.KVRevision,
		Unchanged: res.Unchanged, Signed: res.Signed, KeyID: res.KeyID}, nil
}
