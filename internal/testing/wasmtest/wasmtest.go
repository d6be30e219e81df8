// Package wasmtest builds Go programs into WebAssembly (GOOS=wasip1
// GOARCH=wasm) for tests.
//
// Builds go through the go command, so its build cache keeps repeat builds
// cheap; within one test binary, each package is built only once.
package wasmtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	mu    sync.Mutex            // guards the 2 following fields
	built = map[string][]byte{} // by working directory and package
	gobin string
)

// Build compiles pkg for wasip1/wasm and returns the module's bytes. pkg is
// an import path ("github.com/ward-run/ward/modules/echo") or a directory
// relative to the calling test's package directory ("./testdata/loop"). The
// test fails with the compiler's output if the build fails.
func Build(t testing.TB, pkg string) []byte {
	t.Helper()
	return bytes.Clone(build(t, pkg, false))
}

// BuildReactor is like Build with -buildmode=c-shared: the module is a WASI
// reactor (_initialize and the package's go:wasmexport functions).
func BuildReactor(t testing.TB, pkg string) []byte {
	t.Helper()
	return bytes.Clone(build(t, pkg, true))
}

// BuildReactorX is like BuildReactor with -ldflags "-X <set>" for each
// set ("main.version=2"): one package, modules that differ.
func BuildReactorX(t testing.TB, pkg string, sets ...string) []byte {
	t.Helper()
	return bytes.Clone(build(t, pkg, true, sets...))
}

// BuildFile is like Build but writes the module into t.TempDir() and returns
// its path.
func BuildFile(t testing.TB, pkg string) string {
	t.Helper()
	wasm := build(t, pkg, false)
	path := filepath.Join(t.TempDir(), filepath.Base(pkg)+".wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatalf("wasmtest: %v", err)
	}
	return path
}

// CacheDir returns a wazero compilation cache directory shared by every
// test binary of the machine (under os.TempDir), so that each module's
// machine code is compiled once, not once per test package. wazero keys
// its entries by module bytes and wazero version, and writes them
// atomically, so concurrent test processes may share it. Entries older
// than two days are removed, once per test binary: every rebuilt module
// adds one.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir, err := SharedCacheDir()
	if err != nil {
		t.Fatalf("wasmtest: %v", err)
	}
	return dir
}

// SharedCacheDir is CacheDir for a TestMain, which has no testing.TB.
func SharedCacheDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "ward-test-wazero-cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	pruneOnce.Do(func() {
		old := time.Now().Add(-48 * time.Hour)
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil && info.ModTime().Before(old) {
					_ = os.Remove(path)
				}
			}
			return nil
		})
	})
	return dir, nil
}

var pruneOnce sync.Once

func build(t testing.TB, pkg string, reactor bool, sets ...string) []byte {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("wasmtest: %v", err)
	}
	key := fmt.Sprintf("%s\x00%s\x00%v\x00%q", wd, pkg, reactor, sets)

	// Builds are serialized: they are CPU-bound, and it makes each package
	// build once however many tests ask for it in parallel.
	mu.Lock()
	defer mu.Unlock()
	if wasm, ok := built[key]; ok {
		return wasm
	}
	if gobin == "" {
		gobin = findGo(t)
	}
	out := filepath.Join(t.TempDir(), "module.wasm")
	// -buildvcs=false: a module's bytes are its source's alone, not the
	// checkout's state too (its revision, "vcs.modified" when any file is
	// changed or untracked), whatever the user's Go settings (GOFLAGS): the
	// shared wazero cache, keyed by the bytes, then finds a module compiled
	// by `make modules` (which builds with the same flags) or by another
	// test package however the tree changes meanwhile.
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out}
	if reactor {
		args = append(args, "-buildmode=c-shared")
	}
	if len(sets) > 0 {
		args = append(args, "-ldflags", "-X "+strings.Join(sets, " -X "))
	}
	cmd := exec.Command(gobin, append(args, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wasmtest: go build %s: %v\n%s", pkg, err, msg)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("wasmtest: %v", err)
	}
	built[key] = wasm
	return wasm
}

// findGo prefers the go command of the toolchain that `go env GOROOT`
// reports, so that tests build with the same Go as the one running them.
func findGo(t testing.TB) string {
	t.Helper()
	onPath, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("wasmtest: no go command on PATH: %v", err)
	}
	root, err := exec.Command(onPath, "env", "GOROOT").Output()
	if err != nil {
		return onPath
	}
	candidate := filepath.Join(strings.TrimSpace(string(root)), "bin", "go")
	if _, err := os.Stat(candidate); err != nil {
		return onPath
	}
	return candidate
}
