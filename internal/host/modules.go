package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ward-run/ward/internal/sandbox"
)

// ReadManifests reads the manifest beside each module of dir: <name>.yaml
// for <name>.wasm. A module without one has no entry.
func ReadManifests(dir string) (map[string]*sandbox.Manifest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("host: manifests: %w", err)
	}
	out := map[string]*sandbox.Manifest{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".wasm")
		if !ok || e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, name+".yaml"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("host: manifest of %s: %w", name, err)
		}
		m, err := sandbox.ParseManifest(raw)
		if err != nil {
			return nil, fmt.Errorf("host: %s.yaml: %w", name, err)
		}
		if m.Name != name {
			return nil, fmt.Errorf("host: %s.yaml names module %q, not %q", name, m.Name, name)
		}
		out[name] = m
	}
	return out, nil
}

// LoadModules compiles every module, by name, with its manifest (defaults
// for one without), two at a time: compiling a Go module takes seconds, and
// wazero compiles each one's functions in parallel too.
func LoadModules(ctx context.Context, rt *sandbox.Runtime, wasm map[string][]byte, manifests map[string]*sandbox.Manifest) (map[string]*sandbox.Module, error) {
	var (
		mu   sync.Mutex
		mods = make(map[string]*sandbox.Module, len(wasm))
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 2)
	)
	for name, b := range wasm {
		man := manifests[name]
		if man == nil {
			man = &sandbox.Manifest{Name: name}
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			m, err := rt.Load(ctx, b, man)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("module %s: %w", name, err))
				return
			}
			mods[name] = m
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mods, nil
}
