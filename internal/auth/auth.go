// Package auth is Ward's trust on the bus, built on NATS's own mechanisms:
// an operator, a system account and the WARD account (nkeys, JWTs through
// github.com/nats-io/jwt/v2), and one user credential per role or tenant
// whose subject permissions are the role's contract (perms.go). A tenant's
// identity is its credential: every subject it may use names the tenant,
// so a scheduler reads the tenant from the subject, never from the payload.
//
// New credentials are user JWTs signed by the account's signing key: the
// server accepts them without a restart. Revoking one adds its key to the
// account JWT's revocations, which is pushed to the running servers (see
// Authority.Revoke).
//
// The package also holds the key of signed dispatch (ticket.go): the
// schedulers' secret and the per-host keys derived from it.
package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Role is what a credential is for.
type Role string

// The roles. Each has its permissions in perms.go.
const (
	// Admin pushes policy, deploys modules, manages tenants and hosts, and
	// sees every tenant's jobs.
	Admin Role = "admin"
	// Scheduler serves submissions, places and dispatches jobs.
	Scheduler Role = "scheduler"
	// Safety is the safety kernel.
	Safety Role = "safety"
	// Host is a host agent; the credential names its pools.
	Host Role = "host"
	// Tenant is a client of one tenant.
	Tenant Role = "tenant"
)

// AccountName is the account all of Ward's users live in.
const AccountName = "WARD"

// Tags on a user JWT that Ward reads.
const (
	tagRole = "ward-role:"
	tagPool = "ward-pool:"
	// TagGPU lets a host claim GPU capabilities.
	tagGPU = "ward-gpu:true"
)

// ErrNoAuthority means the directory holds no keys (run `ward auth init`).
var ErrNoAuthority = errors.New("auth: no keys here (run `ward auth init`)")

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidName checks a tenant or host name: it becomes a subject token and a
// bucket name, so it is lower-case letters, digits, '-' and '_', at most
// 63, starting with a letter or digit.
func ValidName(kind, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("auth: %s name %q: want lower-case letters, digits, '-' and '_' (at most 63, not starting with '-' or '_')", kind, name)
	}
	return nil
}

// Authority is one installation's keys, kept in a directory (0700) as
// nkey seeds, JWTs and the dispatch secret.
type Authority struct {
	dir                       string
	operator, system, account nkeys.KeyPair
	signing                   nkeys.KeyPair // the account's signing key: it signs users
	accountClaims             *jwt.AccountClaims
	operatorJWT, systemJWT    string
	dispatch                  []byte
	dispatchID                string
}

// Files in an authority's directory.
const (
	fileOperator     = "operator.nk"
	fileSystem       = "system.nk"
	fileAccount      = "account.nk"
	fileSigning      = "account-signing.nk"
	fileAccountJWT   = "account.jwt"
	fileDispatch     = "dispatch.secret"
	FileServerConfig = "nats-server.conf"
)

// Init creates the keys in dir, or loads them when dir has them already.
func Init(dir string) (*Authority, error) {
	if a, err := Load(dir); err == nil || !errors.Is(err, ErrNoAuthority) {
		return a, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	a := &Authority{dir: dir}
	var err error
	if a.operator, err = nkeys.CreateOperator(); err != nil {
		return nil, err
	}
	if a.system, err = nkeys.CreateAccount(); err != nil {
		return nil, err
	}
	if a.account, err = nkeys.CreateAccount(); err != nil {
		return nil, err
	}
	if a.signing, err = nkeys.CreateAccount(); err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	pub, _ := a.account.PublicKey()
	sk, _ := a.signing.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = AccountName
	ac.SigningKeys.Add(sk)
	// JetStream on, bounded by the server's own limits.
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	a.accountClaims = ac
	for _, f := range []struct {
		name string
		kp   nkeys.KeyPair
	}{{fileOperator, a.operator}, {fileSystem, a.system}, {fileAccount, a.account}, {fileSigning, a.signing}} {
		seed, err := f.kp.Seed()
		if err != nil {
			return nil, err
		}
		if err := writeFile(filepath.Join(dir, f.name), seed); err != nil {
			return nil, err
		}
	}
	if err := writeFile(filepath.Join(dir, fileDispatch), []byte(hex.EncodeToString(secret)+"\n")); err != nil {
		return nil, err
	}
	if err := a.saveAccount(); err != nil {
		return nil, err
	}
	return Load(dir)
}

// Load reads the keys Init wrote in dir.
func Load(dir string) (*Authority, error) {
	a := &Authority{dir: dir}
	read := func(name string) (nkeys.KeyPair, error) {
		seed, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoAuthority, dir)
		}
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		return nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	}
	var err error
	if a.operator, err = read(fileOperator); err != nil {
		return nil, err
	}
	if a.system, err = read(fileSystem); err != nil {
		return nil, err
	}
	if a.account, err = read(fileAccount); err != nil {
		return nil, err
	}
	if a.signing, err = read(fileSigning); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, fileAccountJWT))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if a.accountClaims, err = jwt.DecodeAccountClaims(strings.TrimSpace(string(raw))); err != nil {
		return nil, fmt.Errorf("auth: %s: %w", fileAccountJWT, err)
	}
	hexSecret, err := os.ReadFile(filepath.Join(dir, fileDispatch))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if a.dispatch, err = hex.DecodeString(strings.TrimSpace(string(hexSecret))); err != nil || len(a.dispatch) < 32 {
		return nil, fmt.Errorf("auth: %s is not a 32-byte hex secret", fileDispatch)
	}
	a.dispatchID = KeyID(a.dispatch)
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := a.signServerJWTs(); err != nil {
		return nil, err
	}
	return a, nil
}

