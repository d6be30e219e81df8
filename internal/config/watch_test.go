package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestWatchReloads(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	pools := filepath.Join(dir, "pools.yaml")
	sched := filepath.Join(dir, "scheduler.yaml")
	write := func(path, data string) {
		t.Helper()
		// Write-then-rename, as editors and config managers do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(pools, "topics:\n  job.a: a\npools:\n  a: {}\n")
	write(sched, "queue: {cap: 5}\n")

	changes := make(chan *Bundle, 10)
	errs := make(chan error, 10)
	w, err := Watch(Files{Pools: pools, Scheduler: sched}, 20*time.Millisecond,
		func(b *Bundle) { changes <- b }, func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	write(pools, "topics:\n  job.a: a\n  job.b: [b, a]\npools:\n  a: {}\n  b: {requires: [gpu]}\n")
	b := next(t, changes, errs)
	if got := b.Pools.PoolsFor("job.b"); len(got) != 2 || got[0] != "b" {
		t.Fatalf("after the change job.b → %v", got)
	}
	if b.Scheduler.Queue.Cap != 5 || b.Timeouts.Reconciler.ScanInterval != 30*time.Second {
		t.Fatalf("a reload loads every file: cap %d", b.Scheduler.Queue.Cap)
	}

	// A broken file is reported, and nothing changes.
	if err := os.WriteFile(sched, []byte("queue:\n  cap: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "line 2") {
			t.Errorf("error %v does not name the line", err)
		}
	case b := <-changes:
		t.Fatalf("a broken file was applied: %+v", b.Scheduler.Queue)
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported for a broken file")
	}
	// Fixed: applied.
	write(sched, "queue: {cap: 7}\n")
	if b := next(t, changes, errs); b.Scheduler.Queue.Cap != 7 {
		t.Fatalf("cap %d after the fix", b.Scheduler.Queue.Cap)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func next(t *testing.T, changes chan *Bundle, errs chan error) *Bundle {
	t.Helper()
	select {
	case b := <-changes:
		return b
	case err := <-errs:
		t.Fatalf("reload failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
	}
	return nil
}
