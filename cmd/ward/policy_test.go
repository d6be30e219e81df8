package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/policies"
)

// ward runs the ward binary and returns its output and exit code.
func ward(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(wardBin, args...)
	cmd.Env = append(os.Environ(), "NATS_URL=nats://127.0.0.1:1")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), exitCode(err)
}

// policyDir writes the default bundle, tests included, and extra files
// into a new directory.
func policyDir(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := safety.ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range b.Files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range extra {
		writeFile(t, filepath.Join(dir, name), data)
	}
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	blockedRule = `package ward.safety

deny contains "tenant blocked is suspended" if input.tenant_id == "blocked"
`
	blockedTest = `package ward.safety_test

import data.ward.safety

test_blocked_tenant_denied if {
	safety.deny == {"tenant blocked is suspended"} with input as object.union(job, {"tenant_id": "blocked"})
}
`
)

func TestPolicyTest(t *testing.T) {
	out, code := ward(t, "", "policy", "test", "--coverage", "../../policies")
	if code != 0 || !strings.Contains(out, "PASS    data.ward.safety_test.test_sys_destroy_denied (ward_test.rego:") ||
		!strings.Contains(out, "PASS: ") || !strings.Contains(out, "ward.rego                100.0%") {
		t.Errorf("policy test on the default bundle: exit %d\n%s", code, out)
	}

	failing := policyDir(t, map[string]string{"blocked.rego": strings.ReplaceAll(blockedRule, "suspended", "gone"),
		"blocked_test.rego": blockedTest})
	out, code = ward(t, "", "policy", "test", failing)
	if code != 1 || !strings.Contains(out, "FAIL    data.ward.safety_test.test_blocked_tenant_denied (blocked_test.rego:5)") ||
		!strings.Contains(out, "FAIL: 1 of ") {
		t.Errorf("policy test with a failing test: exit %d\n%s", code, out)
	}
	// It says why: the expression of the test that was false.
	if !strings.Contains(out, `failed at blocked_test.rego:6: safety.deny == {"tenant blocked is suspended"}`) {
		t.Errorf("policy test does not say why the test failed:\n%s", out)
	}
	out, code = ward(t, "", "policy", "test", "-o", "json", failing)
	var res struct {
		Tests []struct {
			Name, Outcome string
			FailedAt      string `json:"failed_at"`
		}
		Passed, Failed int
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.Failed != 1 || res.Passed == 0 {
		t.Errorf("policy test -o json: exit %d, %v\n%s", code, err, out)
	}
	for _, r := range res.Tests {
		if r.Outcome == "FAIL" && !strings.HasPrefix(r.FailedAt, "blocked_test.rego:6: ") {
			t.Errorf("policy test -o json: %s failed_at %q", r.Name, r.FailedAt)
		}
	}

	broken := policyDir(t, map[string]string{"blocked.rego": "package ward.safety\n\ndeny contains msg if {\n"})
	out, code = ward(t, "", "policy", "test", broken)
	if code == 0 || !strings.Contains(out, "blocked.rego:") {
		t.Errorf("policy test with a syntax error: exit %d\n%s", code, out)
	}
}

func TestPolicyEval(t *testing.T) {
	dir := policyDir(t, map[string]string{"blocked.rego": blockedRule})
	job := `{"topic": "job.chat.advanced", "tenant_id": "blocked", "module": {"name": "chat-advanced"}}`
	out, code := ward(t, job, "policy", "eval", "--input", "-", dir)
	for _, want := range []string{
		"decision:  DENY",
		"deny:      tenant blocked is suspended",
		"blocked.rego:3",
		`data.ward.safety.deny`,
		`= "tenant blocked is suspended"`,
		`"tenant_id":"blocked"`,
	} {
		// A denial exits 1.
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("policy eval: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	out, code = ward(t, job, "policy", "eval", "--input", "-", "-o", "json", dir)
	var resp struct {
		Result struct {
			Decision string
			Reasons  []string
		}
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || code != 1 || resp.Result.Decision != "DENY" ||
		len(resp.Result.Reasons) != 1 {
		t.Errorf("policy eval -o json of a denial: exit %d, %v\n%s", code, err, out)
	}
	out, code = ward(t, strings.ReplaceAll(job, "blocked", "acme"), "policy", "eval", "--input", "-", dir)
	for _, want := range []string{
		"decision:  ALLOW_WITH_CONSTRAINTS",
		`constraints: {"grants":{"env_keys":["OLLAMA_MODEL"],"services":["ollama"]}}`,
		`data.ward.safety.grants.services`,
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("policy eval: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	file := filepath.Join(t.TempDir(), "job.json")
	writeFile(t, file, `{"topic": "job.echo", "tenant_id": "acme", "bogus": 1}`)
	// An error is not a denial: it exits 2.
	if out, code := ward(t, "", "policy", "eval", "--input", file, dir); code != 2 || !strings.Contains(out, "bogus") {
		t.Errorf("policy eval of an input with an unknown field: exit %d\n%s", code, out)
	}
	if out, code := ward(t, "", "policy", "eval", "--input", file, "-o", "xml", dir); code != 2 || !strings.Contains(out, "table, json or yaml") {
		t.Errorf("policy eval -o xml: exit %d\n%s", code, out)
	}
}

// TestPolicyPushNeedsDir: push names the bundle; it does not push
// ./policies when given none.
func TestPolicyPushNeedsDir(t *testing.T) {
	out, code := ward(t, "", "policy", "push", "--unsigned")
	if code == 0 || !strings.Contains(out, "ward policy push DIR") {
		t.Errorf("policy push without a directory: exit %d\n%s", code, out)
	}
}

// submitEcho runs `ward submit --wait` for tenant and returns its output.
func submitEcho(t *testing.T, natsURL, tenant string) string {
	t.Helper()
	out, _ := exec.Command(wardBin, "submit", "--nats", natsURL, "--topic", "job.echo", "--tenant", tenant,
		"--payload", "hi", "--wait").CombinedOutput()
	return string(out)
}

// TestDevPolicyLive is the tour: ward dev watches its policy directory;
// an edited rule is enforced once `ward policy test` passes it... and
// `ward policy push` ships another one to the running kernel; a broken
// bundle is refused and the rules in force stay.
func TestDevPolicyLive(t *testing.T) {
	dir := policyDir(t, nil)
	dev, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t), "--policies", dir)
	if out := submitEcho(t, natsURL, "blocked"); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("before the rule:\n%s", out)
	}

	// Edit the watched directory: the kernel reloads it.
	writeFile(t, filepath.Join(dir, "blocked_test.rego"), blockedTest)
	writeFile(t, filepath.Join(dir, "blocked.rego"), blockedRule)
	if out, code := ward(t, "", "policy", "test", dir); code != 0 {
		t.Fatalf("policy test: exit %d\n%s", code, out)
	}
	var out string
	poll.Until(t, 90*time.Second, "the edited rule enforced", func() bool {
		out = submitEcho(t, natsURL, "blocked")
		return strings.Contains(out, "DENIED")
	})
	if !strings.Contains(out, "tenant blocked is suspended") {
		t.Fatalf("denied without the message:\n%s\n%s", out, dev.out.String())
	}
	if out := submitEcho(t, natsURL, "acme"); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("acme after the rule:\n%s", out)
	}

	// Push another bundle: a second rule, and the kernel swaps to it.
	pushed := policyDir(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest,
		"initech.rego": "package ward.safety\n\ndeny contains \"tenant initech is over budget\" if input.tenant_id == \"initech\"\n"})
	// ward dev's kernel takes bundles signed with the key in its state,
	// which push finds there without a flag.
	out, code := ward(t, "", "policy", "push", "--nats", natsURL, "--wait", "90s", pushed)
	if code != 0 || !strings.Contains(out, "pushed revision ") || !strings.Contains(out, "enforces it") {
		t.Fatalf("policy push: exit %d\n%s", code, out)
	}
	if out := submitEcho(t, natsURL, "initech"); !strings.Contains(out, "tenant initech is over budget") {
		t.Fatalf("initech after the push:\n%s", out)
	}

	// Broken bundles are refused by push, with the errors.
	broken := policyDir(t, map[string]string{"blocked.rego": "package ward.safety\n\ndeny contains msg if {\n"})
	out, code = ward(t, "", "policy", "push", "--nats", natsURL, broken)
	if code != 1 || !strings.Contains(out, "refused: the bundle does not compile") || !strings.Contains(out, "blocked.rego:") {
		t.Errorf("push of a syntax error: exit %d\n%s", code, out)
	}
	failing := policyDir(t, map[string]string{"blocked.rego": strings.ReplaceAll(blockedRule, "suspended", "gone"),
		"blocked_test.rego": blockedTest})
	out, code = ward(t, "", "policy", "push", "--nats", natsURL, failing)
	if code != 1 || !strings.Contains(out, "refused: 1 of ") || !strings.Contains(out, "test_blocked_tenant_denied") {
		t.Errorf("push of a failing test: exit %d\n%s", code, out)
	}
	out = submitEcho(t, natsURL, "blocked")
	if !strings.Contains(out, "tenant blocked is suspended") {
		t.Errorf("blocked after the refusals:\n%s", out)
	}

	out, code = ward(t, "", "policy", "status", "--nats", natsURL)
	if code != 0 || !strings.Contains(out, "kv ward_policy#") {
		t.Errorf("policy status: exit %d\n%s", code, out)
	}
	id := strings.Fields(strings.SplitN(submitEcho(t, natsURL, "blocked"), "\n", 2)[0])[1]
	out, code = ward(t, "", "jobs", "get", "--nats", natsURL, id)
	for _, want := range []string{"DENY (revision ", "deny:", "tenant blocked is suspended", "input:", "sha256:", "decided in:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("jobs get lacks %q:\n%s", want, out)
		}
	}
	dev.stop(t)
}

