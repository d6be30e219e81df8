package assembly_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
)

// TestDevCredsKeptUnlessStale: ward dev keeps the credentials of its state
// directory across restarts, but issues again one whose permissions are
// not those this version grants (an older ward dev's, before a subject
// was added), so that an upgrade does not leave a part unable to serve.
func TestDevCredsKeptUnlessStale(t *testing.T) {
	dir := t.TempDir()
	a, err := auth.Init(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "creds")
	c, err := assembly.IssueDevCreds(a, creds, "h1")
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, f := range []string{c.Admin, c.Tenant, c.Scheduler, c.Safety, c.Host} {
		if before[f], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	// A restart keeps them all.
	if _, err := assembly.IssueDevCreds(a, creds, "h1"); err != nil {
		t.Fatal(err)
	}
	for f, b := range before {
		if now, _ := os.ReadFile(f); !bytes.Equal(now, b) {
			t.Errorf("%s was issued again", filepath.Base(f))
		}
	}
	// A scheduler credential with other permissions (here a tenant's) is
	// stale: issued again, as a scheduler's.
	stale, err := a.Issue(auth.Tenant, "scheduler", auth.IssueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Scheduler, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := assembly.IssueDevCreds(a, creds, "h1"); err != nil {
		t.Fatal(err)
	}
	if id, _, err := auth.ReadIdentity(c.Scheduler); err != nil || id.Role != auth.Scheduler {
		t.Errorf("the stale scheduler credential: %+v %v", id, err)
	}
	if now, _ := os.ReadFile(c.Tenant); !bytes.Equal(now, before[c.Tenant]) {
		t.Error("the tenant's credential was issued again too")
	}
}
