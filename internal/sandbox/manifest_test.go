package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/sandbox"
)

func TestParseManifest(t *testing.T) {
	m, err := sandbox.ParseManifest([]byte(`
name: chat-advanced
version: 1.2.0
abi: ward-reactor-v1
isolation: pooled
capabilities:
  http_hosts: ["*:11434"]
  env_keys: [OLLAMA_URL, OLLAMA_MODEL]
limits:
  memory: 64MiB
  time: 2m
  max_input: 512KiB
  max_output: 1048576
`))
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Limits{Memory: 64 << 20, Time: sandbox.Duration(2 * time.Minute), MaxInput: 512 << 10, MaxOutput: 1 << 20}
	if m.Name != "chat-advanced" || m.ABI != sandbox.ABIReactor || m.Isolation != sandbox.Pooled || m.Limits != want ||
		len(m.Capabilities.EnvKeys) != 2 || m.Capabilities.HTTPHosts[0] != "*:11434" {
		t.Fatalf("%+v", m)
	}

	for name, tc := range map[string]struct{ yaml, err string }{
		"no name":        {"version: 1", "name is required"},
		"unknown field":  {"name: x\nmemory: 1MiB", "field memory not found"},
		"bad abi":        {"name: x\nabi: wasm", `abi "wasm"`},
		"bad isolation":  {"name: x\nisolation: warm", `isolation "warm"`},
		"pooled command": {"name: x\nabi: wasi-command\nisolation: pooled", "cannot be pooled"},
		"bad size":       {"name: x\nlimits: {memory: lots}", "line 2"},
		"bad duration":   {"name: x\nlimits:\n  time: forever", "line 3"},
		"too much":       {"name: x\nlimits: {memory: 8GiB}", "over 4 GiB"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sandbox.ParseManifest([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]sandbox.ByteSize{"0": 0, "4096": 4096, "1KiB": 1024, "64MiB": 64 << 20, "2 GiB": 2 << 30, "10MB": 10 << 20, "7B": 7} {
		if got, err := sandbox.ParseByteSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1TiB0", "MiB", "1.5MiB"} {
		if _, err := sandbox.ParseByteSize(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}
