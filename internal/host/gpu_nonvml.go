//go:build !cgo || !linux

package host

import "errors"

// openNVML: NVML needs cgo on Linux; this build has nvidia-smi only.
func openNVML() (gpuSource, error) {
	return nil, errors.New("not in this build (needs cgo on linux)")
}
