package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	wardnats "github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestTenantRevokeRevokesAPIKeys: `ward auth tenant revoke T` revokes
// everything T holds, at once: its NATS connection is cut, and its
// gateway key, which submitted a job that succeeded just before, is
// refused (401) by both gateway replicas on submit and on reads, with no
// job created; another tenant's key and an admin's still work; a key for
// T cannot be added until `ward auth tenant add T` reinstates it, and then
// only new keys work.
func TestTenantRevokeRevokesAPIKeys(t *testing.T) {
	sec := wardnats.StartSecure(t)
	creds, err := assembly.IssueDevCreds(sec.Auth, t.TempDir(), "rv-host")
	if err != nil {
		t.Fatal(err)
	}
	settings := config.DefaultScheduler()
	settings.Placement.CPUThreshold = 100 // the machine's load is other tests'
	n, err := assembly.Start(context.Background(), assembly.Options{
		NATSURL: sec.URL, Store: jobstore.NewMemory(), Creds: &creds,
		Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Scheduler: settings}},
		Host: assembly.HostConfig{ID: "rv-host",
			Modules:  map[string][]byte{"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")},
			CacheDir: cacheDir, HeartbeatInterval: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	// Two gateway replicas, each with its own connection and key store.
	var gws []string
	for range 2 {
		gw, err := assembly.StartGateway(context.Background(), assembly.GatewayConfig{NATSURL: sec.URL, Creds: creds.Admin, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := gw.Shutdown(ctx); err != nil {
				t.Errorf("gateway shutdown: %v", err)
			}
		})
		gws = append(gws, "http://"+gw.Addr())
	}
	cli := func(args ...string) (string, error) {
		return auditCLI(t, append([]string{"--nats", sec.URL, "--creds", creds.Admin, "auth", "--dir", sec.Auth.Dir()}, args...)...)
	}
	addKey := func(args ...string) string {
		t.Helper()
		out, err := cli(append([]string{"key", "add"}, args...)...)
		if err != nil {
			t.Fatalf("key add %v: %v\n%s", args, err, out)
		}
		return strings.SplitN(out, "\n", 2)[0]
	}
	call := func(base, key, method, path, body string) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	submit := func(base, key, payload string) string {
		t.Helper()
		st, rep := call(base, key, "POST", "/v1/jobs", `{"topic":"job.echo","payload":"`+payload+`"}`)
		if st != http.StatusAccepted {
			t.Fatalf("submit through %s: %d %v", base, st, rep)
		}
		id := rep["job_id"].(string)
		var job map[string]any
		poll.Until(t, time.Minute, "job "+id+" ends", func() bool {
			_, job = call(base, key, "GET", "/v1/jobs/"+id, "")
			switch job["state"] {
			case "SUCCEEDED", "FAILED", "DENIED", "TIMEOUT", "CANCELLED":
				return true
			}
			return false
		})
		if job["state"] != "SUCCEEDED" {
			t.Fatalf("job %s: %v", id, job)
		}
		return id
	}

	acme := addKey("--tenant", "acme", "--name", "ci")
	acmeRO := addKey("--tenant", "acme", "--read-only")
	other := addKey("--tenant", "other")
	admin := addKey("--tenant", "ops", "--admin")
	acmeID, err := apikey.Parse(acme)
	if err != nil {
		t.Fatal(err)
	}
	// Tenant acme on the bus too: a credential, connected.
	acmeCreds := sec.Creds(auth.Tenant, "acme")
	acmeConn, err := nats.Connect(sec.URL, nats.UserCredentials(acmeCreds))
	if err != nil {
		t.Fatal(err)
	}
	defer acmeConn.Close()

	// The legitimate path: acme's key submits through a replica, the job
	// succeeds, and the other replica serves the key too.
	job := submit(gws[0], acme, "before")
	for _, base := range gws {
		poll.Until(t, 10*time.Second, "replica "+base+" takes acme's keys", func() bool {
			st, _ := call(base, acme, "GET", "/v1/jobs/"+job, "")
			st2, _ := call(base, acmeRO, "GET", "/v1/jobs", "")
			return st == http.StatusOK && st2 == http.StatusOK
		})
	}

	out, err := cli("tenant", "revoke", "acme", "--reason", "unpaid bill")
	if err != nil {
		t.Fatalf("tenant revoke: %v\n%s", err, out)
	}
	if !strings.Contains(out, "revoked 2 API key(s) of tenant acme") || !strings.Contains(out, "ward_"+acmeID) {
		t.Errorf("tenant revoke printed:\n%s", out)
	}
	poll.Until(t, 10*time.Second, "acme's NATS connection is cut", func() bool { return !acmeConn.IsConnected() })

	// Every replica refuses acme's keys, on submit and on reads, as soon
	// as its watch delivers the revocation.
	for _, base := range gws {
		poll.Until(t, 10*time.Second, "replica "+base+" refuses acme's key", func() bool {
			st, _ := call(base, acme, "GET", "/v1/jobs", "")
			return st == http.StatusUnauthorized
		})
		for _, r := range []struct{ key, method, path, body string }{
			{acme, "POST", "/v1/jobs", `{"topic":"job.echo","payload":"after"}`},
			{acme, "GET", "/v1/jobs", ""},
			{acme, "GET", "/v1/jobs/" + job, ""},
			{acme, "GET", "/v1/dlq", ""},
			{acme, "GET", "/v1/runs", ""},
			{acmeRO, "GET", "/v1/jobs/" + job, ""},
		} {
			st, rep := call(base, r.key, r.method, r.path, r.body)
			e, _ := rep["error"].(map[string]any)
			if st != http.StatusUnauthorized || e["code"] != "unauthenticated" {
				t.Errorf("%s %s %s with a key of the revoked tenant: %d %v", base, r.method, r.path, st, rep)
			}
		}
		// Another tenant's key and an admin's still work.
		if st, rep := call(base, other, "GET", "/v1/jobs", ""); st != http.StatusOK {
			t.Errorf("%s: another tenant's key: %d %v", base, st, rep)
		}
		if st, rep := call(base, admin, "GET", "/v1/jobs/"+job, ""); st != http.StatusOK || rep["state"] != "SUCCEEDED" {
			t.Errorf("%s: the admin's key reads acme's job: %d %v", base, st, rep)
		}
	}
	submit(gws[1], other, "other's")
	// No job was created for acme after its revocation.
	st, list := call(gws[0], admin, "GET", "/v1/jobs?tenant=acme&limit=100", "")
	jobs, _ := list["jobs"].([]any)
	if st != http.StatusOK || len(jobs) != 1 {
		t.Errorf("acme's jobs after the revocation: %d %v", st, list)
	}

	// The keys' records say who and why; a new key for acme is refused.
	out, err = cli("key", "ls", "--tenant", "acme", "-o", "json")
	if err != nil {
		t.Fatalf("key ls: %v\n%s", err, out)
	}
	var recs []apikey.Record
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 2 {
		t.Fatalf("key ls: %v\n%s", err, out)
	}
	for _, r := range recs {
		if !r.Revoked() || r.RevokedBy != "admin:admin" || r.RevokedReason != "tenant acme revoked: unpaid bill" {
			t.Errorf("a key of the revoked tenant: %+v", r)
		}
	}
	if out, err := cli("key", "add", "--tenant", "acme"); !errors.Is(err, apikey.ErrTenantRevoked) {
		t.Fatalf("key add for the revoked tenant: %v\n%s", err, out)
	}
	// Revoked again: nothing more to revoke, no error.
	if out, err := cli("tenant", "revoke", "acme"); err != nil || !strings.Contains(out, "revoked 0 API key(s)") {
		t.Errorf("tenant revoke again: %v\n%s", err, out)
	}
	// A tenant with neither a credential nor a key is a typo.
	if out, err := cli("tenant", "revoke", "acmee"); err == nil {
		t.Errorf("tenant revoke of an unknown tenant: %s", out)
	}

	// Audited: the tenant's revocation and each key's, with the reason.
	nc, err := nats.Connect(sec.URL, nats.UserCredentials(creds.Admin))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	es, err := audit.List(ctx, js, audit.Filter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var tenantRevoked, keyRevoked int
	for _, e := range es {
		switch {
		case e.Action == audit.TenantRevoke && e.Target == "tenant:acme" && e.Detail["reason"] == "unpaid bill" && e.Detail["api_keys"] == "2":
			tenantRevoked++
		case e.Action == audit.APIKeyRevoke && e.Detail["tenant"] == "acme" && e.Detail["reason"] == "tenant acme revoked: unpaid bill":
			keyRevoked++
		}
	}
	if tenantRevoked != 1 || keyRevoked != 2 {
		t.Errorf("audit: %d tenant.revoke and %d apikey.revoke records of acme's revocation, want 1 and 2: %+v", tenantRevoked, keyRevoked, es)
	}

	// Reinstated: a new key works on every replica; the old ones do not.
	out, err = cli("tenant", "add", "acme", "-o", filepath.Join(t.TempDir(), "acme.creds"))
	if err != nil || !strings.Contains(out, "reinstated") {
		t.Fatalf("tenant add of the revoked tenant: %v\n%s", err, out)
	}
	fresh := addKey("--tenant", "acme")
	for _, base := range gws {
		poll.Until(t, 10*time.Second, "replica "+base+" takes acme's new key", func() bool {
			st, _ := call(base, fresh, "GET", "/v1/jobs", "")
			return st == http.StatusOK
		})
		if st, _ := call(base, acme, "GET", "/v1/jobs", ""); st != http.StatusUnauthorized {
			t.Errorf("%s: acme's old key after the reinstatement: %d", base, st)
		}
	}
	submit(gws[1], fresh, "reinstated")
}
