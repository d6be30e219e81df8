package apikey

import (
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/auth"
)

// fuzzStore is a Store in memory, as its watch fills it: a live key of
// tenant acme, a revoked one, an expired one, and one of a revoked
// tenant.
func fuzzStore(t testing.TB) (s *Store, live string, rec Record, others []string) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s = &Store{now: func() time.Time { return now }, keys: map[string]*entry{}, tenants: map[string]*tenantEntry{}}
	put := func(r Record) string {
		key, id := newKey()
		r.ID, r.CreatedAt = id, now.Add(-time.Hour)
		v, err := encode(r, sha256.Sum256([]byte(key)))
		if err != nil {
			t.Fatal(err)
		}
		s.apply(id, jetstream.KeyValuePut, v, 1)
		if s.keys[id].gone {
			t.Fatalf("the store did not read its own record %s", v)
		}
		return key
	}
	rec = Record{Tenant: "acme", Name: "ci", Scopes: []Scope{ScopeRead, ScopeSubmit}, CreatedBy: "admin:alice", ExpiresAt: now.Add(time.Hour)}
	live = put(rec)
	rec.ID, rec.CreatedAt = s.keysByKey(live)
	others = []string{
		put(Record{Tenant: "acme", Scopes: []Scope{ScopeAdmin}, RevokedAt: now.Add(-time.Minute), RevokedBy: "admin:bob"}),
		put(Record{Tenant: "acme", Scopes: []Scope{ScopeRead}, ExpiresAt: now}),
		put(Record{Tenant: "gone", Scopes: []Scope{ScopeRead}}),
	}
	s.applyTenant("gone", jetstream.KeyValuePut, []byte(`{"tenant":"gone","revoked_at":"2026-01-01T00:00:00Z"}`), 2)
	return s, live, rec, others
}

// keysByKey is the id and creation time the store holds for key.
func (s *Store) keysByKey(key string) (string, time.Time) {
	id, _ := Parse(key)
	return id, s.keys[id].rec.CreatedAt
}

// FuzzBearer feeds Verify arbitrary bearer tokens (what a request's
// Authorization header carries). It lets through only the one live key,
// bare or after "Bearer " (any case), with its record; it refuses
// everything else with one of its documented errors, and a key whose id
// and secret are the shape of one (Parse) only: ParseKey and IDOf agree.
func FuzzBearer(f *testing.F) {
	s, live, rec, others := fuzzStore(f)
	for _, k := range append([]string{live}, others...) {
		f.Add(k)
		f.Add("Bearer " + k)
		f.Add("bEARER " + k)
		f.Add("Bearer  " + k)
		f.Add(strings.ToUpper(k))
		f.Add(k[:len(k)-1] + "A")
		f.Add(k + " ")
		f.Add(Prefix + k[len(Prefix):len(Prefix)+IDLen])
	}
	f.Add("")
	f.Add("Bearer ")
	f.Add("ward__")
	f.Fuzz(func(t *testing.T, bearer string) {
		got, err := s.Verify(context.Background(), bearer)
		key := bearer
		if len(key) > 7 && strings.EqualFold(key[:7], "Bearer ") {
			key = key[7:]
		}
		if err == nil {
			if key != live || !reflect.DeepEqual(got, rec) {
				t.Fatalf("%q let through as %+v", bearer, got)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrRevoked) && !errors.Is(err, ErrExpired) {
			t.Fatalf("%q: an undocumented error %v", bearer, err)
		}
		id, perr := Parse(key)
		if (perr != nil) != errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: Parse says %v, Verify %v", key, perr, err)
		}
		if perr == nil {
			if len(key) != KeyLen || !validID(id) || !strings.HasPrefix(key, Prefix+id+"_") {
				t.Fatalf("%q parsed as id %q", key, id)
			}
			if byID, err := IDOf(key); err != nil || byID != id {
				t.Fatalf("IDOf(%q) = %q, %v; Parse says %q", key, byID, err, id)
			}
		}
		if id, err := IDOf(bearer); err == nil {
			if !validID(id) || (bearer != id && bearer != Prefix+id && !strings.HasPrefix(bearer, Prefix+id+"_")) {
				t.Fatalf("IDOf(%q) = %q", bearer, id)
			}
		}
	})
}

