package safety

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// ErrNoBundle is Current's error when nothing was pushed to the bucket.
var ErrNoBundle = errors.New("safety: no bundle was pushed")

// Current returns the bundle in force in bucket (DefaultBucket when
// empty): the one the kernels load, as pushed, not verified (the kernels
// verify it). It returns ErrNoBundle when none was pushed: the kernels
// then run the policy they were started with.
func Current(ctx context.Context, nc *nats.Conn, bucket string) (*Bundle, *safetyv1.PolicyBundle, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("safety: jetstream: %w", err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil, ErrNoBundle
	}
	if err != nil {
		return nil, nil, fmt.Errorf("safety: policy bucket %s: %w", bucket, err)
	}
	e, err := kv.Get(ctx, bundleKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, ErrNoBundle
	}
	if err != nil {
		return nil, nil, fmt.Errorf("safety: policy bucket %s: %w", bucket, err)
	}
	var pb safetyv1.PolicyBundle
	if err := proto.Unmarshal(e.Value(), &pb); err != nil {
		return nil, nil, fmt.Errorf("safety: the bundle in %s: %w", bucket, err)
	}
	b, err := BundleFromProto(&pb)
	if err != nil {
		return nil, nil, err
	}
	return b, &pb, nil
}
