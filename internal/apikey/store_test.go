package apikey

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

var keyShape = regexp.MustCompile(`^ward_[0-9a-z]{8}_[0-9A-Za-z]{32}$`)

func jsAt(t *testing.T, url string) (jetstream.JetStream, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, nc
}

func open(t *testing.T, js jetstream.JetStream, opts ...Option) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func add(t *testing.T, s *Store, spec Spec) (string, Record) {
	t.Helper()
	key, rec, err := s.Add(context.Background(), spec)
	if err != nil {
		t.Fatalf("add %+v: %v", spec, err)
	}
	return key, rec
}

func TestKeyAddVerifyListRevoke(t *testing.T) {
	js, _ := jsAt(t, natstest.StartJetStream(t))
	s := open(t, js)
	ctx := context.Background()

	key, rec := add(t, s, Spec{Tenant: "acme", Name: "ci", Scopes: []Scope{ScopeSubmit, ScopeRead, ScopeSubmit}, CreatedBy: "admin:alice"})
	if !keyShape.MatchString(key) || !strings.HasPrefix(key, rec.Prefix()+"_") {
		t.Fatalf("key %q, record prefix %q", key, rec.Prefix())
	}
	if rec.Tenant != "acme" || rec.Name != "ci" || rec.CreatedBy != "admin:alice" || rec.CreatedAt.IsZero() ||
		strings.Join(scopeStrings(rec.Scopes), ",") != "read,submit" || rec.ReadOnly() || rec.Admin() || !rec.Can(ScopeSubmit) {
		t.Fatalf("record %+v", rec)
	}
	roKey, ro := add(t, s, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}})
	gKey, _ := add(t, s, Spec{Tenant: "globex", Scopes: []Scope{ScopeSubmit, ScopeRead}})
	adminKey, _ := add(t, s, Spec{Tenant: "ops", Scopes: []Scope{ScopeAdmin}})
	if !ro.ReadOnly() || ro.Can(ScopeSubmit) || !ro.Can(ScopeRead) || ro.CanTenant("globex") || !ro.CanTenant("acme") {
		t.Fatalf("read-only record %+v", ro)
	}

	for _, k := range []string{key, "Bearer " + key, "bearer " + key, roKey, gKey, adminKey} {
		got, err := s.Verify(ctx, k)
		if err != nil {
			t.Fatalf("verify %s: %v", k, err)
		}
		if k == adminKey && (!got.Admin() || !got.Can(ScopeSubmit) || got.ReadOnly() || !got.CanTenant("acme")) {
			t.Fatalf("admin record %+v", got)
		}
	}
	got, _ := s.Verify(ctx, key)
	got.Scopes[0] = ScopeAdmin // a caller's copy: the store's stays
	if again, _ := s.Verify(ctx, key); again.Admin() {
		t.Fatal("a caller changed the store's record")
	}

	// The right id with another secret, an unknown id, and malformed keys.
	wrong := rec.Prefix() + "_" + strings.Repeat("A", SecretLen)
	if _, err := s.Verify(ctx, wrong); !errors.Is(err, ErrUnknown) {
		t.Fatalf("the right id with a wrong secret: %v", err)
	}
	if _, err := s.Verify(ctx, "ward_zzzzzzzz_"+key[len(key)-SecretLen:]); !errors.Is(err, ErrUnknown) {
		t.Fatalf("an unknown id: %v", err)
	}
	for _, bad := range []string{"", "Bearer ", key[:len(key)-1], key + "x", strings.Replace(key, "ward_", "wxrd_", 1),
		strings.ToUpper(key[:13]) + key[13:], key[:13] + "-" + key[14:], key[:20] + "!" + key[21:], "ward_" + rec.ID} {
		if _, err := s.Verify(ctx, bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("verify %q: %v, want ErrMalformed", bad, err)
		}
	}

	// Lists: a tenant's, every tenant's; never a secret.
	acme, err := s.List(ctx, "acme")
	if err != nil || len(acme) != 2 || acme[0].ID != rec.ID || acme[1].ID != ro.ID {
		t.Fatalf("list acme: %+v, %v", acme, err)
	}
	all, err := s.List(ctx, "")
	if err != nil || len(all) != 4 {
		t.Fatalf("list all: %+v, %v", all, err)
	}
	if none, err := s.List(ctx, "nobody"); err != nil || len(none) != 0 {
		t.Fatalf("list nobody: %+v, %v", none, err)
	}
	if _, err := s.List(ctx, "no such tenant!"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("list of an invalid tenant name: %v", err)
	}

	// Revoke, by its prefix: the key is refused at once on this store.
	if err := s.Revoke(ctx, rec.Prefix(), "admin:bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, key); !errors.Is(err, ErrRevoked) {
		t.Fatalf("a revoked key: %v", err)
	}
	if _, err := s.Verify(ctx, wrong); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a revoked key's id with a wrong secret: %v, want ErrUnknown", err)
	}
	if err := s.Revoke(ctx, rec.ID, "admin:bob"); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked twice: %v", err)
	}
	if err := s.Revoke(ctx, "zzzzzzzz", "admin:bob"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("revoke an unknown id: %v", err)
	}
	if err := s.Revoke(ctx, "nope", "admin:bob"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("revoke a malformed id: %v", err)
	}
	r, err := s.Get(ctx, key) // a whole key names its id
	if err != nil || !r.Revoked() || r.RevokedBy != "admin:bob" {
		t.Fatalf("get the revoked key: %+v, %v", r, err)
	}
	if _, err := s.Verify(ctx, roKey); err != nil {
		t.Fatalf("another key of the tenant: %v", err)
	}

	// A second store on the same server reads what is there.
	s2 := open(t, js)
	if l, err := s2.List(ctx, ""); err != nil || len(l) != 4 {
		t.Fatalf("a second store lists %d, %v", len(l), err)
	}
	if _, err := s2.Verify(ctx, key); !errors.Is(err, ErrRevoked) {
		t.Fatalf("a second store: %v", err)
	}
}

