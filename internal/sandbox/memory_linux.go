package sandbox

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE

// adviseHuge asks for transparent huge pages: a fresh Go instance touches a
// few MiB at once (its data, then its heap), and faulting them in 2 MiB at
// a time instead of 4 KiB halves the cost of a fresh instance. A kernel
// with THP off ignores it.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
