package bus_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
)

// newObjects connects to a fresh JetStream server and returns its object
// stores.
func newObjects(t *testing.T) *bus.Objects {
	t.Helper()
	c, err := bus.Connect(natstest.StartJetStream(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	objs, err := bus.NewObjects(c)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestContextObjects(t *testing.T) {
	objs := newObjects(t)
	ctx := context.Background()

	// Well over one message (max_payload is 1 MiB).
	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	// Tenants may not create the bucket: until a scheduler did, a put fails.
	if _, err := objs.PutContext(ctx, "acme-eu", bytes.NewReader(data)); !errors.Is(err, bus.ErrNoContextBucket) {
		t.Fatalf("put without a bucket: %v", err)
	}
	if err := objs.CreateTenantBuckets(ctx, "acme-eu"); err != nil {
		t.Fatal(err)
	}
	ptr, err := objs.PutContext(ctx, "acme-eu", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ptr, "nats-os://WARD_CTX_acme-eu/sha256-") {
		t.Fatalf("pointer %q", ptr)
	}
	if owner, err := bus.ContextOwner(ptr); err != nil || owner != "acme-eu" {
		t.Fatalf("owner %q, %v", owner, err)
	}
	got, err := objs.Get(ctx, ptr, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// The same context again is the same object.
	again, err := objs.PutContext(ctx, "acme-eu", bytes.NewReader(data))
	if err != nil || again != ptr {
		t.Fatalf("second put: %q, %v", again, err)
	}
	if _, err := objs.Get(ctx, ptr, 1<<20); !errors.Is(err, bus.ErrTooLarge) {
		t.Fatalf("capped get: %v", err)
	}
	for _, bad := range []string{"redis://ctx:1", "nats-os://", "nats-os://WARD_CTX_acme", "nats-os://OTHER/x", "nats-os://WARD_CTX_/sha256-00"} {
		if _, err := bus.ContextOwner(bad); !errors.Is(err, bus.ErrBadPointer) {
			t.Errorf("ContextOwner(%q) = %v", bad, err)
		}
	}
}

func TestResultObjects(t *testing.T) {
	objs := newObjects(t)
	ctx := context.Background()
	data := make([]byte, 3<<20+5)
	_, _ = rand.Read(data)

	// Hosts may not create the bucket: until a scheduler did, a put fails.
	if _, err := objs.PutResult(ctx, "acme", "job-1", 1, data); !errors.Is(err, bus.ErrNoResultBucket) {
		t.Fatalf("put without a bucket: %v", err)
	}
	if err := objs.CreateTenantBuckets(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := objs.CreateTenantBuckets(ctx, "acme"); err != nil {
		t.Fatalf("second create: %v", err)
	}
	ptr, err := objs.PutResult(ctx, "acme", "job-1", 1, data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "nats-os://WARD_RES_acme/job-1-1"; ptr != want || bus.ResultObjectPtr("acme", "job-1", 1) != want {
		t.Fatalf("pointer %q, want %q", ptr, want)
	}
	if owner, err := bus.ResultOwner(ptr); err != nil || owner != "acme" {
		t.Fatalf("owner %q, %v", owner, err)
	}
	digest := bus.ContentDigest(data)
	got, err := objs.GetResult(ctx, "acme", ptr, digest, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if _, err := objs.GetResult(ctx, "globex", ptr, digest, 1<<30); !errors.Is(err, bus.ErrBadPointer) {
		t.Fatalf("another tenant's read: %v", err)
	}
	// Rewritten by another host (any host may write the bucket): the
	// digest the job's host reported no longer matches.
	if _, err := objs.PutResult(ctx, "acme", "job-1", 1, []byte("forged")); err != nil {
		t.Fatal(err)
	}
	if _, err := objs.GetResult(ctx, "acme", ptr, digest, 1<<30); !errors.Is(err, bus.ErrResultDigest) {
		t.Fatalf("a rewritten result: %v", err)
	}
	if _, err := objs.PutResult(ctx, "acme", "job-1", 1, data); err != nil {
		t.Fatal(err)
	}
	if _, err := objs.GetResult(ctx, "acme", ptr, digest, 1<<20); !errors.Is(err, bus.ErrTooLarge) {
		t.Fatalf("capped get: %v", err)
	}
	ctxPtr, err := objs.PutContext(ctx, "acme", bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"redis://res:1", "nats-os://WARD_RES_/x", "nats-os://WARD_RES_acme", ctxPtr} {
		if _, err := bus.ResultOwner(bad); !errors.Is(err, bus.ErrBadPointer) {
			t.Errorf("ResultOwner(%q) = %v", bad, err)
		}
	}
	if !bus.IsObjectPtr(ptr) || bus.IsObjectPtr("redis://res:1") {
		t.Error("IsObjectPtr")
	}
}
