package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/audit"
	wardnats "github.com/ward-run/ward/internal/testing/natstest"
)

// auditCLI runs ward's root command in-process and returns what it printed.
func auditCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestAuditLs(t *testing.T) {
	url := wardnats.StartJetStream(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := audit.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Entry{
		{Actor: "admin", Action: audit.PolicyPush, Target: "rev-1", Detail: map[string]string{"revision": "rev-1", "tests": "12"}},
		{Actor: "admin:alice", Action: audit.ModuleDeploy, Target: "echo", Detail: map[string]string{"version": "1.0.0"}},
		{Actor: "admin:bob", Action: audit.TenantRevoke, Target: "acme", Detail: map[string]string{"reason": "unpaid\tbill"}},
	} {
		if err := audit.Record(ctx, js, e); err != nil {
			t.Fatal(err)
		}
	}

	out, err := auditCLI(t, "--nats", url, "audit", "ls", "--since", "1h")
	if err != nil {
		t.Fatalf("audit ls: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "AT") {
		t.Fatalf("audit ls: want a header and 3 rows:\n%s", out)
	}
	for i, want := range [][]string{
		{"admin:bob", "tenant.revoke", "acme", `reason="unpaid\tbill"`},
		{"admin:alice", "module.deploy", "echo", "version=1.0.0"},
		{"admin ", "policy.push", "rev-1", "revision=rev-1 tests=12"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d lacks %q:\n%s", i+1, w, out)
			}
		}
	}

	out, err = auditCLI(t, "--nats", url, "audit", "ls", "--actor", "admin:alice", "-o", "json")
	if err != nil {
		t.Fatalf("audit ls -o json: %v\n%s", err, out)
	}
	var es []audit.Entry
	if err := json.Unmarshal([]byte(out), &es); err != nil || len(es) != 1 || es[0].Seq != 2 || es[0].Action != audit.ModuleDeploy ||
		es[0].Detail["version"] != "1.0.0" {
		t.Errorf("audit ls --actor admin:alice -o json: %+v, %v\n%s", es, err, out)
	}

	for _, tc := range []struct {
		args []string
		rows int
		want string
	}{
		{[]string{"--action", "policy.push"}, 1, "rev-1"},
		{[]string{"--limit", "1"}, 1, "acme"},
		{[]string{"--action", "host.add"}, 0, ""},
	} {
		out, err := auditCLI(t, append([]string{"--nats", url, "audit", "ls"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != tc.rows+1 || !strings.Contains(out, tc.want) {
			t.Errorf("audit ls %v: %v\n%s", tc.args, err, out)
		}
	}

	if _, err := auditCLI(t, "--nats", url, "audit", "ls", "--action", "module.nuke"); !errors.Is(err, audit.ErrUnknownAction) {
		t.Errorf("audit ls --action module.nuke: %v", err)
	}
	if out, err := auditCLI(t, "--nats", url, "audit", "ls", "--actor", "admin:alice", "-o", "yaml"); err != nil ||
		!strings.Contains(out, "- action: module.deploy\n") || !strings.Contains(out, "  seq: 2\n") {
		t.Errorf("audit ls -o yaml: %v\n%s", err, out)
	}
	if _, err := auditCLI(t, "--nats", url, "audit", "ls", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "table, json or yaml") {
		t.Errorf("audit ls -o xml: %v", err)
	}
}
