package safety

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// The policy input is the CheckRequest with proto field names. Each
// top-level field has a bit, so that a policy's use of the input (which
// fields its rules read) is a fieldSet, computed once per bundle: the
// input document holds only those fields, and the decision cache keys on
// only those fields.

// field is one top-level field of the policy input.
type field uint8

const (
	fJobID field = iota
	fTopic
	fTenantID
	fLabels
	fRequires
	fPriority
	fPayloadSize
	fModule
	fPool
	fPayloadDigest
	fWorkflow
	numFields
)

// fieldNames are the input's keys, by field.
var fieldNames = [numFields]string{
	fJobID:         "job_id",
	fTopic:         "topic",
	fTenantID:      "tenant_id",
	fLabels:        "labels",
	fRequires:      "requires",
	fPriority:      "priority",
	fPayloadSize:   "payload_size",
	fModule:        "module",
	fPool:          "pool",
	fPayloadDigest: "payload_digest",
	fWorkflow:      "workflow",
}

// fieldSet is a set of fields, one bit each.
type fieldSet uint16

// allFields is every field: what a policy that reads input as a whole
// (print(input), some k in input, f(input)) gets.
const allFields fieldSet = 1<<numFields - 1

func (s fieldSet) has(f field) bool { return s&(1<<f) != 0 }

// names lists the set's input keys, in field order.
func (s fieldSet) names() []string {
	var out []string
	for f := range numFields {
		if s.has(f) {
			out = append(out, fieldNames[f])
		}
	}
	return out
}

// inputFields returns the fields that refs to input in the compiled
// modules can read. A ref to input itself, or to input[x] with x not a
// constant string, can read anything.
func inputFields(mods map[string]*ast.Module) fieldSet {
	var set fieldSet
	for _, m := range mods {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if !r.HasPrefix(ast.InputRootRef) {
				return false
			}
			if len(r) < 2 {
				set = allFields
				return false
			}
			s, ok := r[1].Value.(ast.String)
			if !ok {
				set = allFields
				return false
			}
			for f, name := range fieldNames {
				if string(s) == name {
					set |= 1 << f
				}
			}
			return false
		})
	}
	return set
}

// Interned key terms: building them per Check would cost a lookup each.
var (
	fieldKeys = func() (ks [numFields]*ast.Term) {
		for f, name := range fieldNames {
			ks[f] = ast.StringTerm(name)
		}
		return ks
	}()
	keyName             = ast.StringTerm("name")
	keyDigest           = ast.StringTerm("digest")
	keyRequested        = ast.StringTerm("requested")
	keySigned           = ast.StringTerm("signed")
	keyHTTPHosts        = ast.StringTerm("http_hosts")
	keyReadOnlyDirs     = ast.StringTerm("read_only_dirs")
	keyEnvKeys          = ast.StringTerm("env_keys")
	keyServices         = ast.StringTerm("services")
	keyMemoryLimitBytes = ast.StringTerm("memory_limit_bytes")
	keyTimeLimitMS      = ast.StringTerm("time_limit_ms")
	keySteps            = ast.StringTerm("steps")
	keyID               = ast.StringTerm("id")
	keyTopic            = ast.StringTerm("topic")
	keyDependsOn        = ast.StringTerm("depends_on")
	keyForEach          = ast.StringTerm("for_each")
)

// inputValue builds the policy's input document from req directly as a
// Rego value, with the fields in set: going through protojson and back
// would cost several times the evaluation itself. Every field in set is
// present, zero values included, under its proto name, so that policies
// need no defaults; fields the policy never reads are left out, which it
// cannot tell. enc and terms, when not nil, are req encoded and the
// policy's module objects: the module object, the costliest part and the
// same for every job of a pool, comes from terms.
func inputValue(req *safetyv1.CheckRequest, set fieldSet, enc *encoded, terms *termCache) ast.Value {
	items := make([][2]*ast.Term, 0, numFields)
	for f := range numFields {
		if !set.has(f) {
			continue
		}
		var v *ast.Term
		switch f {
		case fJobID:
			v = ast.StringTerm(req.GetJobId())
		case fTopic:
			v = ast.StringTerm(req.GetTopic())
		case fTenantID:
			v = ast.StringTerm(req.GetTenantId())
		case fLabels:
			labels := req.GetLabels()
			if len(labels) == 0 {
				v = emptyObject
				break
			}
			kvs := make([][2]*ast.Term, 0, len(labels))
			for k, lv := range labels {
				kvs = append(kvs, ast.Item(ast.StringTerm(k), ast.StringTerm(lv)))
			}
			v = ast.NewTerm(ast.NewObject(kvs...))
		case fRequires:
			v = stringsTerm(req.GetRequires())
		case fPriority:
			v = ast.InternedTerm(int(req.GetPriority()))
		case fPayloadSize:
			v = numberTerm(req.GetPayloadSize())
		case fModule:
			if enc == nil || terms == nil {
				v = moduleTerm(req.GetModule())
				break
			}
			v = terms.get(enc.field(fModule), req.GetModule())
		case fPool:
			v = ast.StringTerm(req.GetPool())
		case fPayloadDigest:
			v = ast.StringTerm(req.GetPayloadDigest())
		case fWorkflow:
			v = workflowTerm(req.GetWorkflow())
		}
		items = append(items, ast.Item(fieldKeys[f], v))
	}
	return ast.NewObject(items...)
}

