package bus_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
)

// newObjects connects to a fresh JetStream server and returns its object
// stores.
func newObjects(t *testing.T) *bus.Objects {
	objs, _ := newObjectsConn(t)
	return objs
}

// newObjectsConn is newObjects, with its connection.
func newObjectsConn(t *testing.T) (*bus.Objects, *bus.Conn) {
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
	return objs, c
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

// putParts stores data as the result of job-<n> attempt 1 of acme, in
// parts of bus.ResultPartMax, sending each part twice (a host's resend
// after a lost answer), and seals it as digest says.
func putParts(t *testing.T, objs *bus.Objects, job string, data []byte, digest string) string {
	t.Helper()
	ctx := context.Background()
	parts := 0
	for off := 0; off < len(data); off += bus.ResultPartMax {
		part := data[off:min(off+bus.ResultPartMax, len(data))]
		for range 2 {
			if err := objs.PutResultPart(ctx, "acme", job, 1, parts, part); err != nil {
				t.Fatal(err)
			}
		}
		parts++
	}
	ptr, err := objs.SealResult(ctx, "acme", job, 1, int64(len(data)), parts, digest)
	if err != nil {
		t.Fatal(err)
	}
	return ptr
}

func TestResultObjects(t *testing.T) {
	objs, conn := newObjectsConn(t)
	ctx := context.Background()
	data := make([]byte, 3<<20+5)
	_, _ = rand.Read(data)

	// No part is stored until a scheduler created the bucket.
	if err := objs.PutResultPart(ctx, "acme", "job-1", 1, 0, data[:10]); !errors.Is(err, bus.ErrNoResultBucket) {
		t.Fatalf("put without a bucket: %v", err)
	}
	if err := objs.CreateTenantBuckets(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := objs.CreateTenantBuckets(ctx, "acme"); err != nil {
		t.Fatalf("second create: %v", err)
	}
	digest := bus.ContentDigest(data)
	ptr := putParts(t, objs, "job-1", data, digest)
	if want := "nats-os://WARD_RES_acme/job-1-1"; ptr != want || bus.ResultObjectPtr("acme", "job-1", 1) != want {
		t.Fatalf("pointer %q, want %q", ptr, want)
	}
	if owner, err := bus.ResultOwner(ptr); err != nil || owner != "acme" {
		t.Fatalf("owner %q, %v", owner, err)
	}
	got, err := objs.GetResult(ctx, "acme", ptr, digest, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// The parts are the Object Store's own layout: its own reader reads
	// them and checks the digest the description gives.
	js, err := jetstream.New(conn.NATS())
	if err != nil {
		t.Fatal(err)
	}
	store, err := js.ObjectStore(ctx, bus.ResultBucketOf("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if lib, err := store.GetBytes(ctx, "job-1-1"); err != nil || !bytes.Equal(lib, data) {
		t.Fatalf("the Object Store's own read: %d bytes, %v", len(lib), err)
	}
	if _, err := objs.GetResult(ctx, "globex", ptr, digest, 1<<30); !errors.Is(err, bus.ErrBadPointer) {
		t.Fatalf("another tenant's read: %v", err)
	}
	if _, err := objs.GetResult(ctx, "acme", ptr, digest, 1<<20); !errors.Is(err, bus.ErrTooLarge) {
		t.Fatalf("capped get: %v", err)
	}
	// A host that claims a digest its bytes do not have: the description
	// says what it claimed, and the bytes are refused.
	lie := bus.ContentDigest([]byte("something else"))
	ptr2 := putParts(t, objs, "job-2", data[:bus.ResultPartMax+1], lie)
	if _, err := objs.GetResult(ctx, "acme", ptr2, lie, 1<<30); err == nil {
		t.Fatal("a result whose bytes are not its digest was read")
	}
	// Another attempt's parts go to another object.
	if err := objs.PutResultPart(ctx, "acme", "job-1", 2, 0, []byte("attempt 2")); err != nil {
		t.Fatal(err)
	}
	if got, err := objs.GetResult(ctx, "acme", ptr, digest, 1<<30); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("attempt 1's result after attempt 2's part: %d bytes, %v", len(got), err)
	}
	for _, bad := range []struct {
		size   int64
		parts  int
		digest string
	}{{10, 1, "sha256:00"}, {10, 1, "md5:" + strings.Repeat("0", 64)}, {bus.ResultMax + 1, 1, digest}, {10, bus.ResultPartsMax + 1, digest}} {
		if _, err := objs.SealResult(ctx, "acme", "job-3", 1, bad.size, bad.parts, bad.digest); err == nil {
			t.Errorf("sealed %d bytes in %d parts, digest %q", bad.size, bad.parts, bad.digest)
		}
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