// wardEnv is ward with env added to the environment ($WARD_POLICY_KEY
// emptied first, and a state directory of its own, so that neither the
// machine's key nor ward dev's keys and credentials count).
func wardEnv(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(wardBin, args...)
	cmd.Env = append(append(os.Environ(), "NATS_URL=nats://127.0.0.1:1", "WARD_POLICY_KEY=", "WARD_AUTH_DIR=",
		"WARD_STATE_DIR="+t.TempDir()), env...)
	out, err := cmd.CombinedOutput()
	return string(out), exitCode(err)
}

// TestPolicySignedPush: `ward policy keygen` makes the pair; a kernel run
// with --policy-pubkey enforces what `ward policy push --signing-key`
// pushes, and refuses an unsigned push and one signed with another key
// (push and `ward policy status` say so), the rules in force staying.
func TestPolicySignedPush(t *testing.T) {
	keys, other := t.TempDir(), t.TempDir()
	out, code := ward(t, "", "policy", "keygen", "--out", keys)
	if code != 0 || !strings.Contains(out, "(EdDSA)") || !strings.Contains(out, "policy.key") {
		t.Fatalf("policy keygen: exit %d\n%s", code, out)
	}
	key, pub := filepath.Join(keys, "policy.key"), filepath.Join(keys, "policy.pub")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("policy.key: %v, %v; want mode 0600", fi, err)
	}
	if out, code := ward(t, "", "policy", "keygen", "--out", keys); code == 0 || !strings.Contains(out, "exists") {
		t.Errorf("keygen over existing keys: exit %d\n%s", code, out)
	}
	if out, code := ward(t, "", "policy", "keygen", "--out", other); code != 0 {
		t.Fatalf("policy keygen: exit %d\n%s", code, out)
	}

	natsURL := natstest.StartJetStream(t)
	addr := freeAddr(t)
	kernel := startWard(t, "safety", []string{"NATS_URL=" + natsURL}, "safety", "--listen", addr, "--metrics", "",
		"--policy-pubkey", pub)
	poll.Until(t, 60*time.Second, "the kernel answers", func() bool {
		_, code := ward(t, "", "policy", "status", "--nats", natsURL)
		return code == 0
	})
	destroy := `{"topic": "sys.destroy", "tenant_id": "acme"}`
	denied := func(what, job string) {
		t.Helper()
		out, code := ward(t, job, "policy", "eval", "--kernel", addr, "--input", "-")
		if code != 1 || !strings.Contains(out, "decision:  DENY") {
			t.Errorf("%s: exit %d\n%s", what, code, out)
		}
	}

	allowAll := t.TempDir()
	writeFile(t, filepath.Join(allowAll, "ward.rego"), "package ward.safety\n")
	out, code = wardEnv(t, nil, "policy", "push", "--nats", natsURL, allowAll)
	if code == 0 || !strings.Contains(out, "no signing key") {
		t.Errorf("push without a key: exit %d\n%s", code, out)
	}
	out, code = wardEnv(t, nil, "policy", "push", "--nats", natsURL, "--unsigned", "--wait", "60s", allowAll)
	if code != 1 || !strings.Contains(out, "unsigned") || !strings.Contains(out, "REFUSED it") || !strings.Contains(out, "not signed") {
		t.Errorf("unsigned push: exit %d\n%s", code, out)
	}
	denied("after the unsigned push", destroy)
	out, code = wardEnv(t, nil, "policy", "status", "--nats", natsURL)
	if code != 0 || !strings.Contains(out, "safety: bundle signature: the bundle is not signed") {
		t.Errorf("policy status after the unsigned push: exit %d\n%s", code, out)
	}
	out, code = wardEnv(t, []string{"WARD_POLICY_KEY=" + filepath.Join(other, "policy.key")}, "policy", "push", "--nats", natsURL,
		"--wait", "60s", allowAll)
	if code != 1 || !strings.Contains(out, "REFUSED it") || !strings.Contains(out, "this kernel trusts key") {
		t.Errorf("push signed with another key ($WARD_POLICY_KEY): exit %d\n%s", code, out)
	}
	denied("after the push signed with another key", destroy)

	// The legitimate path.
	blocked := policyDir(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest})
	out, code = wardEnv(t, nil, "policy", "push", "--nats", natsURL, "--signing-key", key, "--wait", "60s", blocked)
	if code != 0 || !strings.Contains(out, "signed with key ") || !strings.Contains(out, "enforces it") {
		t.Fatalf("signed push: exit %d\n%s", code, out)
	}
	denied("the signed bundle's rule", `{"topic": "job.echo", "tenant_id": "blocked"}`)
	out, code = wardEnv(t, nil, "policy", "status", "--nats", natsURL)
	if code != 0 || !strings.Contains(out, "kv ward_policy#") || strings.Contains(out, "bundle signature") {
		t.Errorf("policy status after the signed push: exit %d\n%s", code, out)
	}
	kernel.stop(t)
}

