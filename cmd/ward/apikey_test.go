package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	wardnats "github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// ward auth key add, ls and revoke, in-process, against a server with
// auth on, as its admin.
func TestAuthKeyCLI(t *testing.T) {
	s := wardnats.StartSecure(t)
	admin := s.Creds(auth.Admin, "admin")
	cli := func(args ...string) (string, error) {
		return auditCLI(t, append([]string{"--nats", s.URL, "--creds", admin, "auth", "key"}, args...)...)
	}

	out, err := cli("add", "--tenant", "acme", "--name", "ci")
	if err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	key := strings.SplitN(out, "\n", 2)[0]
	if _, err := apikey.Parse(key); err != nil || !strings.Contains(out, "cannot be shown again") {
		t.Fatalf("add printed:\n%s", out)
	}
	out, err = cli("add", "--tenant", "acme", "--read-only", "--expires", "720h", "-o", "json")
	if err != nil {
		t.Fatalf("add --read-only: %v\n%s", err, out)
	}
	var added struct {
		Key string `json:"key"`
		apikey.Record
	}
	if err := json.Unmarshal([]byte(out), &added); err != nil || !added.ReadOnly() || added.ExpiresAt.IsZero() || added.CreatedBy != "admin:admin" {
		t.Fatalf("add -o json: %v\n%s", err, out)
	}
	if out, err := cli("add", "--tenant", "ops", "--admin"); err != nil {
		t.Fatalf("add --admin: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"add"},
		{"add", "--tenant", "acme", "--read-only", "--admin"},
		{"add", "--tenant", "acme", "--scope", "write"},
		{"add", "--tenant", "not a tenant"},
		{"add", "--tenant", "acme", "--expires", "-1h"},
	} {
		if out, err := cli(bad...); err == nil {
			t.Errorf("%v was accepted:\n%s", bad, out)
		}
	}

	// What a gateway would see.
	nc, err := nats.Connect(s.URL, nats.UserCredentials(admin))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := apikey.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec, err := store.Verify(ctx, key)
	if err != nil || rec.Tenant != "acme" || rec.Name != "ci" || !rec.Can(apikey.ScopeSubmit) || !rec.Can(apikey.ScopeRead) || rec.Admin() {
		t.Fatalf("verify the added key: %+v, %v", rec, err)
	}

	// ls: never a secret nor a hash.
	secret := key[len(key)-apikey.SecretLen:]
	out, err = cli("ls")
	if err != nil {
		t.Fatalf("ls: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "KEY") || !strings.Contains(out, rec.Prefix()) || strings.Contains(out, secret) {
		t.Fatalf("ls:\n%s", out)
	}
	out, err = cli("ls", "--tenant", "acme", "-o", "json")
	if err != nil {
		t.Fatalf("ls -o json: %v\n%s", err, out)
	}
	var recs []apikey.Record
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 2 || strings.Contains(out, secret) || strings.Contains(out, "hash") || strings.Contains(out, "sha256") {
		t.Fatalf("ls --tenant acme -o json: %v\n%s", err, out)
	}

	// revoke, by the prefix ls shows: refused at once by the running store.
	if out, err := cli("revoke", rec.Prefix()); err != nil || !strings.Contains(out, "revoked key "+rec.Prefix()) {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	poll.Until(t, 10*time.Second, "the running store refuses the revoked key", func() bool {
		_, err := store.Verify(ctx, key)
		return errors.Is(err, apikey.ErrRevoked)
	})
	if out, err := cli("revoke", rec.ID); err != nil || !strings.Contains(out, "revoked already") {
		t.Fatalf("revoke twice: %v\n%s", err, out)
	}
	if out, err := cli("revoke", "zzzzzzzz"); !errors.Is(err, apikey.ErrUnknown) {
		t.Fatalf("revoke an unknown key: %v\n%s", err, out)
	}
	out, _ = cli("ls", "--tenant", "acme")
	if !strings.Contains(out, "revoked") || !strings.Contains(out, "by admin:admin") {
		t.Fatalf("ls after revoke:\n%s", out)
	}

	// The audit log has both, and never the key.
	entries, err := audit.List(ctx, js, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var adds, revokes int
	for _, e := range entries {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), secret) {
			t.Fatalf("the audit log holds the secret: %s", b)
		}
		switch {
		case e.Action == audit.APIKeyAdd && e.Actor == "admin:admin":
			adds++
		case e.Action == audit.APIKeyRevoke && e.Target == rec.Prefix() && e.Detail["tenant"] == "acme":
			revokes++
		}
	}
	if adds != 3 || revokes != 1 {
		t.Fatalf("audit: %d adds, %d revokes: %+v", adds, revokes, entries)
	}

	// A tenant's credential is turned away before it asks.
	if out, err := auditCLI(t, "--nats", s.URL, "--creds", s.Creds(auth.Tenant, "acme"), "auth", "key", "ls"); err == nil || !strings.Contains(err.Error(), "admin credential") {
		t.Fatalf("ls as a tenant: %v\n%s", err, out)
	}
}
