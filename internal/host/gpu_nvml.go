//go:build cgo && linux

package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlSource reads GPUs through libnvidia-ml, loaded at run time: the
// binary runs where the library is absent, and openNVML says so.
type nvmlSource struct{ lib nvml.Interface }

func openNVML() (_ gpuSource, err error) {
	// The library panics on some broken installs instead of returning.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, errors.New(nvml.ErrorString(ret))
	}
	return &nvmlSource{lib: lib}, nil
}

func (s *nvmlSource) name() string { return "nvml" }
func (s *nvmlSource) close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %s", nvml.ErrorString(ret))
	}
	return nil
}

func (s *nvmlSource) read(context.Context) ([]gpuInfo, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: device count: %s", nvml.ErrorString(ret))
	}
	gpus := make([]gpuInfo, 0, n)
	for i := range n {
		dev, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		var g gpuInfo
		if name, ret := dev.GetName(); ret == nvml.SUCCESS {
			g.Model = name
		}
		if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryMB = mem.Total / (1 << 20)
		}
		if u, ret := dev.GetUtilizationRates(); ret == nvml.SUCCESS {
			g.Utilization, g.UtilKnown = float64(u.Gpu), true
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}
