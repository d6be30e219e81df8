//go:build !unix

package runtime

func mmapReserve(uint64) ([]byte, bool) { return nil, false }

func mmapRelease([]byte) {}
