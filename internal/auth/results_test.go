package auth_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// objectsAs is the object stores of a connection with creds, its refusals
// collected in v.
func objectsAs(t *testing.T, s *natstest.Secure, creds string, v *violations) (*bus.Objects, *bus.Conn) {
	t.Helper()
	opts, err := auth.Options(creds)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		opts = append(opts, nats.ErrorHandler(v.handler))
	}
	c, err := bus.Connect(s.URL, "test", opts...)
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

// Large results: a scheduler creates a tenant's result bucket and writes
// the results hosts send it in parts; only that tenant (and admins) read
// it. A host may neither create a bucket nor write any object: not a
// tenant's result, context or description, nor the module registry's.
func TestResultBucketsAccess(t *testing.T) {
	s := natstest.StartSecure(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := bytes.Repeat([]byte("r"), 2<<20)

	var hv violations
	host, hc := objectsAs(t, s, s.Creds(auth.Host, "h1"), &hv)
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	if err := host.CreateTenantBuckets(short, "acme"); err == nil {
		t.Fatal("a host created a result bucket")
	}
	cancelShort()

	sched, _ := objectsAs(t, s, s.Creds(auth.Scheduler, "s1"), nil)
	if err := sched.CreateTenantBuckets(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	// What a scheduler stores for a host: the parts, then the description.
	parts := 0
	for off := 0; off < len(data); off += bus.ResultPartMax {
		if err := sched.PutResultPart(ctx, "acme", "j1", 1, parts, data[off:min(off+bus.ResultPartMax, len(data))]); err != nil {
			t.Fatalf("the scheduler's part %d: %v", parts, err)
		}
		parts++
	}
	ptr, err := sched.SealResult(ctx, "acme", "j1", 1, int64(len(data)), parts, bus.ContentDigest(data))
	if err != nil {
		t.Fatalf("the scheduler's seal: %v", err)
	}
	acme, _ := objectsAs(t, s, s.Creds(auth.Tenant, "acme"), nil)
	if got, err := acme.GetResult(ctx, "acme", ptr, bus.ContentDigest(data), 1<<30); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acme reads %d bytes, %v", len(got), err)
	}
	admin, _ := objectsAs(t, s, s.Creds(auth.Admin, "admin"), nil)
	if got, err := admin.Get(ctx, ptr, 1<<30); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("an admin reads %d bytes, %v", len(got), err)
	}
	// Another tenant: the server refuses the JetStream API requests, no
	// answer comes.
	globex, _ := objectsAs(t, s, s.Creds(auth.Tenant, "globex"), nil)
	short, cancelShort = context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if _, err := globex.Get(short, ptr, 1<<30); err == nil {
		t.Fatal("globex read acme's result")
	}
	// The host: no part, no description, no read, of acme's result; no
	// object of the module registry.
	short2, cancelShort2 := context.WithTimeout(ctx, time.Second)
	defer cancelShort2()
	if err := host.PutResultPart(short2, "acme", "j1", 1, 0, []byte("forged")); err == nil {
		t.Fatal("the host stored a part of acme's result")
	}
	for _, subj := range []string{"$O.WARD_RES_acme.C.x", "$O.WARD_RES_acme.M.ajEtMQ==", "$O.WARD_CTX_acme.C.x", "$O.ward_modules.C.x"} {
		_ = hc.NATS().Publish(subj, []byte("x"))
	}
	_ = hc.NATS().Flush()
	if got, err := acme.GetResult(ctx, "acme", ptr, bus.ContentDigest(data), 1<<30); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acme reads %d bytes after the host's writes, %v", len(got), err)
	}
	poll.Until(t, 5*time.Second, "the host's refused writes reported", func() bool {
		return hv.has(`Publish to "$O.ward_modules.C.x"`) && hv.has(`Publish to "$O.WARD_RES_acme.C.x"`) &&
			hv.has(`Publish to "$O.WARD_RES_acme.M.ajEtMQ=="`) && hv.has(`Publish to "$O.WARD_CTX_acme.C.x"`) &&
			hv.has(`Publish to "$JS.API.STREAM.`)
	})
}
