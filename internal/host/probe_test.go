package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	idle, total, ok := parseProcStat([]byte("cpu  100 0 50 800 50 0 0 0 30 0\ncpu0 1 2 3 4\n"))
	if !ok || idle != 850 || total != 1000 {
		t.Fatalf("idle %d total %d ok %v", idle, total, ok)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu a b c d e"} {
		if _, _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCPUSamplerDelta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := cpuSampler{path: path}
	write("cpu 100 0 0 900 0 0 0 0\n")
	if got := c.sample(); got != 10 {
		t.Fatalf("since boot: %v, want 10", got)
	}
	write("cpu 175 0 0 925 0 0 0 0\n") // +75 busy, +25 idle
	if got := c.sample(); got != 75 {
		t.Fatalf("delta: %v, want 75", got)
	}
	c.path = filepath.Join(t.TempDir(), "absent")
	if got := c.sample(); got != 0 {
		t.Fatalf("no /proc: %v", got)
	}
}

func TestReadMemInfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(path, []byte("MemTotal:       1000 kB\nMemFree: 10 kB\nMemAvailable:    500 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if total, avail := readMemInfo(path); total != 1000*1024 || avail != 500*1024 {
		t.Fatalf("total %d avail %d", total, avail)
	}
}
