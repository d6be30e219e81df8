package bus

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jsread"
)

// Large job contexts do not travel in messages (NATS refuses a message
// over the server's max_payload, 1 MiB by default): a client stores them in
// a JetStream Object Store bucket and submits a pointer instead. See
// README.md, "Context pointers".
const (
	// ContextBucketPrefix starts the name of a tenant's Object Store bucket
	// of job contexts (ContextBucketOf): one bucket per tenant, so that a
	// tenant's credential may read and write its own only.
	ContextBucketPrefix = "WARD_CTX_"
	// ContextTTL is how long a stored context is kept.
	ContextTTL = 24 * time.Hour
	// ObjectScheme starts a pointer to an object:
	// nats-os://<bucket>/<object name>.
	ObjectScheme = "nats-os://"
	// InlineContextMax is the largest context a client sends inside its
	// submission; a larger one goes to its tenant's bucket (ContextBucketOf).
	InlineContextMax = 512 << 10
	// ResultBucketPrefix starts the name of a tenant's Object Store bucket
	// of job results too large for a message (ResultBucketOf): one bucket
	// per tenant, so that a tenant's credential may read its own only.
	ResultBucketPrefix = "WARD_RES_"
	// ResultTTL is how long a result stored by pointer is kept.
	ResultTTL = ContextTTL
	// InlineResultMax is the largest result a host sends in its result
	// message, which the scheduler stores in the job store and sends inside
	// its replies; a larger one the host sends in parts, which the
	// schedulers store in its tenant's result bucket (PutResultPart,
	// SealResult), and clients read it from there.
	InlineResultMax = 512 << 10
	// objectTimeout bounds a whole put or get when the caller's context has
	// no deadline: JetStream's own default (5 s) is too short for a 64 MiB
	// object on a busy host.
	objectTimeout = 2 * time.Minute
)

// withTimeout gives ctx objectTimeout unless it has a deadline already.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, objectTimeout)
}

// ErrBadPointer is returned for a pointer that is not a nats-os:// object
// pointer of the expected shape.
var ErrBadPointer = errors.New("bus: bad object pointer")

// ContextBucketOf is tenant's bucket of job contexts.
func ContextBucketOf(tenant string) string { return ContextBucketPrefix + tenant }

// ResultBucketOf is tenant's bucket of job results.
func ResultBucketOf(tenant string) string { return ResultBucketPrefix + tenant }

// ResultObjectName is the name of the result of a job's attempt in its
// tenant's result bucket: "<job id>-<attempt>". A host runs an attempt
// once, so no result is ever written over.
func ResultObjectName(jobID string, attempt int) string { return fmt.Sprintf("%s-%d", jobID, attempt) }

// ResultObjectPtr is the pointer to the result of a job's attempt stored in
// its tenant's result bucket: nats-os://WARD_RES_<tenant>/<job id>-<attempt>.
func ResultObjectPtr(tenant, jobID string, attempt int) string {
	return ObjectScheme + ResultBucketOf(tenant) + "/" + ResultObjectName(jobID, attempt)
}

// IsObjectPtr reports whether ptr points into the object store
// (nats-os://), rather than into the job store.
func IsObjectPtr(ptr string) bool { return strings.HasPrefix(ptr, ObjectScheme) }

// ResultOwner returns the tenant a result pointer belongs to, checking that
// it names an object of a tenant's result bucket.
func ResultOwner(ptr string) (string, error) {
	bucket, _, err := ParseObjectPtr(ptr)
	if err != nil {
		return "", err
	}
	tenant, ok := strings.CutPrefix(bucket, ResultBucketPrefix)
	if !ok || tenant == "" {
		return "", fmt.Errorf("%w: %q is not a result in a %s<tenant> bucket", ErrBadPointer, ptr, ResultBucketPrefix)
	}
	return tenant, nil
}