// FuzzKeyRecord feeds the decoder of the bucket's records arbitrary
// values: a record it reads is its key's, with a whole hash, and writes
// back to the same record.
func FuzzKeyRecord(f *testing.F) {
	key, id := newKey()
	v, _ := encode(Record{ID: id, Tenant: "acme", Name: "ci", Scopes: []Scope{ScopeRead}, CreatedAt: time.Unix(1, 0).UTC()}, sha256.Sum256([]byte(key)))
	f.Add(id, v)
	f.Add(id, []byte(`{"id":"`+id+`","tenant":"acme","scopes":["admin","root"],"created_at":"2026-01-02T03:04:05+01:00","expires_at":"0001-01-01T00:00:00Z","hash":"sha256:`+strings.Repeat("ab", 32)+`"}`))
	f.Add(id, []byte(`{"id":"`+id+`","hash":"sha256:`+strings.Repeat("ab", 31)+`"}`))
	f.Add("other", v)
	f.Fuzz(func(t *testing.T, id string, value []byte) {
		e, err := decode(id, value)
		if err != nil {
			return
		}
		if e.rec.ID != id {
			t.Fatalf("a record of key %q read as key %q's", e.rec.ID, id)
		}
		again, err := encode(e.rec, e.hash)
		if err != nil {
			t.Fatalf("a record read does not write back: %v", err)
		}
		e2, err := decode(id, again)
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("a record changes through the bucket: %+v, then %+v (%v)", e, e2, err)
		}
	})
}

// FuzzSpec feeds the checks of a key to add (ward auth key add, its
// --scopes) arbitrary input: a spec accepted has a valid tenant, a name
// and creator of printable text within MaxNameLen, one or more scopes in
// canonical order, and an expiry in the future or none; its scopes,
// written out, parse back the same.
func FuzzSpec(f *testing.F) {
	f.Add("acme", "ci key", "admin:alice", "submit, read", int64(3600))
	f.Add("acme", "", "", "admin,admin", int64(0))
	f.Add("Acme", "\x00", "\u202e", "root", int64(-1))
	f.Add("a", strings.Repeat("é", 65), "x", ",,read,", int64(1))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, tenant, name, by, scopes string, expires int64) {
		sc, err := ParseScopes(scopes)
		if err == nil {
			if len(sc) == 0 || !slices.IsSortedFunc(sc, func(a, b Scope) int { return slices.Index(allScopes, a) - slices.Index(allScopes, b) }) || len(slices.Compact(slices.Clone(sc))) != len(sc) {
				t.Fatalf("%q parsed as %v", scopes, sc)
			}
			var parts []string
			for _, s := range sc {
				parts = append(parts, string(s))
			}
			if again, err := ParseScopes(strings.Join(parts, ",")); err != nil || !slices.Equal(again, sc) {
				t.Fatalf("%v reads back as %v, %v", sc, again, err)
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Fatalf("an undocumented error %v", err)
		}
		spec := Spec{Tenant: tenant, Name: name, CreatedBy: by, Scopes: sc}
		if expires != 0 {
			spec.ExpiresAt = now.Add(time.Duration(expires) * time.Second)
		}
		got, err := spec.check(now)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("an undocumented error %v", err)
			}
			return
		}
		if auth.ValidName("tenant", got.Tenant) != nil || !printable(got.Name) || !printable(got.CreatedBy) ||
			(!got.ExpiresAt.IsZero() && !got.ExpiresAt.After(now)) || !slices.Equal(got.Scopes, sc) {
			t.Fatalf("accepted %+v", got)
		}
	})
}

func printable(s string) bool {
	return len(s) <= MaxNameLen && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}
