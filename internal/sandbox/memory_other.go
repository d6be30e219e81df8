//go:build !unix

package sandbox

func mmapReserve(uint64) ([]byte, bool) { return nil, false }

func mmapRelease([]byte) {}
