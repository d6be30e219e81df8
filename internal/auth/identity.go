package auth

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// Identity is what a credential says of its holder.
type Identity struct {
	Role Role
	// Name is the tenant for Tenant, the host id for Host.
	Name string
	// Pools a host may serve; empty: any.
	Pools []string
	// GPU: a host may claim GPU capabilities.
	GPU bool
	// Account is the account the credential belongs to; Issuer the key that
	// signed it.
	Account, Issuer string
}

// ReadIdentity reads the identity of a .creds file. It checks the JWT's
// form, not its trust: the server does that when the holder connects.
func ReadIdentity(credsFile string) (Identity, string, error) {
	raw, err := os.ReadFile(credsFile)
	if err != nil {
		return Identity{}, "", fmt.Errorf("auth: %w", err)
	}
	return readIdentity(credsFile, raw)
}

// readIdentity is ReadIdentity of the contents raw of file name.
func readIdentity(name string, raw []byte) (Identity, string, error) {
	tok, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return Identity{}, "", fmt.Errorf("auth: %s: %w", name, err)
	}
	id, err := ParseIdentity(tok)
	return id, tok, err
}

// ParseIdentity decodes a user JWT into an Identity.
func ParseIdentity(userJWT string) (Identity, error) {
	uc, err := jwt.DecodeUserClaims(userJWT)
	if err != nil {
		return Identity{}, fmt.Errorf("auth: %w", err)
	}
	return identityOf(uc)
}

func identityOf(uc *jwt.UserClaims) (Identity, error) {
	id := Identity{Account: uc.IssuerAccount, Issuer: uc.Issuer}
	if id.Account == "" {
		id.Account = uc.Issuer
	}
	for _, t := range uc.Tags {
		switch {
		case strings.HasPrefix(t, tagRole):
			id.Role = Role(strings.TrimPrefix(t, tagRole))
		case strings.HasPrefix(t, tagPool):
			id.Pools = append(id.Pools, strings.TrimPrefix(t, tagPool))
		case t == tagGPU:
			id.GPU = true
		}
	}
	if id.Role == "" {
		return id, fmt.Errorf("auth: credential %q is not one of Ward's (no %s tag)", uc.Name, tagRole)
	}
	_, id.Name, _ = strings.Cut(uc.Name, ":")
	return id, nil
}

// ErrNotAdmitted is wrapped by HostTrust.Admit's refusals.
var ErrNotAdmitted = errors.New("host not admitted")

// HostTrust admits hosts by the credential their heartbeats carry: a user
// JWT signed by the same issuer as the scheduler's own credential (the
// account's signing key), for the Host role and the host id it names. The
// JWT is public; what binds it to the sender is that the server lets only
// that credential publish on the host's heartbeat subject, and the name in
// the JWT must match it. Verified JWTs are remembered.
type HostTrust struct {
	account string
	issuers []string
	cache   sync.Map // jwt → Identity
}

// NewHostTrust trusts host credentials issued by the issuer of own, the
// scheduler's own user JWT.
func NewHostTrust(own string) (*HostTrust, error) {
	id, err := ParseIdentity(own)
	if err != nil {
		return nil, err
	}
	return &HostTrust{account: id.Account, issuers: []string{id.Issuer, id.Account}}, nil
}

// Admit checks that cred is a valid host credential for hostID and returns
// its identity.
func (h *HostTrust) Admit(cred, hostID string, now time.Time) (Identity, error) {
	if cred == "" {
		return Identity{}, fmt.Errorf("%w: heartbeat of %s carries no credential", ErrNotAdmitted, hostID)
	}
	if v, ok := h.cache.Load(cred); ok {
		id := v.(cachedIdentity)
		if id.expires != 0 && now.Unix() >= id.expires {
			return Identity{}, fmt.Errorf("%w: %s's credential expired", ErrNotAdmitted, hostID)
		}
		if id.Name != hostID {
			return Identity{}, fmt.Errorf("%w: the credential is host %q's, the heartbeat says %q", ErrNotAdmitted, id.Name, hostID)
		}
		return id.Identity, nil
	}
	uc, err := jwt.DecodeUserClaims(cred) // checks the signature
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %s: %v", ErrNotAdmitted, hostID, err)
	}
	id, err := identityOf(uc)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrNotAdmitted, err)
	}
	switch {
	case id.Account != h.account || !slices.Contains(h.issuers, id.Issuer):
		return Identity{}, fmt.Errorf("%w: %s's credential was not issued by this system's account", ErrNotAdmitted, hostID)
	case id.Role != Host:
		return Identity{}, fmt.Errorf("%w: %s's credential is for role %s", ErrNotAdmitted, hostID, id.Role)
	}
	h.cache.Store(cred, cachedIdentity{Identity: id, expires: uc.Expires})
	return h.Admit(cred, hostID, now)
}

type cachedIdentity struct {
	Identity
	expires int64
}

// AllowsPool says whether the identity may serve pool.
func (id Identity) AllowsPool(pool string) bool {
	return len(id.Pools) == 0 || slices.Contains(id.Pools, pool)
}

// Options are the NATS connection options of a .creds file: the
// credential, and the reply inbox prefix its permissions allow. An empty
// file is no options: a system run --insecure.
func Options(credsFile string) ([]nats.Option, error) {
	if credsFile == "" {
		return nil, nil
	}
	id, _, err := ReadIdentity(credsFile)
	if err != nil {
		return nil, err
	}
	return []nats.Option{nats.UserCredentials(credsFile), nats.CustomInboxPrefix(InboxPrefix(id.Role, id.Name))}, nil
}

// UpToDate reports whether the credential in credsFile carries the
// permissions this version grants role name (Permissions): one issued by
// an older version, before a subject was added, does not, and is to be
// issued again.
func UpToDate(credsFile string, role Role, name string) bool {
	_, tok, err := ReadIdentity(credsFile)
	if err != nil {
		return false
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return false
	}
	want, err := Permissions(role, name)
	return err == nil && reflect.DeepEqual(uc.Permissions, want)
}
