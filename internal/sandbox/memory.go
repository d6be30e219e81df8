package sandbox

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs one instance's linear memory and enforces its limit:
// a grow past limit fails (the guest sees memory.grow return -1), and the
// refusal is remembered so that the run fails with reason.MemoryLimit even if
// the guest says nothing.
//
// On Unix the memory is one anonymous mapping of limit bytes, reserved but
// not committed: growing never copies, and a fresh instance's memory costs
// page faults on the pages it touches rather than a zeroed allocation on
// the Go heap. Unmapping memory that a guest still runs on would crash the
// process, so Free only unmaps once no guest call is inside (enter/leave).
type linearMemory struct {
	limit uint64

	mu      sync.Mutex // guards the 5 following fields
	buf     []byte     // the whole reservation (mmap) or the live slice (heap)
	mapped  bool
	active  int  // guest calls inside the memory
	freed   bool // wazero released it
	refused bool // a grow past limit was refused
	size    uint64
}

// allocator hands wazero a linearMemory of the given limit, and keeps it so
// the run can see its size and whether a grow was refused.
type allocator struct {
	limit uint64
	mem   *linearMemory
}

// Allocate implements experimental.MemoryAllocator.
func (a *allocator) Allocate(capacity, maxBytes uint64) experimental.LinearMemory {
	limit := min(a.limit, maxBytes)
	m := &linearMemory{limit: limit}
	if buf, ok := mmapReserve(limit); ok {
		m.buf, m.mapped = buf, true
	} else {
		m.buf = make([]byte, 0, min(capacity, limit))
	}
	a.mem = m
	return m
}

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.limit || m.freed {
		m.refused = m.refused || size > m.limit
		return nil
	}
	m.size = size
	if m.mapped {
		return m.buf[:size:size]
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		m.buf = append(m.buf, make([]byte, size-uint64(len(m.buf)))...)
	}
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freed = true
	m.release()
}

// enter marks a guest call as running on the memory.
func (m *linearMemory) enter() {
	m.mu.Lock()
	m.active++
	m.mu.Unlock()
}

// leave ends what enter started.
func (m *linearMemory) leave() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active--
	m.release()
}

// release unmaps the memory once it is freed and unused. m.mu is held.
func (m *linearMemory) release() {
	if m.freed && m.active == 0 && m.buf != nil {
		if m.mapped {
			mmapRelease(m.buf)
		}
		m.buf = nil
	}
}

// state returns the memory's size and whether a grow was refused.
func (m *linearMemory) state() (size uint64, refused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.size, m.refused
}