// check says whether the files Load read belong together: each key of its
// kind, and the account JWT the account key's, signed by the operator and
// naming the signing key. A mixed-up directory (an account.jwt copied
// from another installation, a seed in the wrong file) would otherwise
// load, and issue credentials no server accepts.
func (a *Authority) check() error {
	for _, k := range []struct {
		file string
		kp   nkeys.KeyPair
		want nkeys.PrefixByte
	}{{fileOperator, a.operator, nkeys.PrefixByteOperator}, {fileSystem, a.system, nkeys.PrefixByteAccount},
		{fileAccount, a.account, nkeys.PrefixByteAccount}, {fileSigning, a.signing, nkeys.PrefixByteAccount}} {
		pub, err := k.kp.PublicKey()
		if err != nil {
			return fmt.Errorf("auth: %s: %w", k.file, err)
		}
		if p := nkeys.Prefix(pub); p != k.want {
			return fmt.Errorf("auth: %s holds the seed of a key of kind %v, want %v", k.file, p, k.want)
		}
	}
	opub, _ := a.operator.PublicKey()
	spub, _ := a.signing.PublicKey()
	ac := a.accountClaims
	switch {
	case ac.Subject != a.AccountKey():
		return fmt.Errorf("auth: %s is account %s's, not %s's (%s)", fileAccountJWT, ac.Subject, fileAccount, a.AccountKey())
	case ac.Issuer != opub:
		return fmt.Errorf("auth: %s was signed by %s, not by the operator (%s)", fileAccountJWT, ac.Issuer, fileOperator)
	case !ac.SigningKeys.Contains(spub):
		return fmt.Errorf("auth: %s does not name the signing key of %s", fileAccountJWT, fileSigning)
	}
	return nil
}

// Dir is where the keys live.
func (a *Authority) Dir() string { return a.dir }

// AccountKey is the WARD account's public key.
func (a *Authority) AccountKey() string {
	pub, _ := a.account.PublicKey()
	return pub
}

// DispatchSecret is the schedulers' secret, from which each host's
// dispatch key is derived (HostKey). Only schedulers hold it.
func (a *Authority) DispatchSecret() (secret []byte, keyID string) {
	return a.dispatch, a.dispatchID
}

// signServerJWTs signs the operator and system account JWTs, which the
// server is given at start; they hold no state, so they are signed anew.
func (a *Authority) signServerJWTs() error {
	opub, _ := a.operator.PublicKey()
	spub, _ := a.system.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "ward"
	oc.SystemAccount = spub
	var err error
	if a.operatorJWT, err = oc.Encode(a.operator); err != nil {
		return fmt.Errorf("auth: operator: %w", err)
	}
	sc := jwt.NewAccountClaims(spub)
	sc.Name = "SYS"
	if a.systemJWT, err = sc.Encode(a.operator); err != nil {
		return fmt.Errorf("auth: system account: %w", err)
	}
	return nil
}

func (a *Authority) saveAccount() error {
	tok, err := a.accountClaims.Encode(a.operator)
	if err != nil {
		return fmt.Errorf("auth: account: %w", err)
	}
	return writeFile(filepath.Join(a.dir, fileAccountJWT), []byte(tok+"\n"))
}

// ServerKeys is what a NATS server needs to trust Ward's credentials: the
// operator JWT, the system account's key and every account JWT by key.
type ServerKeys struct {
	OperatorJWT   string
	SystemAccount string
	Accounts      map[string]string
}

// ServerKeys returns the server side of the authority.
func (a *Authority) ServerKeys() (ServerKeys, error) {
	acc, err := a.accountClaims.Encode(a.operator)
	if err != nil {
		return ServerKeys{}, err
	}
	spub, _ := a.system.PublicKey()
	return ServerKeys{OperatorJWT: a.operatorJWT, SystemAccount: spub,
		Accounts: map[string]string{spub: a.systemJWT, a.AccountKey(): acc}}, nil
}

// NATSServerTLS is the tls block of a nats-server configuration
// (ServerConfig): the server's certificate and key, and the CA of the
// clients' certificates. Verify makes it mutual: a client without a
// certificate from CA is refused before it can show a credential.
type NATSServerTLS struct {
	Cert, Key, CA string
	Verify        bool
}

