package safety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/bus"
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
	// Revision is the bundle's revision.
	Revision string
	// Tests is how many Rego tests the bundle passed.
	Tests int
	// KVRevision is the bucket revision written, 0 when Unchanged.
	KVRevision uint64
	// Unchanged is true when the bucket already held this revision: nothing
	// was written.
	Unchanged bool
}

// Push checks b as every kernel will (Prepare: it compiles and its tests
// pass) and publishes it to the policy bucket, where every kernel watching
// picks it up. A bundle that fails the checks is not published, and the
// error says why (ErrInvalidBundle, or a *TestsFailedError). by names the
// pusher in the stored bundle.
func Push(ctx context.Context, nc *nats.Conn, bucket string, b *Bundle, by string) (PushResult, error) {
	p, err := Prepare(ctx, b)
	if err != nil {
		return PushResult{}, err
	}
	res := PushResult{Revision: p.Revision(), Tests: p.Tests()}
	kv, err := policyBucket(ctx, nc, bucket)
	if err != nil {
		return res, err
	}
	if cur, err := kv.Get(ctx, bundleKey); err == nil {
		var pb safetyv1.PolicyBundle
		if proto.Unmarshal(cur.Value(), &pb) == nil && pb.GetRevision() == res.Revision {
			res.Unchanged = true
			return res, nil
		}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return res, fmt.Errorf("safety: push: %w", err)
	}
	pb := b.Proto()
	pb.PushedAtUnixMs = time.Now().UnixMilli()
	pb.PushedBy = by
	data, err := proto.Marshal(pb)
	if err != nil {
		return res, fmt.Errorf("safety: push: %w", err)
	}
	if res.KVRevision, err = kv.Put(ctx, bundleKey, data); err != nil {
		return res, fmt.Errorf("safety: push %s: %w", res.Revision, err)
	}
	return res, nil
}

// PutRaw writes pb to the policy bucket as it is, without the checks Push
// makes: kernels still refuse a bundle that fails them. It is for tests,
// and for restoring a bucket.
func PutRaw(ctx context.Context, nc *nats.Conn, bucket string, pb *safetyv1.PolicyBundle) (uint64, error) {
	kv, err := policyBucket(ctx, nc, bucket)
	if err != nil {
		return 0, err
	}
	data, err := proto.Marshal(pb)
	if err != nil {
		return 0, fmt.Errorf("safety: put: %w", err)
	}
	rev, err := kv.Put(ctx, bundleKey, data)
	if err != nil {
		return 0, fmt.Errorf("safety: put: %w", err)
	}
	return rev, nil
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

func sortStatuses(ss []*safetyv1.KernelStatus) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].GetKernelId() < ss[j-1].GetKernelId(); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}