// TestPolicyImpact: before a bundle goes live, `ward policy impact` says
// which recent decisions it would flip: a bundle that denies echo to
// initech names initech's echo jobs (ALLOW → DENY, the new message); the bundle
// in force names none; -o json carries the same; push shows it before it
// pushes, and nothing of impact puts a bundle in force.
func TestPolicyImpact(t *testing.T) {
	dir := policyDir(t, nil)
	_, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t), "--policies", dir)
	var ids []string
	for range 2 {
		out := submitEcho(t, natsURL, "initech")
		if !strings.Contains(out, "SUCCEEDED") {
			t.Fatalf("initech's echo:\n%s", out)
		}
		ids = append(ids, strings.Fields(out)[1])
	}
	if out := submitEcho(t, natsURL, "globex"); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("globex's echo:\n%s", out)
	}

	out, code := ward(t, "", "policy", "impact", "--nats", natsURL, dir)
	if code != 0 || !strings.Contains(out, "no recent decision would change") || !strings.Contains(out, "3 recent decisions evaluated") {
		t.Errorf("impact of the bundle in force: exit %d\n%s", code, out)
	}
	deny := policyDir(t, map[string]string{"initech.rego": "package ward.safety\n\ndeny contains \"initech may not echo\" if {\n\tinput.tenant_id == \"initech\"\n\tinput.topic == \"job.echo\"\n}\n"})
	out, code = ward(t, "", "policy", "impact", "--nats", natsURL, deny)
	if code != 0 || !regexp.MustCompile(`(?m)^initech\s+ALLOW\s+DENY\s+2\s+initech may not echo\s+job\.echo\s+`).MatchString(out) ||
		!strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) || strings.Contains(out, "globex") {
		t.Errorf("impact of a bundle that denies initech's echo: exit %d\n%s", code, out)
	}
	out, code = ward(t, "", "policy", "impact", "--nats", natsURL, deny, "-o", "json")
	var s struct {
		Evaluated int64
		Flips     []struct {
			TenantID string `json:"tenant_id"`
			Count    int64
		}
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || s.Evaluated != 3 || len(s.Flips) != 1 || s.Flips[0].TenantID != "initech" || s.Flips[0].Count != 2 {
		t.Errorf("impact -o json: exit %d, %v\n%s", code, err, out)
	}
	// Nothing was put in force: initech still echoes.
	if out := submitEcho(t, natsURL, "initech"); !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("initech's echo after impact:\n%s", out)
	}
	// push shows the impact, then pushes (no work of that kind runs now).
	out, code = ward(t, "", "policy", "push", "--nats", natsURL, "--wait", "90s", deny)
	if code != 0 || !strings.Contains(out, "initech may not echo") || !strings.Contains(out, "pushed revision ") ||
		strings.Index(out, "initech may not echo") > strings.Index(out, "pushed revision ") {
		t.Errorf("push: exit %d, the impact not shown before the push\n%s", code, out)
	}
	if out := submitEcho(t, natsURL, "initech"); !strings.Contains(out, "initech may not echo") {
		t.Errorf("initech's echo after the push:\n%s", out)
	}
}
