//go:build unix

package sandbox

import "syscall"

// mmapReserve maps n bytes of zeroed, private memory without committing it.
func mmapReserve(n uint64) ([]byte, bool) {
	if n == 0 || n > 1<<32 {
		return nil, false
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil, false
	}
	adviseHuge(b)
	return b[:0], true
}

func mmapRelease(b []byte) { _ = syscall.Munmap(b[:cap(b)]) }