// ContextObjectName is the name under which a context with the given
// sha256 digest is stored in its tenant's bucket: "sha256-<hex>". Naming by
// content makes a re-submitted context an upload of nothing.
func ContextObjectName(sum [sha256.Size]byte) string {
	return "sha256-" + hex.EncodeToString(sum[:])
}

// ParseObjectPtr splits nats-os://<bucket>/<name>.
func ParseObjectPtr(ptr string) (bucket, name string, err error) {
	rest, ok := strings.CutPrefix(ptr, ObjectScheme)
	if !ok {
		return "", "", fmt.Errorf("%w: %q does not start with %s", ErrBadPointer, ptr, ObjectScheme)
	}
	bucket, name, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || name == "" {
		return "", "", fmt.Errorf("%w: %q is not %s<bucket>/<name>", ErrBadPointer, ptr, ObjectScheme)
	}
	return bucket, name, nil
}

// ContextOwner returns the tenant a context pointer belongs to, checking
// that it names an object of a tenant's context bucket.
func ContextOwner(ptr string) (string, error) {
	bucket, _, err := ParseObjectPtr(ptr)
	if err != nil {
		return "", err
	}
	tenant, ok := strings.CutPrefix(bucket, ContextBucketPrefix)
	if !ok || tenant == "" {
		return "", fmt.Errorf("%w: %q is not a context in a %s<tenant> bucket", ErrBadPointer, ptr, ContextBucketPrefix)
	}
	return tenant, nil
}

// ContextDigest is the digest a context pointer names: "sha256:<hex>". The
// name is the client's claim; whoever reads the bytes checks them against
// it (ContentDigest).
func ContextDigest(ptr string) (string, error) {
	if _, err := ContextOwner(ptr); err != nil {
		return "", err
	}
	_, name, _ := ParseObjectPtr(ptr)
	hexsum, ok := strings.CutPrefix(name, "sha256-")
	if !ok || len(hexsum) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %q does not name a sha256 digest", ErrBadPointer, ptr)
	}
	if _, err := hex.DecodeString(hexsum); err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadPointer, ptr, err)
	}
	return "sha256:" + hexsum, nil
}

// IsDigest reports whether d is "sha256:<hex>", as ContentDigest writes.
func IsDigest(d string) bool {
	hexsum, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexsum) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(hexsum)
	return err == nil
}

// ContentDigest is "sha256:<hex>" of data: the payload digest the safety
// kernel sees.
func ContentDigest(data []byte) string {
	sum := sha256.Sum256(data)
	var b [len("sha256:") + 2*sha256.Size]byte
	copy(b[:], "sha256:")
	hex.Encode(b[len("sha256:"):], sum[:])
	return string(b[:])
}

// Objects reads and writes objects of JetStream Object Store buckets on a
// connection. It is safe for concurrent use; buckets are opened once.
type Objects struct {
	js jetstream.JetStream

	mu      sync.Mutex // guards buckets and streams
	buckets map[string]jetstream.ObjectStore
	// streams are the buckets' streams, which Get reads with direct gets:
	// tenants and hosts may create no consumer (internal/jsread).
	streams map[string]jetstream.Stream
}

// NewObjects returns the Objects of c.
func NewObjects(c *Conn) (*Objects, error) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Objects{js: js, buckets: map[string]jetstream.ObjectStore{}, streams: map[string]jetstream.Stream{}}, nil
}

// contextBucket and resultBucket are the configurations of a tenant's
// buckets.
func contextBucket(tenant string) *jetstream.ObjectStoreConfig {
	return &jetstream.ObjectStoreConfig{Bucket: ContextBucketOf(tenant), TTL: ContextTTL,
		Storage: jetstream.FileStorage, Description: "Ward job contexts too large for a message", Replicas: config.JetStreamReplicas()}
}

func resultBucket(tenant string) *jetstream.ObjectStoreConfig {
	return &jetstream.ObjectStoreConfig{Bucket: ResultBucketOf(tenant), TTL: ResultTTL,
		Storage: jetstream.FileStorage, Description: "Ward job results too large for a message", Replicas: config.JetStreamReplicas()}
}