// ServerConfig is a nats-server configuration that trusts the authority:
// operator mode with a memory resolver preloaded with the accounts, and,
// with tls, clients must speak TLS (EnsureTLS makes the files).
// Revocations are pushed to running servers (Revoke); write the file again
// after one so that a restarted server keeps it.
func (a *Authority) ServerConfig(listen, storeDir string, tls *NATSServerTLS) (string, error) {
	k, err := a.ServerKeys()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by `ward auth`: it trusts Ward's operator and accounts.\n")
	fmt.Fprintf(&b, "listen: %q\n", listen)
	fmt.Fprintf(&b, "jetstream { store_dir: %q }\n", storeDir)
	if tls != nil {
		fmt.Fprintf(&b, "tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: %t\n}\n", tls.Cert, tls.Key, tls.CA, tls.Verify)
	}
	fmt.Fprintf(&b, "operator: %s\n", k.OperatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n", k.SystemAccount)
	fmt.Fprintf(&b, "resolver: MEMORY\nresolver_preload: {\n")
	keys := make([]string, 0, len(k.Accounts))
	for key := range k.Accounts {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", key, k.Accounts[key])
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// IssueOptions are a credential's particulars.
type IssueOptions struct {
	// Pools a host credential may serve; empty: any.
	Pools []string
	// GPU lets a host credential claim GPU capabilities.
	GPU bool
	// Expires, when not zero, ends the credential then.
	Expires time.Time
}

// Issue returns a .creds file (user JWT and seed) for role and name,
// signed by the account's signing key, with the role's permissions. name
// is the tenant for Tenant, the host id for Host, free for the others.
func (a *Authority) Issue(role Role, name string, o IssueOptions) ([]byte, error) {
	if role == Tenant || role == Host {
		if err := ValidName(string(role), name); err != nil {
			return nil, err
		}
	}
	for _, p := range o.Pools {
		if err := ValidName("pool", p); err != nil {
			return nil, err
		}
	}
	perms, err := Permissions(role, name)
	if err != nil {
		return nil, err
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	upub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = string(role) + ":" + name
	uc.IssuerAccount = a.AccountKey()
	uc.Permissions = perms
	uc.Tags.Add(tagRole + string(role))
	for _, p := range o.Pools {
		uc.Tags.Add(tagPool + p)
	}
	if o.GPU {
		uc.Tags.Add(tagGPU)
	}
	if !o.Expires.IsZero() {
		uc.Expires = o.Expires.Unix()
	}
	tok, err := uc.Encode(a.signing)
	if err != nil {
		return nil, fmt.Errorf("auth: sign %s: %w", uc.Name, err)
	}
	// Kept so that Revoke can find every credential of a name.
	dir := filepath.Join(a.dir, "issued", string(role)+"-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if err := writeFile(filepath.Join(dir, upub+".jwt"), []byte(tok+"\n")); err != nil {
		return nil, err
	}
	seed, _ := user.Seed()
	return jwt.FormatUserConfig(tok, seed)
}

// SystemCreds is a credential of the system account, for pushing account
// updates to servers; only `ward auth` uses it.
func (a *Authority) SystemCreds() ([]byte, error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	upub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = "system"
	tok, err := uc.Encode(a.system)
	if err != nil {
		return nil, err
	}
	seed, _ := user.Seed()
	return jwt.FormatUserConfig(tok, seed)
}

// Revoke revokes every credential issued to name in role: it adds their
// keys to the account's revocations and saves the account JWT. It returns
// how many it revoked and the account JWT, which the caller pushes to the
// running servers (UpdateSubject); they disconnect the revoked users at
// once and refuse them from then on.
func (a *Authority) Revoke(role Role, name string) (n int, accountJWT string, err error) {
	dir := filepath.Join(a.dir, "issued", string(role)+"-"+name)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0) {
		return 0, "", fmt.Errorf("auth: no %s %q was issued here", role, name)
	}
	if err != nil {
		return 0, "", fmt.Errorf("auth: %w", err)
	}
	for _, e := range ents {
		pub := strings.TrimSuffix(e.Name(), ".jwt")
		if !a.revoked(pub) {
			a.accountClaims.Revoke(pub)
			n++
		}
	}
	if err := a.saveAccount(); err != nil {
		return 0, "", err
	}
	tok, err := a.accountClaims.Encode(a.operator)
	return n, tok, err
}

func (a *Authority) revoked(pub string) bool {
	_, ok := a.accountClaims.Revocations[pub]
	return ok
}

// Issued lists the names issued in role, sorted, and whether each is
// revoked (every credential of it revoked).
func (a *Authority) Issued(role Role) (names []string, revoked map[string]bool, err error) {
	ents, err := os.ReadDir(filepath.Join(a.dir, "issued"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	revoked = map[string]bool{}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), string(role)+"-")
		if !ok {
			continue
		}
		names = append(names, name)
		keys, _ := os.ReadDir(filepath.Join(a.dir, "issued", e.Name()))
		all := len(keys) > 0
		for _, k := range keys {
			if !a.revoked(strings.TrimSuffix(k.Name(), ".jwt")) {
				all = false
			}
		}
		revoked[name] = all
	}
	sort.Strings(names)
	return names, revoked, nil
}

// UpdateSubject is where a system-account user publishes an account JWT
// for the servers to apply.
func UpdateSubject(accountKey string) string {
	return "$SYS.REQ.ACCOUNT." + accountKey + ".CLAIMS.UPDATE"
}

func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
