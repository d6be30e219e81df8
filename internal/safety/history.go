package safety

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// PolicyRevision is one entry the policy bucket keeps of its key bundle:
// a push (or a rollback, or a deletion), as History lists it.
type PolicyRevision struct {
	// KVRevision is the bucket revision of the entry, what Rollback takes.
	KVRevision uint64 `json:"kv_revision"`
	// Revision is the bundle's revision; empty for a deletion, or a value
	// that is no bundle.
	Revision string `json:"revision,omitempty"`
	// PushedBy is who pushed it, as the entry claims (nothing
	// authenticates it; the signature says who made the bundle): for a
	// rollback, who rolled back.
	PushedBy string `json:"pushed_by,omitempty"`
	// PushedAtUnixMs is when the bucket stored the entry (the server's
	// clock), Unix ms.
	PushedAtUnixMs int64 `json:"pushed_at_unix_ms"`
	// Signed says the bundle carries a signature (.signatures.json);
	// KeyID is the id of the key its JWT names, empty when unsigned.
	// Neither is verified here: kernels with --policy-pubkey verify.
	Signed bool   `json:"signed"`
	KeyID  string `json:"key_id,omitempty"`
	// Files is how many files the bundle has, its tests among them
	// (the signature not counted); TestFiles how many of them are
	// *_test.rego. The bucket does not store how many tests passed at the
	// push: every bundle Push wrote passed all of its tests.
	Files     int `json:"files"`
	TestFiles int `json:"test_files"`
	// RollbackOf is, for an entry Rollback wrote, the bucket revision it
	// put back; 0 for a push.
	RollbackOf uint64 `json:"rollback_of,omitempty"`
	// InForce marks the bucket's current value: the bundle the kernels
	// watching the bucket enforce (or refused: ward policy status).
	InForce bool `json:"in_force"`
	// Deleted marks a deletion or a purge of the key (the kernels keep
	// the policy they had); such an entry cannot be rolled back to.
	Deleted bool `json:"deleted,omitempty"`
	// Error says why the value is not a bundle (written behind Push's
	// back); such an entry cannot be rolled back to either.
	Error string `json:"error,omitempty"`
}

// History returns the entries the policy bucket (DefaultBucket when
// empty) keeps of its bundle, newest first: at most its history (16)
// pushes and rollbacks, deletions included. The newest, unless it is a
// deletion, is InForce. None when nothing was pushed.
//
// It reads them with JetStream's KeyValue History (an ordered consumer:
// an admin's credential may create one; a kernel's may not, and kernels
// do not call it).
func History(ctx context.Context, nc *nats.Conn, bucket string) ([]PolicyRevision, error) {
	kv, err := openBucket(ctx, nc, bucket)
	if err != nil || kv == nil {
		return nil, err
	}
	es, err := kvHistory(ctx, kv)
	if err != nil {
		return nil, err
	}
	out := make([]PolicyRevision, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		pr := describe(es[i])
		pr.InForce = i == len(es)-1 && !pr.Deleted && pr.Error == ""
		out = append(out, pr)
	}
	return out, nil
}