// workflowTerm is input.workflow: null for a job's check, the run's name
// and steps for a workflow run's.
func workflowTerm(w *safetyv1.WorkflowRequest) *ast.Term {
	if w == nil {
		return ast.InternedNullTerm
	}
	steps := make([]*ast.Term, len(w.GetSteps()))
	for i, st := range w.GetSteps() {
		steps[i] = ast.ObjectTerm(
			ast.Item(keyID, ast.StringTerm(st.GetId())),
			ast.Item(keyTopic, ast.StringTerm(st.GetTopic())),
			ast.Item(keyDependsOn, stringsTerm(st.GetDependsOn())),
			ast.Item(keyForEach, ast.InternedTerm(st.GetForEach())),
		)
	}
	return ast.ObjectTerm(ast.Item(keyName, ast.StringTerm(w.GetName())), ast.Item(keySteps, ast.ArrayTerm(steps...)))
}

// Shared immutable terms. Evaluation never modifies input, and OPA shares
// its data documents between concurrent queries in the same way.
var (
	emptyArray  = ast.ArrayTerm()
	emptyObject = ast.ObjectTerm()
)

func numberTerm(n int64) *ast.Term {
	if n >= 0 && n < 512 {
		return ast.InternedTerm(int(n))
	}
	return ast.NewTerm(ast.Number(itoa(n)))
}

// moduleTerm is input.module. Its requested is null when the request
// carries none: the caller does not know the module's manifest, which
// policies may treat otherwise than a manifest that asks for nothing.
func moduleTerm(mod *safetyv1.ModuleRequest) *ast.Term {
	g := mod.GetRequested()
	if g == nil {
		return ast.ObjectTerm(
			ast.Item(keyName, ast.StringTerm(mod.GetName())),
			ast.Item(keyDigest, ast.StringTerm(mod.GetDigest())),
			ast.Item(keySigned, ast.InternedTerm(mod.GetSigned())),
			ast.Item(keyRequested, ast.InternedNullTerm),
		)
	}
	return ast.ObjectTerm(
		ast.Item(keyName, ast.StringTerm(mod.GetName())),
		ast.Item(keyDigest, ast.StringTerm(mod.GetDigest())),
		ast.Item(keySigned, ast.InternedTerm(mod.GetSigned())),
		ast.Item(keyRequested, ast.ObjectTerm(
			ast.Item(keyHTTPHosts, stringsTerm(g.GetHttpHosts())),
			ast.Item(keyReadOnlyDirs, stringsTerm(g.GetReadOnlyDirs())),
			ast.Item(keyEnvKeys, stringsTerm(g.GetEnvKeys())),
			ast.Item(keyServices, stringsTerm(g.GetServices())),
			ast.Item(keyMemoryLimitBytes, numberTerm(g.GetMemoryLimitBytes())),
			ast.Item(keyTimeLimitMS, numberTerm(g.GetTimeLimitMs())),
		)),
	)
}

// moduleTermsKept bounds a policy's cache of module objects.
const moduleTermsKept = 4096

// termCache maps encodings to immutable terms: each Policy caches its
// module objects by their encoding, since a system runs a handful of
// modules, each asking for the same grants every time. A full cache starts
// afresh: cheaper than tracking use, and refilled at once.
type termCache struct {
	max int

	mu sync.RWMutex // guards m
	m  map[string]*ast.Term
}

func (c *termCache) get(key []byte, mod *safetyv1.ModuleRequest) *ast.Term {
	c.mu.RLock()
	t := c.m[string(key)]
	c.mu.RUnlock()
	if t != nil {
		return t
	}
	t = moduleTerm(mod)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]*ast.Term)
	}
	c.m[string(key)] = t
	c.mu.Unlock()
	return t
}

