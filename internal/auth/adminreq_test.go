package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/auth"
)

func TestAdminTrustIdentifiesSignedRequests(t *testing.T) {
	a, err := auth.Init(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	creds := func(a *auth.Authority, role auth.Role, name string) string {
		return writeTemp(t, must(a.Issue(role, name, auth.IssueOptions{})))
	}
	_, own, err := auth.ReadIdentity(creds(a, auth.Scheduler, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	trust, err := auth.NewAdminTrust(own)
	if err != nil {
		t.Fatal(err)
	}
	alice, err := auth.NewRequestSigner(creds(a, auth.Admin, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := []byte("mode READ_ONLY")
	h, err := alice.Sign("sys.scheduler.mode", body, now)
	if err != nil {
		t.Fatal(err)
	}
	id, err := trust.Verify("sys.scheduler.mode", h, body, now.Add(time.Second))
	if err != nil || id.Actor() != "admin:alice" {
		t.Fatalf("alice's request: %+v, %v", id, err)
	}
	refused := func(what, subject string, h map[string][]string, body []byte, at time.Time) {
		t.Helper()
		if _, err := trust.Verify(subject, h, body, at); !errors.Is(err, auth.ErrNotIdentified) {
			t.Errorf("%s: identified (%v)", what, err)
		}
	}
	refused("another body", "sys.scheduler.mode", h, []byte("mode NORMAL"), now)
	refused("another subject", "sys.dlq.drop", h, body, now)
	refused("too late", "sys.scheduler.mode", h, body, now.Add(auth.AdminRequestSkew+time.Second))
	refused("no headers", "sys.scheduler.mode", nil, body, now)
	forged := map[string][]string{}
	for k, v := range h {
		forged[k] = v
	}
	forged[auth.HeaderAdminTime] = []string{"1"}
	refused("another time", "sys.scheduler.mode", forged, body, now)
	// Another installation's admin, and a JWT of ours with another key's
	// signature.
	other, _ := auth.Init(t.TempDir())
	mallory, err := auth.NewRequestSigner(creds(other, auth.Admin, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	hm, _ := mallory.Sign("sys.scheduler.mode", body, now)
	refused("another installation's admin", "sys.scheduler.mode", hm, body, now)
	hm[auth.HeaderAdminJWT] = h[auth.HeaderAdminJWT]
	refused("alice's JWT, mallory's signature", "sys.scheduler.mode", hm, body, now)
	// A tenant's credential cannot sign as an admin.
	if _, err := auth.NewRequestSigner(creds(a, auth.Tenant, "acme")); err == nil {
		t.Error("a tenant's credential signs admin requests")
	}
}
