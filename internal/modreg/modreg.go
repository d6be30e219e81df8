// Package modreg is Ward's module registry, kept in NATS JetStream: an
// Object Store bucket holds module blobs, content-addressed by sha256, and
// a KV bucket holds each module's versions and which one is active. Hosts
// watch the active keys and swap modules without a restart; the scheduler
// reads the routes that manifests declare. Ward keeps no registry state of
// its own: JetStream is the consensus.
//
// A Rollout (rollout.go) takes a version to every live host, the steps of
// `ward module deploy`: Stage, WaitStaged (every live host compiled it
// ahead), Activate, WaitRolledOut (every live host serves it).
//
// KV keys (bucket ward_modules):
//
//	mod.<name>.v.<version>   Version (JSON): digest, manifest, signature, route
//	mod.<name>.active        Active (JSON): the version in force, history, retired
//	mod.<name>.event.<host>  Event (JSON): the last load a host refused
//	mod.<name>.staged.<host> the digest a host has compiled ahead (Stage)
//
// Objects (bucket ward_modules): sha256-<hex>.
package modreg

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jsread"
)

// Bucket is the name of both the KV bucket and the Object Store bucket.
const Bucket = "ward_modules"

// historyCap bounds how many earlier versions a rollback can reach.
const historyCap = 32

// Errors.
var (
	ErrNotFound      = errors.New("modreg: not found")
	ErrVersionExists = errors.New("modreg: version exists with other content")
	ErrNoPrevious    = errors.New("modreg: no previous version to roll back to")
	ErrDigest        = errors.New("modreg: blob does not match its digest")
	ErrBadName       = errors.New("modreg: bad name")
	// ErrNotDeployed: the module has no active record, nor the version
	// asked for; errors.Is(err, ErrNotFound) holds too.
	ErrNotDeployed = errors.New("modreg: module is not deployed")
	// ErrActiveVersion: the version is the active one, which is not
	// deleted (deploy or activate another first, or retire the module).
	ErrActiveVersion = errors.New("modreg: the version is active")
)

// notDeployed is ErrNotDeployed for one module.
type notDeployed struct{ name string }

func (e notDeployed) Error() string { return "module " + e.name + " is not deployed" }

func (e notDeployed) Is(target error) bool { return target == ErrNotDeployed || target == ErrNotFound }

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	hostRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Route is what a manifest may declare: the topic the module serves and
// the pool that serves it.
type Route struct {
	Topic    string   `json:"topic,omitempty"`
	Pool     string   `json:"pool,omitempty"`
	Requires []string `json:"requires,omitempty"`
}

// Requested is what a version's manifest asks for, as `ward module
// deploy` read it: the scheduler passes it to the safety policy, which
// grants a subset.
type Requested struct {
	HTTPHosts        []string `json:"http_hosts,omitempty"`
	ReadOnlyDirs     []string `json:"read_only_dirs,omitempty"`
	EnvKeys          []string `json:"env_keys,omitempty"`
	Services         []string `json:"services,omitempty"`
	MemoryLimitBytes int64    `json:"memory_limit_bytes,omitempty"`
	TimeLimitMS      int64    `json:"time_limit_ms,omitempty"`
}

// Version is one deployed version of a module. Versions are immutable:
// redeploying a version with other bytes is refused.
type Version struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Digest    string `json:"digest"` // sha256:<hex>
	Size      int    `json:"size"`
	Manifest  string `json:"manifest,omitempty"` // the manifest as uploaded (YAML)
	Signature []byte `json:"signature,omitempty"`
	Route     Route  `json:"route"`
	// Requested, when set, is what the manifest asks for; nil when the
	// deployer did not say (the policy then grants its whole allowance).
	Requested  *Requested `json:"requested,omitempty"`
	DeployedAt time.Time  `json:"deployed_at"`
}

