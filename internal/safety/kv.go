package safety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
)

// DefaultBucket is the NATS KV bucket that `ward policy push` publishes
// bundles to and every kernel watches.
const DefaultBucket = "ward_policy"

// bundleKey is the bucket's key for the bundle in force; its history is the
// push history.
const bundleKey = "bundle"

// bucketHistory is how many pushed bundles the bucket keeps per key.
const bucketHistory = 16

// policyBucket opens bucket, creating it when it does not exist.
func policyBucket(ctx context.Context, nc *nats.Conn, bucket string) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("safety: jetstream: %w", err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "Ward safety policy bundles (ward policy push)",
			History:     bucketHistory,
			Replicas:    config.JetStreamReplicas(),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another kernel or push created it meanwhile.
			kv, err = js.KeyValue(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("safety: policy bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// PushResult says what Push did.
type PushResult struct {
	// Bucket is the policy bucket pushed to.
	Bucket string
	// Revision is the bundle's revision.
	Revision string
	// Tests is how many Rego tests the bundle passed.
	Tests int
	// KVRevision is the bucket revision written, 0 when Unchanged.
	KVRevision uint64
	// Unchanged is true when the bucket already held this revision (signed
	// with the same key, for a signed push): nothing was written.
	Unchanged bool
	// KeyID is the id of the key the bundle was signed with; empty when
	// it was pushed unsigned.
	KeyID string
}

// PushOptions says who pushes a bundle and signs it.
type PushOptions struct {
	// By names the pusher in the stored bundle (user@host).
	By string
	// SigningKey signs the bundle (Bundle.Sign). A kernel with a
	// ReloaderConfig.VerifyKey refuses a bundle that is not signed with
	// that key's private half. Required unless Unsigned.
	SigningKey *PolicySigningKey
	// Unsigned pushes the bundle without a signature, which only kernels
	// without a VerifyKey accept.
	Unsigned bool
}

// ErrNoSigningKey is Push's error without PushOptions.SigningKey (and
// without PushOptions.Unsigned).
var ErrNoSigningKey = errors.New("safety: push: no signing key")

// Push checks b as every kernel will (Prepare: it compiles and its tests
// pass), signs it with opts.SigningKey (Bundle.Sign: OPA's bundle
// signature over all its files) and publishes it to the policy bucket,
// where every kernel watching picks it up. A bundle that fails the checks
// is not published, and the error says why (ErrInvalidBundle, or a
// *TestsFailedError). Without a signing key Push fails with
// ErrNoSigningKey, unless opts.Unsigned.
func Push(ctx context.Context, nc *nats.Conn, bucket string, b *Bundle, opts PushOptions) (PushResult, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	if opts.SigningKey == nil && !opts.Unsigned {
		return PushResult{Bucket: bucket}, ErrNoSigningKey
	}
	p, err := Prepare(ctx, b)
	if err != nil {
		return PushResult{Bucket: bucket}, err
	}
	res := PushResult{Bucket: bucket, Revision: p.Revision(), Tests: p.Tests()}
	push := &Bundle{Files: b.Files} // any signature b came with is dropped
	if opts.SigningKey != nil {
		if push, err = b.Sign(opts.SigningKey); err != nil {
			return res, err
		}
		res.KeyID = opts.SigningKey.ID()
	}
	kv, err := policyBucket(ctx, nc, bucket)
	if err != nil {
		return res, err
	}
	if cur, err := kv.Get(ctx, bundleKey); err == nil {
		if inBucket(cur.Value(), res.Revision, opts.SigningKey) {
			res.Unchanged = true
			return res, nil
		}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return res, fmt.Errorf("safety: push: %w", err)
	}
	pb := push.Proto()
	pb.PushedAtUnixMs = time.Now().UnixMilli()
	pb.PushedBy = opts.By
	data, err := proto.Marshal(pb)
	if err != nil {
		return res, fmt.Errorf("safety: push: %w", err)
	}
	if res.KVRevision, err = kv.Put(ctx, bundleKey, data); err != nil {
		return res, fmt.Errorf("safety: push %s: %w", res.Revision, err)
	}
	return res, nil
}

// inBucket reports whether the bucket's value cur is the bundle of
// revision rev, signed with key when key is not nil: then pushing it again
// would change nothing.
func inBucket(cur []byte, rev string, key *PolicySigningKey) bool {
	var pb safetyv1.PolicyBundle
	if proto.Unmarshal(cur, &pb) != nil || pb.GetRevision() != rev {
		return false
	}
	if key == nil {
		return true
	}
	b, err := BundleFromProto(&pb)
	return err == nil && VerifyBundle(b, key.Public()) == nil
}

// Statuses asks every kernel for its status on sys.safety.status and
// returns the answers that arrive within wait, sorted by kernel id.
func Statuses(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]*safetyv1.KernelStatus, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("safety: status: %w", err)
	}
	defer sub.Unsubscribe()
	req, _ := proto.Marshal(&safetyv1.StatusRequest{})
	if err := nc.PublishRequest(bus.SubjectSafetyStatus, inbox, req); err != nil {
		return nil, fmt.Errorf("safety: status: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []*safetyv1.KernelStatus
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			break // the wait is over
		}
		st := &safetyv1.KernelStatus{}
		if proto.Unmarshal(msg.Data, st) == nil {
			out = append(out, st)
		}
	}
	sortStatuses(out)
	return out, nil
}

// KernelState is where one kernel stands on a revision.
type KernelState int

// The states of a kernel on a revision.
const (
	// KernelPending: the kernel still enforces another revision.
	KernelPending KernelState = iota
	// KernelEnforces: the revision is in force on the kernel.
	KernelEnforces
	// KernelRefused: the kernel refused the revision (its status says
	// why) and enforces the one it had.
	KernelRefused
)

// StateOf says where the kernel whose status is st stands on rev.
func StateOf(st *safetyv1.KernelStatus, rev string) KernelState {
	switch {
	case st.GetRevision() == rev:
		return KernelEnforces
	case st.GetRefusedRevision() == rev:
		return KernelRefused
	}
	return KernelPending
}

// Rollout is where the kernels stand on a revision, as WaitKernels saw them
// last.
type Rollout struct {
	// Revision is the revision waited for.
	Revision string
	// KVRevision is the bucket revision that carried it (PushResult), 0
	// when not known: a refusal counts only if it is of that bucket
	// revision or a later one, so that a bundle pushed again is not taken
	// for refused by the refusal of its earlier push.
	KVRevision uint64
	// Kernels are the statuses of the kernels that answered, sorted by
	// kernel id; none when no kernel answered.
	Kernels []*safetyv1.KernelStatus
}

// Settled reports whether some kernel answered and none is pending: each
// enforces the revision or refused it.
func (r *Rollout) Settled() bool {
	for _, st := range r.Kernels {
		if r.State(st) == KernelPending {
			return false
		}
	}
	return len(r.Kernels) > 0
}

// Enforced reports whether some kernel answered and every one enforces the
// revision.
func (r *Rollout) Enforced() bool {
	for _, st := range r.Kernels {
		if r.State(st) != KernelEnforces {
			return false
		}
	}
	return len(r.Kernels) > 0
}

// State says where the kernel whose status is st stands on the revision
// waited for (StateOf), a refusal of an earlier push of it not counted.
func (r *Rollout) State(st *safetyv1.KernelStatus) KernelState {
	s := StateOf(st, r.Revision)
	if s == KernelRefused && r.KVRevision > 0 && st.GetRefusedKvRevision() > 0 && st.GetRefusedKvRevision() < r.KVRevision {
		return KernelPending
	}
	return s
}

// statusWait is how long WaitKernels collects answers each time it asks.
const statusWait = 300 * time.Millisecond

// WaitKernels asks the kernels for their status on sys.safety.status (see
// Statuses) again and again until every kernel that answers enforces rev
// or refused it, or wait has passed, and returns where they stood last.
// `ward policy push` waits so for the revision it pushed, from bucket
// revision kvRev (0: any). A kernel that does not answer (none running, or
// not connected to NATS) is not waited for: it loads the bucket's bundle
// when it connects.
func WaitKernels(ctx context.Context, nc *nats.Conn, rev string, kvRev uint64, wait time.Duration) (*Rollout, error) {
	deadline := time.Now().Add(wait)
	for {
		sts, err := Statuses(ctx, nc, statusWait)
		if err != nil {
			return nil, err
		}
		r := &Rollout{Revision: rev, KVRevision: kvRev, Kernels: sts}
		if r.Settled() || time.Now().After(deadline) || ctx.Err() != nil {
			return r, nil
		}
	}
}

func sortStatuses(ss []*safetyv1.KernelStatus) {
	slices.SortFunc(ss, func(a, b *safetyv1.KernelStatus) int { return strings.Compare(a.GetKernelId(), b.GetKernelId()) })
}
