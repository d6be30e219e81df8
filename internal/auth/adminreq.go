package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// The headers of a signed admin request (RequestSigner, AdminTrust). NATS
// does not tell a subscriber who published a message: an admin's request
// carries its user JWT, and a signature with the JWT's key over what it
// asks, so that the part that carries the request out knows, and audits,
// which admin credential asked.
const (
	HeaderAdminJWT  = "Ward-Admin-Jwt"
	HeaderAdminTime = "Ward-Admin-Time" // Unix milliseconds, signed
	HeaderAdminSig  = "Ward-Admin-Sig"  // base64url (no padding) of the nkey signature
)

// AdminRequestSkew is how far a signed request's time may be from the
// verifier's clock, either way.
const AdminRequestSkew = 2 * time.Minute

// ErrNotIdentified is wrapped by AdminTrust.Verify's refusals.
var ErrNotIdentified = errors.New("admin request not identified")

// adminSigned is the text an admin request's signature covers: what it
// asks (subject and a digest of the body) and when.
func adminSigned(subject string, data []byte, ms int64) []byte {
	sum := sha256.Sum256(data)
	return []byte("ward-admin-request\n" + subject + "\n" + strconv.FormatInt(ms, 10) + "\n" + hex.EncodeToString(sum[:]))
}

// RequestSigner signs admin requests with an admin's credential: its user
// JWT and the nkey seed of its .creds file.
type RequestSigner struct {
	jwt string
	kp  nkeys.KeyPair
}

// NewRequestSigner reads an admin's .creds file.
func NewRequestSigner(credsFile string) (*RequestSigner, error) {
	raw, err := os.ReadFile(credsFile)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return newRequestSigner(credsFile, raw)
}

// newRequestSigner is NewRequestSigner of the contents raw of file name.
// The seed must be the JWT's key: signatures with another would be
// refused by every verifier, each request with a misleading error.
func newRequestSigner(name string, raw []byte) (*RequestSigner, error) {
	id, tok, err := readIdentity(name, raw)
	if err != nil {
		return nil, err
	}
	if id.Role != Admin {
		return nil, fmt.Errorf("auth: %s is a %s credential, not an admin's", name, id.Role)
	}
	kp, err := jwt.ParseDecoratedUserNKey(raw)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", name, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", name, err)
	}
	if pub, err := kp.PublicKey(); err != nil || pub != uc.Subject {
		return nil, fmt.Errorf("auth: %s: its seed is not the key of its JWT (%s): the file was put together from two credentials", name, uc.Subject)
	}
	return &RequestSigner{jwt: tok, kp: kp}, nil
}

// Sign returns the headers that identify a request of data on subject,
// made at now.
func (s *RequestSigner) Sign(subject string, data []byte, now time.Time) (nats.Header, error) {
	ms := now.UnixMilli()
	sig, err := s.kp.Sign(adminSigned(subject, data, ms))
	if err != nil {
		return nil, fmt.Errorf("auth: sign admin request: %w", err)
	}
	h := nats.Header{}
	h.Set(HeaderAdminJWT, s.jwt)
	h.Set(HeaderAdminTime, strconv.FormatInt(ms, 10))
	h.Set(HeaderAdminSig, base64.RawURLEncoding.EncodeToString(sig))
	return h, nil
}

// AdminTrust identifies the admin credential that signed a request: a
// user JWT issued by the same account signing key as the verifier's own
// credential, for the Admin role, unexpired, whose key signed the
// request's subject, body and time, that time within AdminRequestSkew.
// Verified JWTs are remembered. What it cannot see is revocation: a
// revoked credential's holder can no longer connect, but one who still
// holds another admin credential could send a request signed with the
// revoked one's key (as it could act with its own).
type AdminTrust struct {
	account string
	issuers []string
	cache   sync.Map // jwt → adminKey
}

type adminKey struct {
	Identity
	key     nkeys.KeyPair // the public key the JWT names
	expires int64
}

// NewAdminTrust trusts admin credentials issued by the issuer of own, the
// verifying part's own user JWT.
func NewAdminTrust(own string) (*AdminTrust, error) {
	id, err := ParseIdentity(own)
	if err != nil {
		return nil, err
	}
	return &AdminTrust{account: id.Account, issuers: []string{id.Issuer, id.Account}}, nil
}

// Actor is how an audit record names the credential: "admin:<name>".
func (id Identity) Actor() string { return string(id.Role) + ":" + id.Name }

// Verify returns the identity of the admin credential that signed the
// request of data on subject with headers h.
func (a *AdminTrust) Verify(subject string, h nats.Header, data []byte, now time.Time) (Identity, error) {
	tok, ts, sig64 := h.Get(HeaderAdminJWT), h.Get(HeaderAdminTime), h.Get(HeaderAdminSig)
	if tok == "" || ts == "" || sig64 == "" {
		return Identity{}, fmt.Errorf("%w: it carries no signed credential (%s, %s, %s); a client of this version signs admin requests with its admin .creds", ErrNotIdentified, HeaderAdminJWT, HeaderAdminTime, HeaderAdminSig)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: bad %s %q", ErrNotIdentified, HeaderAdminTime, ts)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > AdminRequestSkew || d < -AdminRequestSkew {
		return Identity{}, fmt.Errorf("%w: signed at %s, %s from this part's clock (at most %s)", ErrNotIdentified,
			time.UnixMilli(ms).UTC().Format(time.RFC3339), d.Round(time.Second), AdminRequestSkew)
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: bad %s", ErrNotIdentified, HeaderAdminSig)
	}
	k, err := a.key(tok)
	if err != nil {
		return Identity{}, err
	}
	if k.expires != 0 && now.Unix() >= k.expires {
		return Identity{}, fmt.Errorf("%w: the credential %s expired", ErrNotIdentified, k.Actor())
	}
	if err := k.key.Verify(adminSigned(subject, data, ms), sig); err != nil {
		return Identity{}, fmt.Errorf("%w: the signature is not %s's key's over this request", ErrNotIdentified, k.Actor())
	}
	return k.Identity, nil
}

// key checks an admin JWT, once.
func (a *AdminTrust) key(tok string) (adminKey, error) {
	if v, ok := a.cache.Load(tok); ok {
		return v.(adminKey), nil
	}
	uc, err := jwt.DecodeUserClaims(tok) // checks the JWT's signature
	if err != nil {
		return adminKey{}, fmt.Errorf("%w: %v", ErrNotIdentified, err)
	}
	id, err := identityOf(uc)
	if err != nil {
		return adminKey{}, fmt.Errorf("%w: %v", ErrNotIdentified, err)
	}
	switch {
	case id.Account != a.account || !slices.Contains(a.issuers, id.Issuer):
		return adminKey{}, fmt.Errorf("%w: the credential was not issued by this system's account", ErrNotIdentified)
	case id.Role != Admin:
		return adminKey{}, fmt.Errorf("%w: the credential is for role %s, not admin", ErrNotIdentified, id.Role)
	}
	kp, err := nkeys.FromPublicKey(uc.Subject)
	if err != nil {
		return adminKey{}, fmt.Errorf("%w: %v", ErrNotIdentified, err)
	}
	k := adminKey{Identity: id, key: kp, expires: uc.Expires}
	a.cache.Store(tok, k)
	return k, nil
}
