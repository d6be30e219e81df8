// Package apikey is the HTTP gateway's API keys: one per caller, for a
// tenant, with scopes, shown once and stored only as a hash, in a
// JetStream KV bucket every gateway replica watches (README.md).
//
// A key is
//
//	ward_<id>_<secret>
//
// where id is 8 characters of [0-9a-z], the public part a human
// recognises and the bucket's key, and secret is 32 characters of
// [0-9A-Za-z] from crypto/rand (about 190 bits). The bucket holds the
// SHA-256 of the whole key, never the key.
package apikey

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ward-run/ward/internal/auth"
)

const (
	// Bucket is the JetStream KV bucket of the keys, created on demand
	// (history 1). Only admins may read or write it (auth/perms.go).
	Bucket = auth.APIKeyBucket
	// Prefix starts every key: ward_<id>_<secret>.
	Prefix = "ward_"
	// IDLen is the length of a key's public id, SecretLen of its secret.
	IDLen     = 8
	SecretLen = 32
	// KeyLen is the length of a whole key.
	KeyLen = len(Prefix) + IDLen + 1 + SecretLen
	// MaxNameLen bounds a key's name and its creator's, in bytes.
	MaxNameLen = 128
	// MaxReasonLen bounds why a key or a tenant was revoked, in bytes.
	MaxReasonLen = 256
)

const (
	idAlphabet     = "0123456789abcdefghijklmnopqrstuvwxyz"
	secretAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Errors. Verify returns ErrMalformed, ErrUnknown, ErrRevoked or
// ErrExpired (wrapped, with errors.Is); a key whose id is known but whose
// secret does not match is ErrUnknown, as an unknown id is.
var (
	// ErrMalformed: not the shape of a key (or of an id).
	ErrMalformed = errors.New("apikey: malformed key")
	// ErrUnknown: no key has that id, or its secret does not match.
	ErrUnknown = errors.New("apikey: unknown key")
	// ErrRevoked: the key was revoked.
	ErrRevoked = errors.New("apikey: key revoked")
	// ErrExpired: the key is past its expiry.
	ErrExpired = errors.New("apikey: key expired")
	// ErrTenantRevoked: the key's tenant was revoked (RevokeTenant): its
	// keys are refused, Verify's error wrapping ErrRevoked too, and Add
	// refuses new keys for it until ReinstateTenant.
	ErrTenantRevoked = errors.New("apikey: tenant revoked")
	// ErrInvalid: a Spec, a scope or a tenant name that is not valid.
	ErrInvalid = errors.New("apikey: invalid")
	// ErrClosed: the Store was closed, or its watch of the bucket ended
	// (its connection closed): it answers nothing rather than stale keys.
	ErrClosed = errors.New("apikey: store closed")
)

// Scope is what a key may do.
type Scope string

// Scopes. An admin key may do everything, for every tenant.
const (
	// ScopeRead: get and list the tenant's jobs and runs, read results.
	ScopeRead Scope = "read"
	// ScopeSubmit: submit, rerun and cancel the tenant's jobs and runs.
	ScopeSubmit Scope = "submit"
	// ScopeAdmin: everything, for every tenant.
	ScopeAdmin Scope = "admin"
)

// allScopes is every scope, in the order records list them.
var allScopes = []Scope{ScopeRead, ScopeSubmit, ScopeAdmin}

// AllScopes returns every valid scope.
func AllScopes() []Scope { return slices.Clone(allScopes) }

// ParseScopes parses a comma-separated list of scopes ("submit,read"):
// at least one, each one of AllScopes; spaces around them are ignored.
// The result is in canonical order, without duplicates.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, Scope(f))
		}
	}
	return CheckScopes(out)
}

