// Command warmprog compiles the modules of a directory (modules/build)
// into the wazero cache the tests share, as a program: wazero keys its
// cache by the version it reports, which in a program is its module's
// version (what the ward binary the CLI tests run reports) and in a test
// binary is "dev" (what package warm fills). The ward binary of those
// tests is built with -race, under which compiling the repo modules takes
// minutes of CPU; compiled here first, without it, they take seconds.
// `make test` runs it after package warm.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: warmprog MODULES_DIR")
		os.Exit(2)
	}
	if err := warm(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "warmprog:", err)
		os.Exit(1)
	}
}

func warm(dir string) (err error) {
	cache, err := wasmtest.SharedCacheDir()
	if err != nil {
		return err
	}
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: cache})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rt.Close(ctx); err == nil {
			err = cerr
		}
	}()
	wasm, manifests, err := assembly.ReadModuleDir(dir)
	if err != nil {
		return err
	}
	mods, err := host.LoadModules(ctx, rt, wasm, manifests)
	if err != nil {
		return err
	}
	for _, m := range mods {
		m.Close()
	}
	fmt.Printf("compiled %d modules of %s into %s\n", len(mods), dir, cache)
	return nil
}
