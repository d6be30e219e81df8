//go:build unix && !linux

package sandbox

const mapNoReserve = 0

func adviseHuge([]byte) {}
