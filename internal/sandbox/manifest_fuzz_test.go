package sandbox_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/internal/sandbox"
)

// FuzzParseManifest feeds ParseManifest arbitrary YAML. A manifest it
// accepts holds what Validate promises (a name, a known ABI and
// isolation, no pooled command, limits from 0 to 4 GiB of memory and at
// most a TiB of input and output) and writes out as YAML that parses back
// to the same manifest; one it refuses is an error that says it is the
// manifest's, and no manifest.
func FuzzParseManifest(f *testing.F) {
	paths, _ := filepath.Glob("../../modules/*/manifest.yaml")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"name: x\nversion: 1\nabi: wasi-command\nisolation: fresh\n",
		"name: chat-advanced\nabi: ward-reactor-v1\nisolation: pooled\ncapabilities:\n  http_hosts: [\"*:11434\", \"*.example.com\"]\n  read_only_dirs: [\"*\"]\n  env_keys: [A]\n  services: [ollama]\nlimits: {memory: 4GiB, time: 1h30m, max_input: 1024, max_output: 7 B}\n",
		"name: r\ntopic: job.r\npool: gpu\nrequires: [gpu, cuda]\n",
		"name: x\nlimits: {memory: 1099511627776}\n",
		"name: x\nlimits: {time: -1s, max_input: 1TiB0}\n",
		"name: x\nabi: wasi-command\nisolation: pooled\n",
		"name: &a x\nversion: *a\n",
		"{}",
		"name: [x]\n",
		"name: x\nlimits:\n  memory: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := sandbox.ParseManifest(data)
		if err != nil {
			if m != nil {
				t.Fatalf("a manifest and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "sandbox: manifest") {
				t.Fatalf("the error does not say it is the manifest's: %v", err)
			}
			return
		}
		checkManifest(t, m)
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatalf("an accepted manifest does not write out: %v", err)
		}
		m2, err := sandbox.ParseManifest(out)
		if err != nil {
			t.Fatalf("a manifest written out does not parse back: %v\n%s", err, out)
		}
		if out2, err := yaml.Marshal(m2); err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("a manifest changes through YAML (%v):\n%s\nthen\n%s", err, out, out2)
		}
	})
}

func checkManifest(t *testing.T, m *sandbox.Manifest) {
	t.Helper()
	if err := m.Validate(); err != nil {
		t.Fatalf("ParseManifest accepted what Validate refuses: %v", err)
	}
	l := m.Limits
	switch {
	case m.Name == "":
		t.Fatal("accepted without a name")
	case m.ABI != "" && m.ABI != sandbox.ABICommand && m.ABI != sandbox.ABIReactor:
		t.Fatalf("accepted abi %q", m.ABI)
	case m.Isolation != "" && m.Isolation != sandbox.Fresh && m.Isolation != sandbox.Pooled:
		t.Fatalf("accepted isolation %q", m.Isolation)
	case m.ABI == sandbox.ABICommand && m.Isolation == sandbox.Pooled:
		t.Fatal("accepted a pooled command")
	case l.Memory < 0 || l.Memory > 4<<30:
		t.Fatalf("accepted memory %d", l.Memory)
	case l.Time < 0 || l.MaxInput < 0 || l.MaxOutput < 0 || l.MaxInput > 1<<40 || l.MaxOutput > 1<<40:
		t.Fatalf("accepted limits %+v", l)
	}
}

// FuzzParseByteSize: a size it accepts is 0 to 1 TiB, and reads back the
// same written as a plain number of bytes.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"0", "4096", "1KiB", "64MiB", " 2 GiB ", "10MB", "7B", "1024GiB", "1025GiB", "-1", "1.5MiB", "0x10", "+5", "MiB", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := sandbox.ParseByteSize(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("%q: %d and an error", s, v)
			}
			return
		}
		if v < 0 || v > 1<<40 {
			t.Fatalf("%q: %d accepted, out of 0 to 1 TiB", s, v)
		}
		if back, err := sandbox.ParseByteSize(strconv.FormatInt(int64(v), 10)); err != nil || back != v {
			t.Fatalf("%q is %d, which reads back as %d, %v", s, v, back, err)
		}
	})
}
