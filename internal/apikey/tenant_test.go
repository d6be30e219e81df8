package apikey

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// Revoking a tenant revokes every key it holds, on every replica, with
// who and why; a key added for it afterwards is refused, and one that
// slipped into the bucket past the mark is refused by Verify all the
// same. Reinstating it takes new keys again, never the old ones.
func TestRevokeTenant(t *testing.T) {
	url := natstest.StartJetStream(t)
	jsA, _ := jsAt(t, url)
	jsB, _ := jsAt(t, url)
	a, b := open(t, jsA), open(t, jsB)
	ctx := context.Background()

	acme1, rec1 := add(t, a, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead, ScopeSubmit}})
	acme2, _ := add(t, a, Spec{Tenant: "acme", Scopes: []Scope{ScopeAdmin}})
	other, _ := add(t, a, Spec{Tenant: "other", Scopes: []Scope{ScopeRead}})
	poll.Until(t, 10*time.Second, "replica B knows A's keys", func() bool {
		_, e1 := b.Verify(ctx, acme1)
		_, e2 := b.Verify(ctx, acme2)
		_, e3 := b.Verify(ctx, other)
		return e1 == nil && e2 == nil && e3 == nil
	})

	tr, revoked, err := a.RevokeTenant(ctx, "acme", "admin:alice", "unpaid bill")
	if err != nil || len(revoked) != 2 || tr.Tenant != "acme" || tr.RevokedBy != "admin:alice" || tr.Reason != "unpaid bill" || !tr.Revoked() {
		t.Fatalf("RevokeTenant: %+v, %d revoked, %v", tr, len(revoked), err)
	}
	// On the replica that wrote it, at once; on the other, as its watch
	// delivers it.
	for _, k := range []string{acme1, acme2} {
		if _, err := a.Verify(ctx, k); !errors.Is(err, ErrRevoked) {
			t.Fatalf("A verified a key of the revoked tenant: %v", err)
		}
	}
	poll.Until(t, 10*time.Second, "replica B refuses the revoked tenant's keys", func() bool {
		_, e1 := b.Verify(ctx, acme1)
		_, e2 := b.Verify(ctx, acme2)
		_, marked := b.TenantRevoked("acme")
		return errors.Is(e1, ErrRevoked) && errors.Is(e2, ErrRevoked) && marked
	})
	for _, s := range []*Store{a, b} {
		if r, err := s.Verify(ctx, other); err != nil || r.Tenant != "other" {
			t.Fatalf("another tenant's key: %+v, %v", r, err)
		}
	}
	// The mark comes first, then each key's own revocation: B's copy of
	// the key's record follows as its watch delivers it.
	var got Record
	poll.Until(t, 10*time.Second, "replica B's record of the revoked key", func() bool {
		got, err = b.Get(ctx, rec1.ID)
		return err == nil && got.Revoked()
	})
	if got.RevokedBy != "admin:alice" || got.RevokedReason != "tenant acme revoked: unpaid bill" {
		t.Fatalf("the revoked key's record: %+v", got)
	}
	// A key for the revoked tenant is refused, on either replica.
	for _, s := range []*Store{a, b} {
		if _, _, err := s.Add(ctx, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}}); !errors.Is(err, ErrTenantRevoked) {
			t.Fatalf("a key added for the revoked tenant: %v", err)
		}
	}
	if _, _, err := a.Add(ctx, Spec{Tenant: "other", Scopes: []Scope{ScopeRead}}); err != nil {
		t.Fatalf("a key for another tenant: %v", err)
	}

	// A key written past the mark (a replica that had not heard of it
	// yet): Verify refuses it for its tenant.
	kv, err := jsA.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	raced, id := newKey()
	val, err := encode(Record{ID: id, Tenant: "acme", Scopes: []Scope{ScopeRead}, CreatedAt: time.Now().UTC()}, sha256.Sum256([]byte(raced)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, id, val); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "both replicas hold the raced key, refused", func() bool {
		_, ea := a.Verify(ctx, raced)
		_, eb := b.Verify(ctx, raced)
		return errors.Is(ea, ErrTenantRevoked) && errors.Is(eb, ErrTenantRevoked) && errors.Is(ea, ErrRevoked)
	})
	// Revoked again: the first mark stands, and the key it missed is
	// revoked now.
	tr2, revoked, err := b.RevokeTenant(ctx, "acme", "admin:bob", "again")
	if err != nil || len(revoked) != 1 || revoked[0].ID != id || !tr2.RevokedAt.Equal(tr.RevokedAt) || tr2.RevokedBy != "admin:alice" {
		t.Fatalf("RevokeTenant again: %+v, %+v, %v", tr2, revoked, err)
	}

	// Reinstated: new keys again; the old ones stay revoked.
	ok, _, err := a.ReinstateTenant(ctx, "acme", "admin:alice")
	if err != nil || !ok {
		t.Fatalf("ReinstateTenant: %v, %v", ok, err)
	}
	if _, marked := a.TenantRevoked("acme"); marked {
		t.Fatal("the mark stands after ReinstateTenant")
	}
	fresh, _ := add(t, a, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}})
	poll.Until(t, 10*time.Second, "replica B takes the new key and refuses the old", func() bool {
		_, ef := b.Verify(ctx, fresh)
		_, eo := b.Verify(ctx, acme1)
		_, er := b.Verify(ctx, raced)
		return ef == nil && errors.Is(eo, ErrRevoked) && errors.Is(er, ErrRevoked)
	})
	if ok, _, err := a.ReinstateTenant(ctx, "acme", "admin:alice"); err != nil || ok {
		t.Fatalf("ReinstateTenant of a tenant not revoked: %v, %v", ok, err)
	}
	// The marks are no keys.
	recs, err := b.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Tenant == "" || len(r.ID) != IDLen {
			t.Fatalf("List holds a tenant's mark: %+v", r)
		}
	}

	for _, bad := range []struct{ tenant, by, reason string }{
		{"not a tenant", "admin", ""},
		{"acme", "admin\n", ""},
		{"acme", "admin", string(make([]byte, MaxReasonLen+1))},
	} {
		if _, _, err := a.RevokeTenant(ctx, bad.tenant, bad.by, bad.reason); !errors.Is(err, ErrInvalid) {
			t.Errorf("RevokeTenant(%q, %q, %d bytes): %v", bad.tenant, bad.by, len(bad.reason), err)
		}
	}
}
