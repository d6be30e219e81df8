// Package warm compiles every worker module under modules/ into the wazero
// cache the test binaries of the machine share (wasmtest.CacheDir).
//
// `make test` runs this package without -race before the race-instrumented
// suite: under -race, compiling the repo modules takes minutes of CPU on a
// fresh machine; here it takes seconds, and the suite then finds them
// compiled. It is a test, not a program, because test binaries key the
// cache by the version wazero reports in a test binary ("dev"), which a
// program's is not.
package warm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestModulesCompile: every module under modules/ builds as the tests
// build it (wasmtest) and compiles in the sandbox, into the shared cache.
func TestModulesCompile(t *testing.T) {
	manifests, err := filepath.Glob("../../../../modules/*/manifest.yaml")
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no module manifests under modules/: %v", err)
	}
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, path := range manifests {
		name := filepath.Base(filepath.Dir(path))
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			man, err := sandbox.ParseManifest(raw)
			if err != nil {
				t.Fatal(err)
			}
			pkg := "github.com/ward-run/ward/modules/" + name
			var wasm []byte
			if man.ABI == sandbox.ABIReactor {
				wasm = wasmtest.BuildReactor(t, pkg)
			} else {
				wasm = wasmtest.Build(t, pkg)
			}
			m, err := rt.Load(ctx, wasm, man)
			if err != nil {
				t.Fatalf("%s does not load: %v", name, err)
			}
			m.Close()
		})
	}
}