func scopeStrings(sc []Scope) []string {
	out := make([]string, len(sc))
	for i, s := range sc {
		out[i] = string(s)
	}
	return out
}

func TestKeyExpiry(t *testing.T) {
	js, _ := jsAt(t, natstest.StartJetStream(t))
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := open(t, js, WithClock(clock))
	ctx := context.Background()
	key, rec := add(t, s, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}, ExpiresAt: now.Add(time.Hour)})
	if !rec.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("expires at %v", rec.ExpiresAt)
	}
	if _, err := s.Verify(ctx, key); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := s.Verify(ctx, key); !errors.Is(err, ErrExpired) {
		t.Fatalf("at its expiry: %v", err)
	}
	if _, _, err := s.Add(ctx, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}, ExpiresAt: clock()}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a key that expires now: %v", err)
	}
	// An expired key stays listed, as it was.
	if l, err := s.List(ctx, "acme"); err != nil || len(l) != 1 || !l[0].Expired(clock()) {
		t.Fatalf("list: %+v, %v", l, err)
	}
}

// A revocation on one replica takes effect on another as soon as its
// watch delivers it, and a key added on one is known to the other.
func TestKeyRevocationAcrossReplicas(t *testing.T) {
	url := natstest.StartJetStream(t)
	jsA, _ := jsAt(t, url)
	jsB, _ := jsAt(t, url)
	a, b := open(t, jsA), open(t, jsB)
	ctx := context.Background()

	key, rec := add(t, a, Spec{Tenant: "acme", Scopes: []Scope{ScopeSubmit}})
	poll.Until(t, 10*time.Second, "replica B knows the key added on A", func() bool {
		_, err := b.Verify(ctx, key)
		return err == nil
	})
	if err := a.Revoke(ctx, rec.ID, "admin"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "replica B refuses the key revoked on A", func() bool {
		_, err := b.Verify(ctx, key)
		return errors.Is(err, ErrRevoked)
	})
	// And the other way round, for a key B added.
	key2, rec2 := add(t, b, Spec{Tenant: "globex", Scopes: []Scope{ScopeRead}})
	poll.Until(t, 10*time.Second, "replica A knows B's key", func() bool {
		_, err := a.Verify(ctx, key2)
		return err == nil
	})
	if err := b.Revoke(ctx, rec2.Prefix(), "admin"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "replica A refuses the key revoked on B", func() bool {
		_, err := a.Verify(ctx, key2)
		return errors.Is(err, ErrRevoked)
	})
	// A key deleted from the bucket by hand is unknown everywhere.
	kv, err := jsA.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, rec2.ID); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "both replicas forget the purged key", func() bool {
		_, ea := a.Verify(ctx, key2)
		_, eb := b.Verify(ctx, key2)
		return errors.Is(ea, ErrUnknown) && errors.Is(eb, ErrUnknown)
	})
}

