package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestPolicyHistoryRollback: push A (which denies the tenant blocked),
// then B (the default bundle); history lists both, B in force; a rollback
// to A shows its impact, writes it, and waits until the kernel, which
// verifies signatures, enforces A again: the blocked tenant's job is
// denied once more. The history then shows the rollback in force. A
// revision the bucket does not keep is refused, and the revision in force
// is unchanged.
func TestPolicyHistoryRollback(t *testing.T) {
	keys := t.TempDir()
	if out, code := ward(t, "", "policy", "keygen", "--out", keys); code != 0 {
		t.Fatalf("policy keygen: exit %d\n%s", code, out)
	}
	key, pub := filepath.Join(keys, "policy.key"), filepath.Join(keys, "policy.pub")
	natsURL := natstest.StartJetStream(t)
	addr := freeAddr(t)
	kernel := startWard(t, "safety", []string{"NATS_URL=" + natsURL}, "safety", "--listen", addr, "--metrics", "",
		"--policy-pubkey", pub)
	poll.Until(t, 60*time.Second, "the kernel answers", func() bool {
		_, code := ward(t, "", "policy", "status", "--nats", natsURL)
		return code == 0
	})
	blockedJob := `{"topic": "job.echo", "tenant_id": "blocked"}`
	decision := func(what string) string {
		t.Helper()
		out, _ := ward(t, blockedJob, "policy", "eval", "--kernel", addr, "--input", "-")
		m := regexp.MustCompile(`decision:\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no decision\n%s", what, out)
		}
		return m[1]
	}

	out, code := ward(t, "", "policy", "history", "--nats", natsURL)
	if code != 0 || !strings.Contains(out, "no bundle was pushed to ward_policy") {
		t.Errorf("history before any push: exit %d\n%s", code, out)
	}
	a := policyDir(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest})
	b := policyDir(t, nil)
	for _, dir := range []string{a, b} {
		if out, code := wardEnv(t, nil, "policy", "push", "--nats", natsURL, "--signing-key", key, "--wait", "60s", dir); code != 0 ||
			!strings.Contains(out, "enforces it") {
			t.Fatalf("push %s: exit %d\n%s", dir, code, out)
		}
	}
	if d := decision("B in force"); d != "ALLOW" {
		t.Fatalf("B in force: the blocked tenant's job is %s", d)
	}

	type entry struct {
		KVRevision uint64 `json:"kv_revision"`
		Revision   string `json:"revision"`
		PushedBy   string `json:"pushed_by"`
		KeyID      string `json:"key_id"`
		RollbackOf uint64 `json:"rollback_of"`
		InForce    bool   `json:"in_force"`
	}
	history := func() []entry {
		t.Helper()
		out, code := ward(t, "", "policy", "history", "--nats", natsURL, "-o", "json")
		var h []entry
		if err := json.Unmarshal([]byte(out), &h); err != nil || code != 0 {
			t.Fatalf("history -o json: exit %d, %v\n%s", code, err, out)
		}
		return h
	}
	h := history()
	if len(h) != 2 || !h[0].InForce || h[1].InForce || h[0].KeyID == "" || !strings.Contains(h[1].PushedBy, "insecure") {
		t.Fatalf("history after two pushes: %+v", h)
	}
	revA, revB := h[1], h[0]
	out, code = ward(t, "", "policy", "history", "--nats", natsURL)
	if code != 0 || !regexp.MustCompile(fmt.Sprintf(`(?m)^#%d\s+%s\s+.*key %s\s+\d+ \(\d+ tests?\)\s+in force$`, revB.KVRevision, revB.Revision, revB.KeyID)).MatchString(out) ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^#%d\s+%s\s+.*\s-$`, revA.KVRevision, revA.Revision)).MatchString(out) {
		t.Errorf("history table: exit %d\n%s", code, out)
	}

	out, code = ward(t, "", "policy", "rollback", "--nats", natsURL, "99")
	if code == 0 || !strings.Contains(out, "no such revision in the policy history: #99") || !strings.Contains(out, "keeps #") {
		t.Errorf("rollback to a revision not kept: exit %d\n%s", code, out)
	}
	if out, code := ward(t, "", "policy", "rollback", "--nats", natsURL, "x"); code == 0 || !strings.Contains(out, "not a bucket revision") {
		t.Errorf("rollback x: exit %d\n%s", code, out)
	}
	out, code = ward(t, "", "policy", "rollback", "--nats", natsURL, "--wait", "60s", fmt.Sprint(revA.KVRevision))
	if code != 0 || !strings.Contains(out, "recent decisions evaluated") ||
		!strings.Contains(out, fmt.Sprintf("rolled back to #%d: revision %s (signed with key %s)", revA.KVRevision, revA.Revision, revA.KeyID)) ||
		!strings.Contains(out, "enforces it") {
		t.Fatalf("rollback to A: exit %d\n%s", code, out)
	}
	if d := decision("A rolled back to"); d != "DENY" {
		t.Errorf("after the rollback to A: the blocked tenant's job is %s, want DENY", d)
	}
	h = history()
	if len(h) != 3 || !h[0].InForce || h[0].RollbackOf != revA.KVRevision || h[0].Revision != revA.Revision || !strings.Contains(h[0].PushedBy, " (") {
		t.Errorf("history after the rollback: %+v", h)
	}
	out, code = ward(t, "", "policy", "history", "--nats", natsURL)
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^#%d\s+%s\s.*in force; rollback to #%d$`, h[0].KVRevision, revA.Revision, revA.KVRevision)).MatchString(out) {
		t.Errorf("history table after the rollback: exit %d\n%s", code, out)
	}
	out, code = ward(t, "", "policy", "rollback", "--nats", natsURL, "--wait", "0", fmt.Sprint(h[0].KVRevision))
	if code != 0 || !strings.Contains(out, "is in force already: nothing was written") {
		t.Errorf("rollback to the revision in force: exit %d\n%s", code, out)
	}
	kernel.stop(t)
}