// CheckScopes checks that scopes is not empty and holds only valid
// scopes, and returns them in canonical order (read, submit, admin)
// without duplicates.
func CheckScopes(scopes []Scope) ([]Scope, error) {
	if len(scopes) == 0 {
		return nil, fmt.Errorf("%w: no scope: want one or more of %s", ErrInvalid, scopeList())
	}
	for _, sc := range scopes {
		if !slices.Contains(allScopes, sc) {
			return nil, fmt.Errorf("%w: scope %q: want one or more of %s", ErrInvalid, sc, scopeList())
		}
	}
	var out []Scope
	for _, sc := range allScopes {
		if slices.Contains(scopes, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

func scopeList() string {
	s := make([]string, len(allScopes))
	for i, sc := range allScopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}

// Record is what the store knows of a key: never its secret nor its hash.
type Record struct {
	// ID is the key's public id: the key is ward_<ID>_<secret>.
	ID string `json:"id"`
	// Name says what the key is for; optional.
	Name   string `json:"name,omitempty"`
	Tenant string `json:"tenant"`
	// Scopes in canonical order (CheckScopes).
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"`
	// ExpiresAt is zero for a key that does not expire.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RevokedAt is zero for a key not revoked.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
	// RevokedReason says why, when the revoker said: "tenant acme
	// revoked: ..." for a key revoked with its tenant (RevokeTenant).
	RevokedReason string `json:"revoked_reason,omitempty"`
}

// Prefix is the recognisable start of the key, ward_<id>, as lists show
// it.
func (r Record) Prefix() string { return Prefix + r.ID }

// Admin reports whether the key has the admin scope: every scope, for
// every tenant.
func (r Record) Admin() bool { return slices.Contains(r.Scopes, ScopeAdmin) }

// Can reports whether the key has scope (an admin key has every scope).
func (r Record) Can(scope Scope) bool { return r.Admin() || slices.Contains(r.Scopes, scope) }

// ReadOnly reports whether the key may change nothing: neither the submit
// nor the admin scope.
func (r Record) ReadOnly() bool { return !r.Can(ScopeSubmit) }

// CanTenant reports whether the key may act for tenant: its own, or any
// for an admin key.
func (r Record) CanTenant(tenant string) bool { return r.Admin() || tenant == r.Tenant }

// Revoked reports whether the key was revoked.
func (r Record) Revoked() bool { return !r.RevokedAt.IsZero() }

// Expired reports whether the key is past its expiry at now.
func (r Record) Expired(now time.Time) bool { return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) }

func (r Record) clone() Record {
	r.Scopes = slices.Clone(r.Scopes)
	return r
}

// Spec is a key to add.
type Spec struct {
	// Tenant the key acts for (auth.ValidName); required, admin keys too.
	Tenant string
	// Name says what the key is for; optional, printable, MaxNameLen bytes.
	Name string
	// Scopes: one or more (CheckScopes).
	Scopes []Scope
	// ExpiresAt, when not zero, must be in the future.
	ExpiresAt time.Time
	// CreatedBy names who added it (the CLI: the credential, "admin:alice").
	CreatedBy string
}

// check validates s at now and returns it with canonical scopes.
func (s Spec) check(now time.Time) (Spec, error) {
	if err := auth.ValidName("tenant", s.Tenant); err != nil {
		return s, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, f := range []struct{ what, v string }{{"name", s.Name}, {"created by", s.CreatedBy}} {
		if err := checkText(f.what, f.v); err != nil {
			return s, err
		}
	}
	sc, err := CheckScopes(s.Scopes)
	if err != nil {
		return s, err
	}
	s.Scopes = sc
	if !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(now) {
		return s, fmt.Errorf("%w: expiry %s is not in the future", ErrInvalid, s.ExpiresAt.Format(time.RFC3339))
	}
	return s, nil
}

func checkText(what, v string) error { return checkTextLen(what, v, MaxNameLen) }

func checkTextLen(what, v string, max int) error {
	if len(v) > max {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, what, max)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) {
		return fmt.Errorf("%w: %s %q holds a control or invalid character", ErrInvalid, what, v)
	}
	return nil
}

// newKey returns a fresh key and its id.
func newKey() (key, id string) {
	id = random(idAlphabet, IDLen)
	return Prefix + id + "_" + random(secretAlphabet, SecretLen), id
}

// random returns n characters of alphabet, uniformly, from crypto/rand.
func random(alphabet string, n int) string {
	limit := 256 - 256%len(alphabet) // bytes at or above it would bias
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		_, _ = rand.Read(buf) // never fails (crypto/rand)
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// Parse splits a key into its id, checking its shape only: ErrMalformed
// when it is not ward_<8 of [0-9a-z]>_<32 of [0-9A-Za-z]>.
func Parse(key string) (id string, err error) {
	if len(key) != KeyLen || !strings.HasPrefix(key, Prefix) {
		return "", ErrMalformed
	}
	id, secret, ok := strings.Cut(key[len(Prefix):], "_")
	if !ok || !validID(id) || len(secret) != SecretLen || !only(secret, secretAlphabet) {
		return "", ErrMalformed
	}
	return id, nil
}

// IDOf is the id of s, which may be an id, a prefix (ward_<id>) or a whole
// key: what `ward auth key revoke` takes. ErrMalformed otherwise.
func IDOf(s string) (string, error) {
	if validID(s) {
		return s, nil
	}
	if rest, ok := strings.CutPrefix(s, Prefix); ok && validID(rest) {
		return rest, nil
	}
	return Parse(s)
}

func validID(id string) bool { return len(id) == IDLen && only(id, idAlphabet) }

func only(s, alphabet string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}
