package auth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// fuzzAuthority is an installation's keys and a few of its credentials,
// for the fuzz targets' seeds and trust.
type fuzzAuthority struct {
	a                                       *Authority
	admin, tenant, host, sched, expiredHost []byte // .creds files
	otherAdmin, otherHost                   []byte // another installation's
}

func newFuzzAuthority(f *testing.F) *fuzzAuthority {
	a, err := Init(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	other, err := Init(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	issue := func(a *Authority, role Role, name string, o IssueOptions) []byte {
		b, err := a.Issue(role, name, o)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	return &fuzzAuthority{a: a,
		admin:       issue(a, Admin, "alice", IssueOptions{}),
		tenant:      issue(a, Tenant, "acme", IssueOptions{}),
		host:        issue(a, Host, "h1", IssueOptions{Pools: []string{"gpu", "default"}, GPU: true}),
		sched:       issue(a, Scheduler, "s1", IssueOptions{}),
		expiredHost: issue(a, Host, "h2", IssueOptions{Expires: time.Now().Add(-time.Hour)}),
		otherAdmin:  issue(other, Admin, "alice", IssueOptions{}),
		otherHost:   issue(other, Host, "h1", IssueOptions{}),
	}
}

// jwtOf is the user JWT of a .creds file.
func jwtOf(t testing.TB, creds []byte) string {
	t.Helper()
	tok, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mixed is a .creds file of one credential's JWT and another's seed.
func mixed(t testing.TB, jwtFrom, seedFrom []byte) []byte {
	t.Helper()
	const seedBlock = "-----BEGIN USER NKEY SEED-----"
	i, j := bytes.Index(jwtFrom, []byte(seedBlock)), bytes.Index(seedFrom, []byte(seedBlock))
	if i < 0 || j < 0 {
		t.Fatal("not a .creds file")
	}
	return append(slices.Clone(jwtFrom[:i]), seedFrom[j:]...)
}

// FuzzCredsFile feeds the .creds readers (ReadIdentity, NewRequestSigner)
// arbitrary files. An identity read is the JWT's, as ParseIdentity reads
// it, with a role; a request signer made is an admin's whose requests its
// own credential's trust verifies, as the admin it is: its seed is its
// JWT's key.
func FuzzCredsFile(f *testing.F) {
	fa := newFuzzAuthority(f)
	for _, b := range [][]byte{fa.admin, fa.tenant, fa.host, fa.sched, fa.expiredHost, fa.otherAdmin,
		mixed(f, fa.admin, fa.tenant), mixed(f, fa.host, fa.admin)} {
		f.Add(b)
	}
	sys, err := fa.a.SystemCreds()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sys) // no role
	f.Add([]byte(jwtOf(f, fa.admin)))
	f.Add([]byte("-----BEGIN NATS USER JWT-----\nnot.a.jwt\n------END NATS USER JWT------\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, tok, err := readIdentity("fuzz.creds", raw)
		if err == nil {
			if id.Role == "" {
				t.Fatal("an identity without a role")
			}
			uc, err := jwt.DecodeUserClaims(tok)
			if err != nil {
				t.Fatalf("the JWT of an identity read does not decode: %v", err)
			}
			again, err := ParseIdentity(tok)
			if err != nil || !reflect.DeepEqual(again, id) {
				t.Fatalf("the file says %+v, its JWT %+v (%v)", id, again, err)
			}
			if _, name, _ := strings.Cut(uc.Name, ":"); name != id.Name {
				t.Fatalf("name %q of a credential named %q", id.Name, uc.Name)
			}
		}
		s, err := newRequestSigner("fuzz.creds", raw)
		if err != nil {
			if s != nil {
				t.Fatal("a signer and an error")
			}
			return
		}
		if id.Role != Admin || s.jwt != tok {
			t.Fatalf("a request signer of a %s credential", id.Role)
		}
		uc, _ := jwt.DecodeUserClaims(tok)
		now := time.Unix(uc.IssuedAt, 0).Add(time.Second)
		if uc.Expires != 0 && now.Unix() >= uc.Expires {
			return
		}
		trust, err := NewAdminTrust(tok)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Sign("sys.fuzz", []byte("body"), now)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trust.Verify("sys.fuzz", h, []byte("body"), now)
		if err != nil {
			t.Fatalf("the signer's own request is refused: %v", err)
		}
		if got.Actor() != id.Actor() {
			t.Fatalf("signed as %s, identified as %s", id.Actor(), got.Actor())
		}
	})
}

// FuzzAdminRequest feeds AdminTrust.Verify arbitrary headers, subjects and
// bodies around two requests alice signed. It identifies only alice, and
// only for a request she signed: the same subject, body and time.
func FuzzAdminRequest(f *testing.F) {
	fa := newFuzzAuthority(f)
	trust, err := NewAdminTrust(jwtOf(f, fa.sched))
	if err != nil {
		f.Fatal(err)
	}
	alice, err := newRequestSigner("alice", fa.admin)
	if err != nil {
		f.Fatal(err)
	}
	mallory, err := newRequestSigner("mallory", fa.otherAdmin)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now()
	type request struct {
		subject string
		body    []byte
		ms      int64
	}
	signed := []request{{"sys.scheduler.mode", []byte("mode READ_ONLY"), now.UnixMilli()},
		{"sys.dlq.drop", []byte(`{"id":"j1"}`), now.Add(-time.Minute).UnixMilli()}}
	for _, r := range signed {
		h, err := alice.Sign(r.subject, r.body, time.UnixMilli(r.ms))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(r.subject, h.Get(HeaderAdminJWT), h.Get(HeaderAdminTime), h.Get(HeaderAdminSig), r.body)
		f.Add(r.subject, jwtOf(f, fa.tenant), h.Get(HeaderAdminTime), h.Get(HeaderAdminSig), r.body)
		hm, _ := mallory.Sign(r.subject, r.body, time.UnixMilli(r.ms))
		f.Add(r.subject, hm.Get(HeaderAdminJWT), hm.Get(HeaderAdminTime), hm.Get(HeaderAdminSig), r.body)
		f.Add(r.subject, h.Get(HeaderAdminJWT), hm.Get(HeaderAdminTime), hm.Get(HeaderAdminSig), r.body)
	}
	f.Add("", "", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, subject, tok, ts, sig string, body []byte) {
		h := nats.Header{}
		for k, v := range map[string]string{HeaderAdminJWT: tok, HeaderAdminTime: ts, HeaderAdminSig: sig} {
			if v != "" {
				h.Set(k, v)
			}
		}
		id, err := trust.Verify(subject, h, body, now)
		if err != nil {
			if !errors.Is(err, ErrNotIdentified) {
				t.Fatalf("a refusal that is not ErrNotIdentified: %v", err)
			}
			return
		}
		if id.Actor() != "admin:alice" || id.Role != Admin || id.Account != fa.a.AccountKey() {
			t.Fatalf("identified %+v", id)
		}
		ms, _ := strconv.ParseInt(ts, 10, 64)
		if !slices.ContainsFunc(signed, func(r request) bool {
			return r.subject == subject && bytes.Equal(r.body, body) && r.ms == ms
		}) {
			t.Fatalf("identified alice for a request she did not sign: %q %q at %d", subject, body, ms)
		}
	})
}

// FuzzHostCredential feeds HostTrust.Admit arbitrary credentials and host
// ids. It admits only a host credential this installation issued, for the
// host it names, unexpired, and says so the same way twice.
func FuzzHostCredential(f *testing.F) {
	fa := newFuzzAuthority(f)
	trust, err := NewHostTrust(jwtOf(f, fa.sched))
	if err != nil {
		f.Fatal(err)
	}
	issued := map[string]bool{}
	for _, c := range [][]byte{fa.host, fa.expiredHost} {
		uc, err := jwt.DecodeUserClaims(jwtOf(f, c))
		if err != nil {
			f.Fatal(err)
		}
		issued[uc.Subject] = true
	}
	for _, c := range [][]byte{fa.host, fa.expiredHost, fa.tenant, fa.admin, fa.otherHost} {
		f.Add(jwtOf(f, c), "h1")
		f.Add(jwtOf(f, c), "h2")
	}
	f.Add("", "h1")
	now := time.Now()
	f.Fuzz(func(t *testing.T, cred, hostID string) {
		id, err := trust.Admit(cred, hostID, now)
		id2, err2 := trust.Admit(cred, hostID, now)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(id, id2) {
			t.Fatalf("admitted %+v (%v), then %+v (%v)", id, err, id2, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrNotAdmitted) {
				t.Fatalf("a refusal that is not ErrNotAdmitted: %v", err)
			}
			return
		}
		uc, err := jwt.DecodeUserClaims(cred)
		if err != nil {
			t.Fatalf("admitted a credential that does not decode: %v", err)
		}
		switch {
		case id.Role != Host || id.Name != hostID || id.Account != fa.a.AccountKey():
			t.Fatalf("admitted %+v as host %q", id, hostID)
		case !issued[uc.Subject]:
			t.Fatalf("admitted a key this installation never issued: %s", uc.Subject)
		case uc.Expires != 0 && now.Unix() >= uc.Expires:
			t.Fatal("admitted an expired credential")
		}
	})
}

// FuzzAuthorityFiles replaces one file of an installation's keys (which:
// operator.nk, system.nk, account.nk, account-signing.nk, account.jwt,
// dispatch.secret) with arbitrary bytes. What Load accepts is a coherent
// authority: the credentials it issues are ones a NATS server given its
// ServerKeys accepts (the user JWT's account is the account JWT's, which
// names the key that signed the user, and was signed by the operator the
// server trusts), and its dispatch secret is at least 32 bytes.
func FuzzAuthorityFiles(f *testing.F) {
	base, err := Init(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	other, err := Init(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	files := []string{fileOperator, fileSystem, fileAccount, fileSigning, fileAccountJWT, fileDispatch}
	contents := map[string][]byte{}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(base.dir, name))
		if err != nil {
			f.Fatal(err)
		}
		contents[name] = b
		f.Add(uint8(slices.Index(files, name)), b)
		o, _ := os.ReadFile(filepath.Join(other.dir, name))
		f.Add(uint8(slices.Index(files, name)), o) // another installation's
	}
	user, _ := nkeys.CreateUser()
	useed, _ := user.Seed()
	for i := range 4 {
		f.Add(uint8(i), useed)                    // a seed of the wrong kind
		f.Add(uint8(i), contents[files[(i+1)%4]]) // another key of the installation
	}
	f.Add(uint8(5), []byte("abcd\n"))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dir := t.TempDir()
		for _, name := range files {
			b := contents[name]
			if name == files[int(which)%len(files)] {
				b = data
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		a, err := Load(dir)
		if err != nil {
			if a != nil {
				t.Fatal("an authority and an error")
			}
			return
		}
		secret, keyID := a.DispatchSecret()
		if len(secret) < 32 || keyID != KeyID(secret) {
			t.Fatalf("a dispatch secret of %d bytes, id %s", len(secret), keyID)
		}
		k, err := a.ServerKeys()
		if err != nil {
			t.Fatalf("an authority loaded has no server keys: %v", err)
		}
		oc, err := jwt.DecodeOperatorClaims(k.OperatorJWT)
		if err != nil {
			t.Fatalf("the operator JWT: %v", err)
		}
		accJWT, ok := k.Accounts[a.AccountKey()]
		if !ok || k.Accounts[k.SystemAccount] == "" {
			t.Fatalf("the server is not given the account and the system account: %v", k.Accounts)
		}
		ac, err := jwt.DecodeAccountClaims(accJWT)
		if err != nil {
			t.Fatalf("the account JWT: %v", err)
		}
		if ac.Subject != a.AccountKey() || ac.Issuer != oc.Subject {
			t.Fatalf("the server is given account %s signed by %s, as account %s under operator %s", ac.Subject, ac.Issuer, a.AccountKey(), oc.Subject)
		}
		creds, err := a.Issue(Host, "h1", IssueOptions{})
		if err != nil {
			t.Fatalf("an authority loaded does not issue: %v", err)
		}
		uc, err := jwt.DecodeUserClaims(jwtOf(t, creds))
		if err != nil {
			t.Fatal(err)
		}
		if uc.IssuerAccount != ac.Subject || !ac.SigningKeys.Contains(uc.Issuer) {
			t.Fatalf("a credential of account %s signed by %s, which the account JWT (%s, signing keys %v) does not vouch for",
				uc.IssuerAccount, uc.Issuer, ac.Subject, ac.SigningKeys.Keys())
		}
	})
}