// openBucket opens bucket without creating it: nil when it does not exist.
func openBucket(ctx context.Context, nc *nats.Conn, bucket string) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("safety: jetstream: %w", err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("safety: policy bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// kvHistory is the key bundle's kept entries, oldest first; none when it
// has none.
func kvHistory(ctx context.Context, kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) {
	es, err := kv.History(ctx, bundleKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("safety: policy history of %s: %w", kv.Bucket(), err)
	}
	return es, nil
}

// describe reads one entry of the key bundle.
func describe(e jetstream.KeyValueEntry) PolicyRevision {
	pr := PolicyRevision{KVRevision: e.Revision(), PushedAtUnixMs: e.Created().UnixMilli()}
	if e.Operation() != jetstream.KeyValuePut {
		pr.Deleted = true
		return pr
	}
	var pb safetyv1.PolicyBundle
	if err := proto.Unmarshal(e.Value(), &pb); err != nil {
		pr.Error = "not a policy bundle: " + err.Error()
		return pr
	}
	pr.PushedBy = pb.GetPushedBy()
	if n, by, ok := parseRollback(pr.PushedBy); ok {
		pr.RollbackOf, pr.PushedBy = n, by
	}
	b, err := BundleFromProto(&pb)
	if err != nil {
		pr.Revision = pb.GetRevision()
		pr.Error = err.Error()
		return pr
	}
	pr.Revision = b.Revision()
	pr.Files = len(b.Files)
	for name := range b.Files {
		if isTest(name) {
			pr.TestFiles++
		}
	}
	if len(b.Signatures) > 0 {
		pr.Signed = true
		var sc opabundle.SignaturesConfig
		if util.UnmarshalJSON(b.Signatures, &sc) == nil {
			pr.KeyID = signingKeyID(sc)
		}
	}
	return pr
}

// RollbackOptions says who rolls back.
type RollbackOptions struct {
	// By names who rolls back (user@host), as PushOptions.By.
	By string
}

// RollbackResult says what Rollback did.
type RollbackResult struct {
	// Bucket is the policy bucket.
	Bucket string
	// To is the bucket revision rolled back to, and Revision its bundle's
	// revision.
	To       uint64
	Revision string
	// KVRevision is the bucket revision written, 0 when Unchanged.
	KVRevision uint64
	// Unchanged is true when the bundle of To is in force already (To is
	// the bucket's current revision, or holds the same bundle, signature
	// included): nothing was written.
	Unchanged bool
	// Signed says the bundle carries a signature, and KeyID is the id of
	// the key it names; empty when it is unsigned.
	Signed bool
	KeyID  string
}

// Errors of Rollback (and HistoryBundle), which wrap them.
var (
	// ErrNotInHistory: the bucket keeps no entry of that revision for the
	// key bundle (never one, or dropped past the bucket's history).
	ErrNotInHistory = errors.New("safety: no such revision in the policy history")
	// ErrRevisionDeleted: the entry is a deletion or a purge of the key,
	// which holds no bundle.
	ErrRevisionDeleted = errors.New("safety: the revision is a deletion, not a bundle")
	// ErrBucketChanged: another push or rollback wrote the bucket while
	// Rollback read it; nothing was written.
	ErrBucketChanged = errors.New("safety: the policy bucket changed meanwhile")
)

// HistoryBundle returns the bundle of bucket revision kvRevision of the
// key bundle, as stored (not verified), and its entry as History
// describes it. It fails as Rollback fails for a revision it refuses.
func HistoryBundle(ctx context.Context, nc *nats.Conn, bucket string, kvRevision uint64) (*Bundle, PolicyRevision, error) {
	kv, err := openBucket(ctx, nc, bucket)
	if err != nil {
		return nil, PolicyRevision{}, err
	}
	es, err := keptHistory(ctx, kv)
	if err != nil {
		return nil, PolicyRevision{}, err
	}
	e, err := pick(es, kvRevision)
	if err != nil {
		return nil, PolicyRevision{}, err
	}
	pr := describe(e)
	pr.InForce = e.Revision() == es[len(es)-1].Revision()
	var pb safetyv1.PolicyBundle
	if err := proto.Unmarshal(e.Value(), &pb); err != nil {
		return nil, pr, fmt.Errorf("safety: revision #%d is not a policy bundle: %w", kvRevision, err)
	}
	b, err := BundleFromProto(&pb)
	if err != nil {
		return nil, pr, fmt.Errorf("safety: revision #%d: %w", kvRevision, err)
	}
	return b, pr, nil
}

// keptHistory is kvHistory of kv, an error when the bucket or its key
// has none.
func keptHistory(ctx context.Context, kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) {
	if kv == nil {
		return nil, fmt.Errorf("%w: no bundle was ever pushed (the bucket does not exist)", ErrNotInHistory)
	}
	es, err := kvHistory(ctx, kv)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: no bundle was ever pushed to %s", ErrNotInHistory, kv.Bucket())
	}
	return es, nil
}

// pick finds the entry of bucket revision rev in es (oldest first).
func pick(es []jetstream.KeyValueEntry, rev uint64) (jetstream.KeyValueEntry, error) {
	for _, e := range es {
		if e.Revision() != rev {
			continue
		}
		if e.Operation() != jetstream.KeyValuePut {
			return nil, fmt.Errorf("%w: #%d %s the bundle", ErrRevisionDeleted, rev,
				map[bool]string{true: "purged", false: "deleted"}[e.Operation() == jetstream.KeyValuePurge])
		}
		return e, nil
	}
	return nil, fmt.Errorf("%w: #%d; %s keeps #%d to #%d (ward policy history lists them)",
		ErrNotInHistory, rev, es[0].Bucket(), es[0].Revision(), es[len(es)-1].Revision())
}

// Rollback puts the bundle of an earlier entry of the policy bucket
// (DefaultBucket when empty), bucket revision kvRevision, back in force:
// it writes that entry's stored bytes again as the new value of the key
// bundle, where every kernel watching picks it up as it picks up a push.
//
// The bundle is not signed again and its files are not touched: the
// stored value is the PolicyBundle Push wrote, whose .signatures.json
// (one of its files) covers every other file, so the signature made at
// the push still verifies, and a kernel with --policy-pubkey accepts the
// bundle exactly when it accepted it then. What the signature does not
// cover are the fields pushed_by and pushed_at_unix_ms, which say who
// and when. Rollback appends to the stored bytes, unchanged, those two
// fields once more (in protobuf's wire format a scalar field that comes
// again replaces the earlier value when the message is read):
// pushed_by "rollback to #N by <opts.By>", and the time of the rollback.
// So the entry says it is a rollback, of which revision and by whom
// (History reads it back as RollbackOf and PushedBy), the kernels' audit
// records (policy.apply) name who rolled back, and the bundle's bytes
// are those of revision N.
//
// It refuses a revision the bucket does not keep (ErrNotInHistory) and a
// deletion or purge (ErrRevisionDeleted). A revision whose bundle is in
// force already is Unchanged, not an error. The write is conditional on
// the bucket's revision it read: a push that comes in between makes it
// fail with ErrBucketChanged, and nothing is written.
func Rollback(ctx context.Context, nc *nats.Conn, bucket string, kvRevision uint64, opts RollbackOptions) (RollbackResult, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	res := RollbackResult{Bucket: bucket, To: kvRevision}
	kv, err := openBucket(ctx, nc, bucket)
	if err != nil {
		return res, err
	}
	es, err := keptHistory(ctx, kv)
	if err != nil {
		return res, err
	}
	e, err := pick(es, kvRevision)
	if err != nil {
		return res, err
	}
	pr := describe(e)
	if pr.Error != "" {
		return res, fmt.Errorf("safety: rollback to #%d: the entry is not a bundle a kernel loads: %s", kvRevision, pr.Error)
	}
	res.Revision, res.Signed, res.KeyID = pr.Revision, pr.Signed, pr.KeyID
	last := es[len(es)-1]
	if last.Operation() == jetstream.KeyValuePut && (last.Revision() == kvRevision || sameBundle(last.Value(), e.Value())) {
		res.Unchanged = true
		return res, nil
	}
	value := appendPushed(bytes.Clone(e.Value()), time.Now().UnixMilli(), rollbackBy(kvRevision, opts.By))
	res.KVRevision, err = kv.Update(ctx, bundleKey, value, last.Revision())
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return res, fmt.Errorf("%w (it was at #%d): nothing was written; look at the history again", ErrBucketChanged, last.Revision())
		}
		return res, fmt.Errorf("safety: rollback to #%d: %w", kvRevision, err)
	}
	return res, nil
}