// bucket opens name, creating it as create says when create is not nil.
func (o *Objects) bucket(ctx context.Context, name string, create *jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if b, ok := o.buckets[name]; ok {
		return b, nil
	}
	var (
		b   jetstream.ObjectStore
		err error
	)
	if create != nil {
		b, err = o.js.CreateOrUpdateObjectStore(ctx, *create)
	} else {
		b, err = o.js.ObjectStore(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: object store %s: %w", name, err)
	}
	o.buckets[name] = b
	return b, nil
}

// ErrNoContextBucket is returned by PutContext when the tenant's context
// bucket does not exist: the schedulers create it (CreateTenantBuckets),
// on a tenant's request (SubjectBuckets) or when they admit its jobs; a
// tenant may configure no stream (auth/perms.go).
var ErrNoContextBucket = errors.New("bus: no context bucket")

// PutContext stores tenant's context, read from f (rewound to its start
// after hashing), in the tenant's bucket, which must exist
// (ErrNoContextBucket), unless it is there already, and returns its
// pointer.
func (o *Objects) PutContext(ctx context.Context, tenant string, f io.ReadSeeker) (string, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("bus: put context: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("bus: put context: %w", err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	name, bucket := ContextObjectName(sum), ContextBucketOf(tenant)
	b, err := o.bucket(ctx, bucket, nil)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("%w: %s does not exist (a scheduler creates it)", ErrNoContextBucket, bucket)
	}
	if err != nil {
		return "", err
	}
	ptr := ObjectScheme + bucket + "/" + name
	if info, err := b.GetInfo(ctx, name); err == nil && !info.Deleted {
		return ptr, nil
	}
	if _, err := b.Put(ctx, jetstream.ObjectMeta{Name: name}, f); err != nil {
		return "", fmt.Errorf("bus: put context %s: %w", ptr, err)
	}
	return ptr, nil
}

// ErrNoResultBucket is returned by PutResultPart when the tenant's result
// bucket does not exist: the schedulers create it (CreateTenantBuckets)
// when they admit the tenant's jobs, and hosts may not create streams.
var ErrNoResultBucket = errors.New("bus: no result bucket")

// CreateTenantBuckets creates tenant's context and result buckets unless
// they exist. Only the control plane calls it (the schedulers, before a
// tenant's first job runs or when the tenant asks, SubjectBuckets): a
// stream's configuration can reach any subject of the account (its
// subjects, sources, republish), so tenants and hosts may configure none.
func (o *Objects) CreateTenantBuckets(ctx context.Context, tenant string) error {
	if tenant == "" {
		return errors.New("bus: create tenant buckets: no tenant")
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	for _, cfg := range []*jetstream.ObjectStoreConfig{contextBucket(tenant), resultBucket(tenant)} {
		o.mu.Lock()
		_, ok := o.buckets[cfg.Bucket]
		o.mu.Unlock()
		if ok {
			continue
		}
		if _, err := o.bucket(ctx, cfg.Bucket, cfg); err != nil {
			return err
		}
	}
	return nil
}

// ResultPartMax is the most bytes of a result one ResultPart carries, and
// ResultMax the largest result stored by parts: ResultMax/ResultPartMax
// parts at most. Clients read up to ResultMax too (client.MaxResultBytes).
const (
	ResultPartMax = 768 << 10
	ResultMax     = 256 << 20
)

// ResultPartsMax is the most parts a result is stored in.
const ResultPartsMax = (ResultMax + ResultPartMax - 1) / ResultPartMax

// resultNUID is the name of the chunk subject of the result of attempt of
// job jobID ($O.<bucket>.C.<nuid>): the Object Store's layout, with a
// name only that attempt has, so that the parts a scheduler stores for a
// host land under that attempt's object and no other.
func resultNUID(jobID string, attempt int) string {
	sum := sha256.Sum256([]byte(ResultObjectName(jobID, attempt)))
	return "r" + hex.EncodeToString(sum[:15])
}

// PutResultPart stores part index of the result of attempt of tenant's job
// jobID in the tenant's result bucket, which must exist
// (ErrNoResultBucket): the parts are the chunks of the object that
// SealResult then describes, in the Object Store's own layout, so that
// every Object Store reader reads it. Parts must come in order, each once
// its predecessor is stored. A part stored again (a host's resend after a
// lost answer) is stored once: JetStream drops it as a duplicate.
func (o *Objects) PutResultPart(ctx context.Context, tenant, jobID string, attempt int, index int, data []byte) error {
	if tenant == "" || jobID == "" {
		return fmt.Errorf("bus: put result part: tenant %q, job %q: both are required", tenant, jobID)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	bucket := ResultBucketOf(tenant)
	if _, err := o.stream(ctx, bucket); err != nil {
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("%w: %s does not exist (a scheduler creates it when it admits the tenant's jobs)", ErrNoResultBucket, bucket)
		}
		return err
	}
	nuid := resultNUID(jobID, attempt)
	m := &nats.Msg{Subject: "$O." + bucket + ".C." + nuid, Data: data}
	if _, err := o.js.PublishMsg(ctx, m, jetstream.WithMsgID(nuid+"."+strconv.Itoa(index)),
		jetstream.WithExpectStream(jsread.ObjectStream(bucket))); err != nil {
		return fmt.Errorf("bus: put part %d of %s: %w", index, ResultObjectPtr(tenant, jobID, attempt), err)
	}
	return nil
}

// SealResult writes the description of the result of attempt of tenant's
// job jobID whose parts PutResultPart stored: size bytes in parts parts,
// of digest ("sha256:<hex>", the host's claim: readers check the bytes
// against it). It returns the result's pointer (ResultObjectPtr).
func (o *Objects) SealResult(ctx context.Context, tenant, jobID string, attempt int, size int64, parts int, digest string) (string, error) {
	ptr := ResultObjectPtr(tenant, jobID, attempt)
	sum, ok := strings.CutPrefix(digest, "sha256:")
	raw, err := hex.DecodeString(sum)
	if !ok || err != nil || len(raw) != sha256.Size {
		return "", fmt.Errorf("bus: seal %s: digest %q is not sha256:<hex>", ptr, digest)
	}
	if size < 0 || size > ResultMax || parts < 0 || parts > ResultPartsMax {
		return "", fmt.Errorf("bus: seal %s: %d bytes in %d parts: at most %d bytes in %d parts", ptr, size, parts, ResultMax, ResultPartsMax)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	bucket, name := ResultBucketOf(tenant), ResultObjectName(jobID, attempt)
	info := &jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: ResultPartMax}},
		Bucket:     bucket, NUID: resultNUID(jobID, attempt), Size: uint64(size), Chunks: uint32(parts),
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(raw), ModTime: time.Now().UTC(),
	}
	b, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	m := &nats.Msg{Subject: jsread.MetaSubject(bucket, name), Data: b, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if _, err := o.js.PublishMsg(ctx, m, jetstream.WithExpectStream(jsread.ObjectStream(bucket))); err != nil {
		return "", fmt.Errorf("bus: seal %s: %w", ptr, err)
	}
	return ptr, nil
}

// ErrResultDigest is returned by GetResult for bytes that are not those
// the job's host reported: the digest the scheduler recorded
// (JobRecord.result_digest) binds the object to the job's attempt, so a
// result an older host stored itself, or one rewritten by a credential
// that may write the bucket, is refused rather than shown.
var ErrResultDigest = errors.New("bus: result digest mismatch")

// GetResult reads the result ptr names for tenant, refusing a pointer into
// another tenant's bucket (ResultOwner), a result over max bytes
// (ErrTooLarge), and bytes whose digest is not digest (ErrResultDigest;
// "" checks none: a result recorded before digests were). A result that
// is gone (expired after ResultTTL) is an error that wraps
// jetstream.ErrObjectNotFound.
func (o *Objects) GetResult(ctx context.Context, tenant, ptr, digest string, max int64) ([]byte, error) {
	owner, err := ResultOwner(ptr)
	if err != nil {
		return nil, err
	}
	if owner != tenant {
		return nil, fmt.Errorf("%w: result %s is not tenant %q's", ErrBadPointer, ptr, tenant)
	}
	data, err := o.Get(ctx, ptr, max)
	if err != nil {
		return nil, err
	}
	if digest != "" {
		if got := ContentDigest(data); got != digest {
			return nil, fmt.Errorf("%w: %s holds %s, its job's host reported %s", ErrResultDigest, ptr, got, digest)
		}
	}
	return data, nil
}

// Size returns the size in bytes of the object ptr names. A pointer to no
// object is an error that wraps jetstream.ErrObjectNotFound.
func (o *Objects) Size(ctx context.Context, ptr string) (int64, error) {
	bucket, name, err := ParseObjectPtr(ptr)
	if err != nil {
		return 0, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	b, err := o.bucket(ctx, bucket, nil)
	if err != nil {
		return 0, err
	}
	info, err := b.GetInfo(ctx, name)
	if err == nil && info.Deleted {
		err = jetstream.ErrObjectNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("bus: stat %s: %w", ptr, err)
	}
	return int64(info.Size), nil
}

// ErrTooLarge is returned by Get for an object over the size asked.
var ErrTooLarge = jsread.ErrTooLarge

// stream opens the stream of bucket name.
func (o *Objects) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.streams[name]; ok {
		return s, nil
	}
	s, err := o.js.Stream(ctx, jsread.ObjectStream(name))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("bus: object store %s: %w", name, jetstream.ErrBucketNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: object store %s: %w", name, err)
	}
	o.streams[name] = s
	return s, nil
}

// ContextChunks reads the chunks of the context object ptr names that come
// after stream sequence after, offset bytes into it, about max bytes of
// them, for a host that may not read its tenant's bucket itself (the
// schedulers serve a job's context to the host it is dispatched to). An
// object over size bytes, the size the policy judged, is refused
// (ErrTooLarge).
func (o *Objects) ContextChunks(ctx context.Context, ptr string, size int64, after uint64, offset int64, max int) (data []byte, last uint64, done bool, err error) {
	bucket, name, err := ParseObjectPtr(ptr)
	if err != nil {
		return nil, 0, false, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s, err := o.stream(ctx, bucket)
	if err != nil {
		return nil, 0, false, err
	}
	info, err := jsread.ObjectInfo(ctx, s, bucket, name)
	if err != nil {
		return nil, 0, false, fmt.Errorf("bus: get %s: %w", ptr, err)
	}
	if int64(info.Size) > size {
		return nil, 0, false, fmt.Errorf("%w: %s holds %d bytes, more than %d", ErrTooLarge, ptr, info.Size, size)
	}
	data, last, done, err = jsread.Chunks(ctx, s, info, after, offset, max)
	if err != nil {
		return nil, 0, false, fmt.Errorf("bus: get %s: %w", ptr, err)
	}
	return data, last, done, nil
}

// Get reads the object ptr names, refusing one over max bytes, and checks
// it against the size and digest its description gives. It reads with
// direct gets, creating no consumer (internal/jsread).
func (o *Objects) Get(ctx context.Context, ptr string, max int64) ([]byte, error) {
	bucket, name, err := ParseObjectPtr(ptr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s, err := o.stream(ctx, bucket)
	if err != nil {
		return nil, err
	}
	data, _, err := jsread.Object(ctx, s, bucket, name, max)
	if err != nil {
		return nil, fmt.Errorf("bus: get %s: %w", ptr, err)
	}
	return data, nil
}