func stringsTerm(ss []string) *ast.Term {
	if len(ss) == 0 {
		return emptyArray
	}
	ts := make([]*ast.Term, len(ss))
	for i, s := range ss {
		ts[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(ts...)
}

// itoa formats n in decimal.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// encoded is a request's canonical binary encoding: each field in field
// order, as a tag byte and length-prefixed values, labels sorted by key.
// Equal requests encode equally; so do requests that differ only in
// fields a set leaves out, once cut down to that set.
type encoded struct {
	buf  []byte
	ends [numFields]int // where each field's encoding ends in buf
	key  []byte         // scratch for key
}

var encodedPool = sync.Pool{New: func() any { return &encoded{buf: make([]byte, 0, 512), key: make([]byte, 0, 256)} }}

func (e *encoded) str(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoded) strs(ss []string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoded) int(n int64) { e.buf = binary.AppendVarint(e.buf, n) }

// encode encodes req into e, reusing its buffer.
func (e *encoded) encode(req *safetyv1.CheckRequest) {
	e.buf = e.buf[:0]
	for f := range numFields {
		e.buf = append(e.buf, byte(f))
		switch f {
		case fJobID:
			e.str(req.GetJobId())
		case fTopic:
			e.str(req.GetTopic())
		case fTenantID:
			e.str(req.GetTenantId())
		case fLabels:
			labels := req.GetLabels()
			e.buf = binary.AppendUvarint(e.buf, uint64(len(labels)))
			switch len(labels) {
			case 0:
			case 1:
				for k, v := range labels {
					e.str(k)
					e.str(v)
				}
			default:
				keys := make([]string, 0, len(labels))
				for k := range labels {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					e.str(k)
					e.str(labels[k])
				}
			}
		case fRequires:
			e.strs(req.GetRequires())
		case fPriority:
			e.int(int64(req.GetPriority()))
		case fPayloadSize:
			e.int(req.GetPayloadSize())
		case fModule:
			mod := req.GetModule()
			g := mod.GetRequested()
			e.str(mod.GetName())
			e.str(mod.GetDigest())
			if mod.GetSigned() {
				e.buf = append(e.buf, 1)
			} else {
				e.buf = append(e.buf, 0)
			}
			if g == nil {
				e.buf = append(e.buf, 0)
				break
			}
			e.buf = append(e.buf, 1)
			e.strs(g.GetHttpHosts())
			e.strs(g.GetReadOnlyDirs())
			e.strs(g.GetEnvKeys())
			e.strs(g.GetServices())
			e.int(g.GetMemoryLimitBytes())
			e.int(g.GetTimeLimitMs())
		case fPool:
			e.str(req.GetPool())
		case fPayloadDigest:
			e.str(req.GetPayloadDigest())
		case fWorkflow:
			w := req.GetWorkflow()
			if w == nil {
				e.buf = append(e.buf, 0)
				break
			}
			e.buf = append(e.buf, 1)
			e.str(w.GetName())
			e.buf = binary.AppendUvarint(e.buf, uint64(len(w.GetSteps())))
			for _, st := range w.GetSteps() {
				e.str(st.GetId())
				e.str(st.GetTopic())
				e.strs(st.GetDependsOn())
				if st.GetForEach() {
					e.buf = append(e.buf, 1)
				} else {
					e.buf = append(e.buf, 0)
				}
			}
		}
		e.ends[f] = len(e.buf)
	}
}

// field returns the encoding of one field. It aliases e.
func (e *encoded) field(f field) []byte {
	start := 0
	if f > 0 {
		start = e.ends[f-1]
	}
	return e.buf[start:e.ends[f]]
}

// keyFor returns the encoding cut down to the fields in set. It aliases e.
func (e *encoded) keyFor(set fieldSet) []byte {
	if set == allFields {
		return e.buf
	}
	e.key = e.key[:0]
	start := 0
	for f := range numFields {
		if set.has(f) {
			e.key = append(e.key, e.buf[start:e.ends[f]]...)
		}
		start = e.ends[f]
	}
	return e.key
}

// digest is "sha256:" and the hex SHA-256 of the whole encoding.
func (e *encoded) digest() string {
	sum := sha256.Sum256(e.buf)
	var out [7 + 64]byte
	copy(out[:], "sha256:")
	hex.Encode(out[7:], sum[:])
	return string(out[:])
}