// rollbackPrefix starts the pushed_by of an entry Rollback wrote:
// "rollback to #N by WHO".
const rollbackPrefix = "rollback to #"

func rollbackBy(rev uint64, by string) string {
	if by == "" {
		by = "unknown"
	}
	return rollbackPrefix + strconv.FormatUint(rev, 10) + " by " + by
}

// parseRollback reads a pushed_by that rollbackBy wrote.
func parseRollback(s string) (uint64, string, bool) {
	rest, ok := strings.CutPrefix(s, rollbackPrefix)
	if !ok {
		return 0, "", false
	}
	num, by, ok := strings.Cut(rest, " by ")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil {
		return 0, "", false
	}
	return n, by, true
}

// appendPushed appends the PolicyBundle fields pushed_at_unix_ms and
// pushed_by to the encoded message b: read, they replace the values b
// holds; b's own bytes stay as they are.
func appendPushed(b []byte, atMs int64, by string) []byte {
	fields := (&safetyv1.PolicyBundle{}).ProtoReflect().Descriptor().Fields()
	b = protowire.AppendTag(b, fields.ByName("pushed_at_unix_ms").Number(), protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(atMs))
	b = protowire.AppendTag(b, fields.ByName("pushed_by").Number(), protowire.BytesType)
	return protowire.AppendString(b, by)
}

// sameBundle reports whether the stored values a and b hold the same
// bundle: the same files, its signature among them.
func sameBundle(a, b []byte) bool {
	var pa, pb safetyv1.PolicyBundle
	if proto.Unmarshal(a, &pa) != nil || proto.Unmarshal(b, &pb) != nil {
		return false
	}
	return pa.GetRevision() == pb.GetRevision() && maps.EqualFunc(pa.GetFiles(), pb.GetFiles(), bytes.Equal)
}
