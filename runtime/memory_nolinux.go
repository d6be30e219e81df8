//go:build unix && !linux

package runtime

const mapNoReserve = 0

func adviseHuge([]byte) {}
