package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ward-run/ward/policies"
)

// TestLargeResult is issue 14 as a user meets it: `ward submit --wait` of
// an echo job whose result is 3 MiB, three NATS messages' worth, prints
// it whole and exits 0, and `ward jobs get --result` prints it too (the
// client reads it by pointer from the tenant's result bucket).
func TestLargeResult(t *testing.T) {
	// Tenant bigco's payload cap is 8 MiB (the default is 1 MiB).
	data, err := policies.FS.ReadFile("data.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withBig := strings.Replace(string(data), "\ntenants:\n", "\ntenants:\n  bigco:\n    max_payload_bytes: 8388608\n", 1)
	if withBig == string(data) {
		t.Fatal("data.yaml has no tenants: line: update this test")
	}
	_, natsURL := startDev(t, []string{"REDIS_URL="}, "--modules", echoDir(t),
		"--policies", policyDir(t, map[string]string{"data.yaml": withBig}))

	var b strings.Builder
	for i := 0; b.Len() < 3<<20; i++ {
		fmt.Fprintf(&b, "line %07d of a result too large for one message\n", i)
	}
	payload := b.String()
	file := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(file, []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(wardBin, "submit", "--nats", natsURL, "--topic", "job.echo", "--tenant", "bigco",
		"--payload", "@"+file, "--wait", "--timeout", "60s").CombinedOutput()
	if err != nil {
		t.Fatalf("ward submit: %v\n%.2000s", err, out)
	}
	if !strings.Contains(string(out), "SUCCEEDED") || !strings.Contains(string(out), "result:\n"+payload+"\n") {
		t.Fatalf("ward submit printed %d bytes, not the %d-byte result:\n%.2000s", len(out), len(payload), out)
	}
	id := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])[1]

	out, err = exec.Command(wardBin, "jobs", "get", "--nats", natsURL, "--result", id).CombinedOutput()
	if err != nil {
		t.Fatalf("ward jobs get --result: %v\n%.2000s", err, out)
	}
	for _, want := range []string{"nats-os://WARD_RES_bigco/" + id + "-1", "result data:\n" + payload + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("ward jobs get --result lacks %.80q:\n%.2000s", want, out)
		}
	}
}