// Active is the version of a module in force, or its retirement.
type Active struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Route   Route  `json:"route"`
	// History holds earlier active versions, oldest first, for rollback.
	History []string `json:"history,omitempty"`
	// Signed says the version carries a signature. Hosts with trusted
	// keys verify it; the policy may require it (input.module.signed).
	Signed    bool       `json:"signed,omitempty"`
	Requested *Requested `json:"requested,omitempty"`
	Retired   bool       `json:"retired,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
	// By is who made the change, as its writer claims (WithActor): the
	// schedulers audit the change with it, marked claimed, since nothing
	// authenticates what a record says of its writer (only admins may
	// write the registry at all).
	By string `json:"by,omitempty"`
}

type actorKey struct{}

// WithActor returns ctx with the actor the activations made with it
// record as their writer (Active.By): "admin:alice", "key:<id>".
func WithActor(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, actorKey{}, by)
}

func actorOf(ctx context.Context) string {
	by, _ := ctx.Value(actorKey{}).(string)
	return by
}

// Event is a host's report that it refused a version.
type Event struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	Digest  string    `json:"digest"`
	Host    string    `json:"host"`
	Error   string    `json:"error"`
	At      time.Time `json:"at"`
}

// Module is everything the registry holds about one module.
type Module struct {
	Name     string
	Active   *Active // nil before the first deploy
	Versions []Version
	Events   []Event
}

// Registry is a handle on the buckets.
type Registry struct {
	nc  *nats.Conn
	kv  jetstream.KeyValue
	obs jetstream.ObjectStore
	// readBlob reads a blob of the Object Store by name: with direct gets
	// of its stream, since a host may create no consumer
	// (internal/jsread).
	readBlob func(ctx context.Context, name string) ([]byte, error)
}

// Open returns the registry on nc's JetStream, creating the buckets if
// they do not exist. It only looks up buckets that exist: the credentials
// of schedulers and hosts may read the registry, and create it when it is
// missing, but never change it (auth/perms.go).
func Open(ctx context.Context, nc *nats.Conn) (*Registry, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("modreg: %w", err)
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, History: 8,
			Description: "Ward module versions and the active version of each", Replicas: config.JetStreamReplicas()})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("modreg: kv bucket: %w (is JetStream enabled on the NATS server?)", err)
	}
	obs, err := js.ObjectStore(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: Bucket,
			Description: "Ward module blobs by sha256", Replicas: config.JetStreamReplicas()})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("modreg: object store: %w", err)
	}
	blobs, err := js.Stream(ctx, jsread.ObjectStream(Bucket))
	if err != nil {
		return nil, fmt.Errorf("modreg: object store: %w", err)
	}
	readBlob := func(ctx context.Context, name string) ([]byte, error) {
		b, _, err := jsread.Object(ctx, blobs, Bucket, name, MaxBlobBytes)
		return b, err
	}
	return &Registry{nc: nc, kv: kv, obs: obs, readBlob: readBlob}, nil
}

// Digest returns the content address of wasm: "sha256:<hex>".
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func objectName(digest string) string { return strings.Replace(digest, ":", "-", 1) }

func versionKey(name, version string) string { return "mod." + name + ".v." + version }
func activeKey(name string) string           { return "mod." + name + ".active" }
func eventKey(name, host string) string      { return "mod." + name + ".event." + host }
func stagedKey(name, host string) string     { return "mod." + name + ".staged." + host }

// Deploy stores wasm and its version record, and makes it the active
// version. Deploying the same name, version and bytes again only
// re-activates it.
func (r *Registry) Deploy(ctx context.Context, v Version, wasm []byte) (*Active, error) {
	staged, err := r.Stage(ctx, v, wasm)
	if err != nil {
		return nil, err
	}
	return r.Activate(ctx, staged.Name, staged.Version)
}

// Stage stores wasm and its version record without making it active.
// Hosts compile a staged version ahead and report it (State.Staged), so
// that Activate swaps it in at once while the active version serves.
// Staging the same name, version and bytes again returns the record.
func (r *Registry) Stage(ctx context.Context, v Version, wasm []byte) (*Version, error) {
	if err := CheckName(v.Name, v.Version); err != nil {
		return nil, err
	}
	v.Digest, v.Size = Digest(wasm), len(wasm)
	if v.DeployedAt.IsZero() {
		v.DeployedAt = time.Now().UTC()
	}
	if old, err := r.Version(ctx, v.Name, v.Version); err == nil {
		if old.Digest != v.Digest {
			return nil, fmt.Errorf("%w: %s %s is %s, not %s (deploy a new version)", ErrVersionExists, v.Name, v.Version, old.Digest, v.Digest)
		}
		return old, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	} else {
		if _, err := r.obs.GetInfo(ctx, objectName(v.Digest)); errors.Is(err, jetstream.ErrObjectNotFound) {
			if _, err := r.obs.PutBytes(ctx, objectName(v.Digest), wasm); err != nil {
				return nil, fmt.Errorf("modreg: upload %s: %w", v.Digest, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("modreg: %w", err)
		}
		b, _ := json.Marshal(v)
		if _, err := r.kv.Create(ctx, versionKey(v.Name, v.Version), b); err != nil {
			return nil, fmt.Errorf("modreg: record %s %s: %w", v.Name, v.Version, err)
		}
	}
	return &v, nil
}

// CheckName says whether name and version are what the registry stores:
// a module name of [a-z0-9][a-z0-9_-]* and a version of
// [A-Za-z0-9][A-Za-z0-9_.-]*, at most 63 characters each. Stage refuses
// others; a client checks before it uploads.
func CheckName(name, version string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: module name %q (want [a-z0-9][a-z0-9_-]*, at most 63 characters)", ErrBadName, name)
	}
	if !versionRE.MatchString(version) {
		return fmt.Errorf("%w: version %q (want [A-Za-z0-9][A-Za-z0-9_.-]*, at most 63 characters)", ErrBadName, version)
	}
	return nil
}

// Activate makes a stored version the active one.
func (r *Registry) Activate(ctx context.Context, name, version string) (*Active, error) {
	v, err := r.Version(ctx, name, version)
	if err != nil {
		return nil, err
	}
	return r.activate(ctx, v.Name, func(cur *Active) (*Active, error) {
		next := &Active{Name: v.Name, Version: v.Version, Digest: v.Digest, Route: v.Route, Signed: len(v.Signature) > 0,
			Requested: v.Requested}
		if cur != nil && !cur.Retired && cur.Version != "" && cur.Version != v.Version {
			next.History = append(slices.Clone(cur.History), cur.Version)
		} else if cur != nil {
			next.History = slices.Clone(cur.History)
		}
		if len(next.History) > historyCap {
			next.History = next.History[len(next.History)-historyCap:]
		}
		return next, nil
	})
}

// ActivateVersion makes a kept version of a deployed module the active
// one again (after a rollback, say), as Activate, after checking it:
// with trusted keys, its signature must verify against one of them
// (ErrSignature), as the hosts that hold those keys would check it.
// A module never deployed is ErrNotDeployed, a version it does not have
// ErrNotFound.
func (r *Registry) ActivateVersion(ctx context.Context, name, version string, trusted []ed25519.PublicKey) (*Active, error) {
	v, err := r.version(ctx, name, version)
	if err != nil {
		return nil, err
	}
	if len(trusted) > 0 {
		if err := Verify(trusted, v.Digest, v.Signature); err != nil {
			return nil, fmt.Errorf("%s %s: %w; it is not activated", name, version, err)
		}
	}
	return r.Activate(ctx, name, version)
}

// version is Version, with ErrNotDeployed for a module the registry
// holds nothing of.
func (r *Registry) version(ctx context.Context, name, version string) (*Version, error) {
	v, err := r.Version(ctx, name, version)
	if errors.Is(err, ErrNotFound) {
		if _, aerr := r.kv.Get(ctx, activeKey(name)); errors.Is(aerr, jetstream.ErrKeyNotFound) {
			return nil, notDeployed{name}
		}
		return nil, fmt.Errorf("%w: %s has no version %s", ErrNotFound, name, version)
	}
	return v, err
}

// RemoveVersion deletes a version that is not the active one: its record,
// its place in the history a rollback reaches, and its blob unless
// another version has the same bytes. The active version is
// ErrActiveVersion; a module never deployed ErrNotDeployed.
func (r *Registry) RemoveVersion(ctx context.Context, name, version string) error {
	v, err := r.version(ctx, name, version)
	if err != nil {
		return err
	}
	_, err = r.activate(ctx, name, func(cur *Active) (*Active, error) {
		if cur == nil {
			return nil, errNoActive // staged only: no record to change
		}
		if !cur.Retired && cur.Version == version {
			return nil, fmt.Errorf("%w: %s %s serves the module (deploy or activate another version first, or retire it with ward module rm)",
				ErrActiveVersion, name, version)
		}
		next := *cur
		next.History = slices.DeleteFunc(slices.Clone(cur.History), func(h string) bool { return h == version })
		return &next, nil
	})
	if err != nil && !errors.Is(err, errNoActive) {
		return err
	}
	if err := r.kv.Delete(ctx, versionKey(name, version)); err != nil {
		return fmt.Errorf("modreg: delete %s %s: %w", name, version, err)
	}
	mods, err := r.List(ctx)
	if err != nil {
		return err
	}
	for _, m := range mods {
		for _, o := range m.Versions {
			if o.Digest == v.Digest {
				return nil // the bytes serve another version
			}
		}
	}
	if err := r.obs.Delete(ctx, objectName(v.Digest)); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("modreg: delete blob %s: %w", v.Digest, err)
	}
	return nil
}

// errNoActive: a module with no active record (RemoveVersion).
var errNoActive = errors.New("modreg: no active record")

// Rollback makes the previous active version active again.
func (r *Registry) Rollback(ctx context.Context, name string) (*Active, error) {
	return r.activate(ctx, name, func(cur *Active) (*Active, error) {
		if cur == nil {
			return nil, notDeployed{name}
		}
		if len(cur.History) == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoPrevious, name)
		}
		prev := cur.History[len(cur.History)-1]
		v, err := r.Version(ctx, name, prev)
		if err != nil {
			return nil, err
		}
		return &Active{Name: name, Version: v.Version, Digest: v.Digest, Route: v.Route, Signed: len(v.Signature) > 0,
			Requested: v.Requested, History: slices.Clone(cur.History[:len(cur.History)-1])}, nil
	})
}

// Remove retires a module: hosts stop serving it and its route goes away.
// Its versions stay, so a later deploy or rollback can bring it back.
func (r *Registry) Remove(ctx context.Context, name string) (*Active, error) {
	return r.activate(ctx, name, func(cur *Active) (*Active, error) {
		if cur == nil {
			return nil, notDeployed{name}
		}
		next := &Active{Name: name, Route: cur.Route, Retired: true, History: slices.Clone(cur.History)}
		if cur.Version != "" {
			next.History = append(next.History, cur.Version)
		}
		return next, nil
	})
}

// activate applies change to the active record with compare-and-set, so
// that two deploys racing each other cannot lose one's history.
func (r *Registry) activate(ctx context.Context, name string, change func(*Active) (*Active, error)) (*Active, error) {
	for range 16 {
		var (
			cur *Active
			rev uint64
		)
		e, err := r.kv.Get(ctx, activeKey(name))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("modreg: %w", err)
		default:
			cur, rev = &Active{}, e.Revision()
			if err := json.Unmarshal(e.Value(), cur); err != nil {
				return nil, fmt.Errorf("modreg: %s: %w", activeKey(name), err)
			}
		}
		next, err := change(cur)
		if err != nil {
			return nil, err
		}
		next.UpdatedAt, next.By = time.Now().UTC(), actorOf(ctx)
		b, _ := json.Marshal(next)
		if rev == 0 {
			_, err = r.kv.Create(ctx, activeKey(name), b)
		} else {
			_, err = r.kv.Update(ctx, activeKey(name), b, rev)
		}
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !strings.Contains(err.Error(), "wrong last sequence") {
			return nil, fmt.Errorf("modreg: %w", err)
		}
	}
	return nil, fmt.Errorf("modreg: %s: too many concurrent changes", name)
}

// Version returns one version's record.
func (r *Registry) Version(ctx context.Context, name, version string) (*Version, error) {
	e, err := r.kv.Get(ctx, versionKey(name, version))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: %s %s", ErrNotFound, name, version)
	}
	if err != nil {
		return nil, fmt.Errorf("modreg: %w", err)
	}
	v := &Version{}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, fmt.Errorf("modreg: %s: %w", e.Key(), err)
	}
	return v, nil
}

// MaxBlobBytes is the largest module blob Blob reads: a module is a few
// MiB, and a host reads what the registry names before it checks it.
const MaxBlobBytes = 256 << 20

// blobTries is how many times Blob reads a blob that arrives corrupt or
// is not found (about 7 s in all).
const blobTries = 8

// Blob fetches a module's bytes by digest and checks them against it. A
// read that arrives corrupt (the object store's own digest, or ours, does
// not match) or finds no blob is read again, up to blobTries times, a
// moment apart: in a NATS cluster a read may be answered by a replica
// still catching up after a restart (the lattice test saw both), and a
// host asks only for the blobs of versions the registry lists. Only a blob
// corrupt or missing every time is refused.
func (r *Registry) Blob(ctx context.Context, digest string) ([]byte, error) {
	var err error
	for try := range blobTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("modreg: blob %s: %w (after %v)", digest, ctx.Err(), err)
			case <-time.After(time.Duration(try) * 250 * time.Millisecond):
			}
		}
		var b []byte
		b, err = r.readBlob(ctx, objectName(digest))
		switch {
		case errors.Is(err, jetstream.ErrObjectNotFound):
			err = fmt.Errorf("%w: blob %s", ErrNotFound, digest)
			continue
		case errors.Is(err, jetstream.ErrDigestMismatch):
			err = fmt.Errorf("modreg: %w", err)
			continue
		case err != nil:
			return nil, fmt.Errorf("modreg: %w", err)
		}
		if got := Digest(b); got != digest {
			err = fmt.Errorf("%w: want %s, got %s", ErrDigest, digest, got)
			continue
		}
		return b, nil
	}
	return nil, err
}

// ReportRefusal records that host refused a version, for `ward module ls`.
func (r *Registry) ReportRefusal(ctx context.Context, e Event) error {
	if !hostRE.MatchString(e.Host) || !nameRE.MatchString(e.Name) {
		return fmt.Errorf("%w: event for %q on %q", ErrBadName, e.Name, e.Host)
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b, _ := json.Marshal(e)
	_, err := r.kv.Put(ctx, eventKey(e.Name, e.Host), b)
	return err
}

// ReportStaged records that host has compiled digest of module name ahead.
func (r *Registry) ReportStaged(ctx context.Context, name, host, digest string) error {
	if !hostRE.MatchString(host) || !nameRE.MatchString(name) {
		return fmt.Errorf("%w: staged %q on %q", ErrBadName, name, host)
	}
	_, err := r.kv.Put(ctx, stagedKey(name, host), []byte(digest))
	return err
}

// List returns every module, sorted by name, with its versions (oldest
// deploy first) and refusal events.
func (r *Registry) List(ctx context.Context) ([]Module, error) {
	lister, err := r.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("modreg: %w", err)
	}
	mods := map[string]*Module{}
	get := func(name string) *Module {
		if m, ok := mods[name]; ok {
			return m
		}
		m := &Module{Name: name}
		mods[name] = m
		return m
	}
	for key := range lister.Keys() {
		parts := strings.SplitN(key, ".", 4)
		if len(parts) < 3 || parts[0] != "mod" {
			continue
		}
		e, err := r.kv.Get(ctx, key)
		if err != nil {
			continue // deleted since the listing
		}
		m := get(parts[1])
		switch {
		case parts[2] == "active":
			a := &Active{}
			if json.Unmarshal(e.Value(), a) == nil {
				m.Active = a
			}
		case parts[2] == "v" && len(parts) == 4:
			var v Version
			if json.Unmarshal(e.Value(), &v) == nil {
				m.Versions = append(m.Versions, v)
			}
		case parts[2] == "event" && len(parts) == 4:
			var ev Event
			if json.Unmarshal(e.Value(), &ev) == nil {
				m.Events = append(m.Events, ev)
			}
		}
	}
	out := make([]Module, 0, len(mods))
	for _, m := range mods {
		sort.Slice(m.Versions, func(i, j int) bool { return m.Versions[i].DeployedAt.Before(m.Versions[j].DeployedAt) })
		sort.Slice(m.Events, func(i, j int) bool { return m.Events[i].At.Before(m.Events[j].At) })
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Revision returns the registry's latest revision. A State whose Revision
// is at least this one includes every change made before the call: the
// scheduler waits for that before it calls a topic unmapped, so that a job
// submitted right after `ward module deploy` returns finds its route.
func (r *Registry) Revision(ctx context.Context) (uint64, error) {
	st, err := r.kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("modreg: %w", err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return 0, errors.New("modreg: the bucket's status has no stream state")
	}
	return bs.StreamInfo().State.LastSeq, nil
}

// State is what the scheduler follows of the registry: every module's
// active record, and which digest each host last refused.
type State struct {
	// Revision is the registry revision the state includes: every change
	// up to it (see Registry.Revision).
	Revision uint64
	Actives  map[string]*Active
	// Refused maps module → host → the last version that host refused.
	Refused map[string]map[string]Event
	// Staged maps module → host → the digest that host compiled ahead.
	Staged map[string]map[string]string
	// Versions maps module → version → its record.
	Versions map[string]map[string]*Version
}

// Follow calls onChange with the registry's state: once with the state
// when it starts, before it returns, then after every change, until ctx
// ends. Each call gets a new State that nothing modifies afterwards. done
// is closed when Follow has stopped. It watches the bucket with a
// consumer, which the control plane's credentials may create; a host
// follows with FollowDirect.
func (r *Registry) Follow(ctx context.Context, onChange func(*State)) (done <-chan struct{}, err error) {
	w, err := r.kv.Watch(ctx, "mod.>")
	if err != nil {
		return nil, fmt.Errorf("modreg: watch: %w", err)
	}
	st := newFollowState()
	apply := func(e jetstream.KeyValueEntry) {
		st.apply(e.Key(), e.Value(), e.Revision(), e.Operation() != jetstream.KeyValuePut)
	}
	snapshot := st.snapshot
	// The current values first, up to the nil marker.
	for e := range w.Updates() {
		if e == nil {
			break
		}
		apply(e)
	}
	onChange(snapshot())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				apply(e)
				onChange(snapshot())
			}
		}
	}()
	return stopped, nil
}

// wasmHeader is how a WebAssembly binary module starts: the magic number
// \0asm and version 1, little-endian.
var wasmHeader = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// CheckWasm says whether b is a WebAssembly binary module of version 1,
// by its header: what a client checks before it uploads a file the hosts
// would refuse. It does not validate the rest.
func CheckWasm(b []byte) error {
	switch {
	case len(b) < len(wasmHeader) || string(b[:4]) != string(wasmHeader[:4]):
		return errors.New("not a WebAssembly module: it does not start with the magic number \\0asm")
	case string(b[4:8]) != string(wasmHeader[4:8]):
		return fmt.Errorf("WebAssembly binary format version %d; hosts run version 1", uint32(b[4])|uint32(b[5])<<8|uint32(b[6])<<16|uint32(b[7])<<24)
	}
	return nil
}

// FollowResync is how often FollowDirect reads the whole registry again,
// in case its subscription missed a change (a reconnect).
const FollowResync = 15 * time.Second

// FollowDirect is Follow for a credential that may create no consumer, a
// host's (auth/perms.go): it learns of changes through a subscription to
// the registry's subjects and reads each changed key with a direct get
// (internal/jsread), and reads every key again each FollowResync. State's
// Revision is the highest revision applied.
func (r *Registry) FollowDirect(ctx context.Context, onChange func(*State)) (done <-chan struct{}, err error) {
	st := newFollowState()
	done, err = jsread.FollowKV(ctx, r.nc, Bucket, "mod.>", FollowResync, func(batch []jsread.Entry) {
		for _, e := range batch {
			st.apply(e.Key, e.Value, e.Revision, e.Deleted)
		}
		onChange(st.snapshot())
	})
	if err != nil {
		return nil, fmt.Errorf("modreg: follow: %w", err)
	}
	return done, nil
}

// followState is the State Follow and FollowDirect build from the
// registry's keys.
type followState struct{ st *State }

func newFollowState() *followState {
	return &followState{st: &State{Actives: map[string]*Active{}, Refused: map[string]map[string]Event{},
		Staged: map[string]map[string]string{}, Versions: map[string]map[string]*Version{}}}
}

// apply applies key's value at revision, or its deletion.
func (f *followState) apply(key string, value []byte, revision uint64, del bool) {
	st := f.st
	st.Revision = max(st.Revision, revision)
	parts := strings.SplitN(key, ".", 4)
	if len(parts) < 3 {
		return
	}
	name := parts[1]
	switch {
	case parts[2] == "active":
		a := &Active{}
		if del || json.Unmarshal(value, a) != nil {
			delete(st.Actives, name)
			return
		}
		st.Actives[name] = a
	case parts[2] == "event" && len(parts) == 4:
		var ev Event
		if del || json.Unmarshal(value, &ev) != nil {
			delete(st.Refused[name], parts[3])
			return
		}
		if st.Refused[name] == nil {
			st.Refused[name] = map[string]Event{}
		}
		st.Refused[name][parts[3]] = ev
	case parts[2] == "staged" && len(parts) == 4:
		if del {
			delete(st.Staged[name], parts[3])
			return
		}
		if st.Staged[name] == nil {
			st.Staged[name] = map[string]string{}
		}
		st.Staged[name][parts[3]] = string(value)
	case parts[2] == "v" && len(parts) == 4:
		v := &Version{}
		if del || json.Unmarshal(value, v) != nil {
			delete(st.Versions[name], parts[3])
			return
		}
		if st.Versions[name] == nil {
			st.Versions[name] = map[string]*Version{}
		}
		st.Versions[name][parts[3]] = v
	}
}

// snapshot returns a copy of the state that nothing modifies afterwards.
func (f *followState) snapshot() *State {
	st := f.st
	out := &State{Revision: st.Revision, Actives: maps.Clone(st.Actives), Refused: make(map[string]map[string]Event, len(st.Refused)),
		Staged: make(map[string]map[string]string, len(st.Staged)), Versions: make(map[string]map[string]*Version, len(st.Versions))}
	for k, v := range st.Refused {
		out.Refused[k] = maps.Clone(v)
	}
	for k, v := range st.Staged {
		out.Staged[k] = maps.Clone(v)
	}
	for k, v := range st.Versions {
		out.Versions[k] = maps.Clone(v)
	}
	return out
}
