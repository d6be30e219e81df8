package sandbox

import "context"

// What the external tests (package sandbox_test) read of the internals.

// Compile is Load with a manifest that names the module and leaves the rest
// to defaults.
func (r *Runtime) Compile(ctx context.Context, name string, wasm []byte) (*Module, error) {
	return r.Load(ctx, wasm, &Manifest{Name: name})
}

// Interruptible reports whether runs are stopped in ward.yield, which the
// rewrite made the module call; false means wazero's
// WithCloseOnContextDone.
func (m *Module) Interruptible() bool { return m.code.interruptible }

// CompiledModules returns how many compiled modules the Runtime holds:
// one per distinct module bytes that an open Module (or a Load under way)
// uses.
func (r *Runtime) CompiledModules() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.compiled)
}

// IdleInstances returns how many warm instances the pool holds now.
func (r *Runtime) IdleInstances() int { return r.pool.idle() }