// The bucket holds the key's hash and never the key or its secret.
func TestKeyStoredAsHashOnly(t *testing.T) {
	js, _ := jsAt(t, natstest.StartJetStream(t))
	s := open(t, js)
	ctx := context.Background()
	key, rec := add(t, s, Spec{Tenant: "acme", Name: "ci", Scopes: []Scope{ScopeRead}})
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	secret := key[len(key)-SecretLen:]
	if bytes.Contains(e.Value(), []byte(secret)) || bytes.Contains(e.Value(), []byte(key)) {
		t.Fatalf("the stored record holds the secret: %s", e.Value())
	}
	sum := sha256.Sum256([]byte(key))
	if !bytes.Contains(e.Value(), []byte(`"hash":"sha256:`+hex.EncodeToString(sum[:])+`"`)) {
		t.Fatalf("the stored record lacks the key's hash: %s", e.Value())
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 1 {
		t.Fatalf("bucket history %d, %v", st.History(), err)
	}
	// Nor does any record a Store hands out carry it.
	l, _ := s.List(ctx, "")
	if strings.Contains(strings.ToLower(strings.Join([]string{l[0].ID, l[0].Name, l[0].Tenant, l[0].CreatedBy}, " ")), strings.ToLower(secret)) {
		t.Fatal("a listed record holds the secret")
	}
}

func TestKeySpecValidation(t *testing.T) {
	js, _ := jsAt(t, natstest.StartJetStream(t))
	s := open(t, js)
	ctx := context.Background()
	for _, spec := range []Spec{
		{Tenant: "", Scopes: []Scope{ScopeRead}},
		{Tenant: "no such tenant", Scopes: []Scope{ScopeRead}},
		{Tenant: "acme"},
		{Tenant: "acme", Scopes: []Scope{"write"}},
		{Tenant: "acme", Scopes: []Scope{ScopeRead}, Name: "a\nb"},
		{Tenant: "acme", Scopes: []Scope{ScopeRead}, Name: strings.Repeat("n", MaxNameLen+1)},
		{Tenant: "acme", Scopes: []Scope{ScopeRead}, ExpiresAt: time.Now().Add(-time.Minute)},
	} {
		if _, _, err := s.Add(ctx, spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("add %+v: %v, want ErrInvalid", spec, err)
		}
	}
	if l, _ := s.List(ctx, ""); len(l) != 0 {
		t.Fatalf("invalid specs were stored: %+v", l)
	}
}

func TestKeyParseScopes(t *testing.T) {
	for in, want := range map[string]string{"read": "read", "submit, read": "read,submit", "admin,read,admin": "read,admin", " submit ,": "submit"} {
		got, err := ParseScopes(in)
		if err != nil || strings.Join(scopeStrings(got), ",") != want {
			t.Errorf("ParseScopes(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", ",", "write", "read,Write"} {
		if _, err := ParseScopes(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseScopes(%q): %v, want ErrInvalid", in, err)
		}
	}
	for in, want := range map[string]string{"ab12cd34": "ab12cd34", "ward_ab12cd34": "ab12cd34",
		"ward_ab12cd34_" + strings.Repeat("x", SecretLen): "ab12cd34"} {
		if got, err := IDOf(in); err != nil || got != want {
			t.Errorf("IDOf(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "AB12CD34", "ward_ab12", "ab12cd345"} {
		if _, err := IDOf(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("IDOf(%q): %v, want ErrMalformed", in, err)
		}
	}
	seen := map[string]bool{}
	for range 100 {
		k, id := newKey()
		if !keyShape.MatchString(k) || seen[k] {
			t.Fatalf("newKey: %q (seen: %v)", k, seen[k])
		}
		if got, err := Parse(k); err != nil || got != id {
			t.Fatalf("Parse(%q) = %q, %v", k, got, err)
		}
		seen[k] = true
	}
}

// Close ends the watch and its goroutines; the store then answers
// ErrClosed. A store whose connection closes does too.
func TestKeyStoreClose(t *testing.T) {
	url := natstest.StartJetStream(t)
	js, nc := jsAt(t, url)
	// The connection's own goroutines (its request multiplexer), started
	// by a first store, are not the store's.
	first := open(t, js)
	key, _ := add(t, first, Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}})
	_ = first.Close()
	ignore := goleak.IgnoreCurrent()

	s := open(t, js)
	if _, err := s.Verify(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close() // twice is fine
	goleak.VerifyNone(t, ignore)
	if _, err := s.Verify(context.Background(), key); !errors.Is(err, ErrClosed) {
		t.Fatalf("verify after close: %v", err)
	}
	if _, _, err := s.Add(context.Background(), Spec{Tenant: "acme", Scopes: []Scope{ScopeRead}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("add after close: %v", err)
	}

	s2 := open(t, js)
	nc.Close()
	poll.Until(t, 10*time.Second, "a store whose connection closed refuses keys", func() bool {
		_, err := s2.Verify(context.Background(), key)
		return errors.Is(err, ErrClosed)
	})

	// Open gives up when its context ends.
	js2, _ := jsAt(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, js2); err == nil {
		t.Fatal("open with a cancelled context")
	}
}
