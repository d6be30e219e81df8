package host

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// gpuInfo is one GPU as a probe read it. Fields the driver does not
// report ("[N/A]") are zero; UtilKnown says whether Utilization was read.
type gpuInfo struct {
	Model       string
	MemoryMB    uint64
	Utilization float64 // 0–100
	UtilKnown   bool
}

// gpuSource reads the GPUs of this machine.
type gpuSource interface {
	name() string
	read(ctx context.Context) ([]gpuInfo, error)
	close() error
}

// GPUProbe reports the machine's NVIDIA GPUs in every heartbeat:
// capabilities `gpu` and `gpu:nvidia`, labels gpu.count, gpu.model and
// gpu.memory_mb (of the first GPU), type "gpu", and gpu_utilization as the
// busiest GPU's utilization — a job placed here lands on a machine whose
// most loaded GPU is that busy. It reads NVIDIA's management library
// (NVML, loaded at run time) and falls back to `nvidia-smi`. On a machine
// with neither it reports nothing, and says why once.
type GPUProbe struct {
	src gpuSource
	log *slog.Logger
}

// NewGPUProbe finds a GPU source: NVML first, then nvidia-smi on PATH.
func NewGPUProbe(log *slog.Logger) *GPUProbe {
	if log == nil {
		log = slog.Default()
	}
	p := &GPUProbe{log: log}
	var reasons []string
	if src, err := openNVML(); err == nil {
		p.src = src
	} else {
		reasons = append(reasons, "NVML: "+err.Error())
		if path, err := exec.LookPath("nvidia-smi"); err == nil {
			p.src = &smiSource{path: path}
		} else {
			reasons = append(reasons, "nvidia-smi: not on PATH")
		}
	}
	if p.src == nil {
		log.Info("no GPU: the host reports no gpu capability", "why", strings.Join(reasons, "; "))
	} else {
		log.Info("GPU probe", "source", p.src.name())
	}
	return p
}

// Refresh and Run do nothing: the probe reads the GPUs at every heartbeat.
func (p *GPUProbe) Refresh(ctx context.Context) {}

// Run does nothing (see Refresh).
func (p *GPUProbe) Run(ctx context.Context) {}

// Close releases NVML.
func (p *GPUProbe) Close() {
	if p.src != nil {
		if err := p.src.close(); err != nil {
			p.log.Warn("GPU probe close", "source", p.src.name(), "err", err)
		}
	}
}

// Observe adds what the GPUs report to hb.
func (p *GPUProbe) Observe(ctx context.Context, hb *wardv1.Heartbeat) {
	if p.src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	gpus, err := p.src.read(ctx)
	if err != nil {
		p.log.Warn("GPU probe failed", "source", p.src.name(), "err", err)
		return
	}
	applyGPUs(hb, gpus)
}

// applyGPUs writes gpus into hb. No GPU leaves hb as it is.
func applyGPUs(hb *wardv1.Heartbeat, gpus []gpuInfo) {
	if len(gpus) == 0 {
		return
	}
	hb.Type = "gpu"
	hb.Capabilities = appendNew(hb.Capabilities, "gpu", "gpu:nvidia")
	if hb.Labels == nil {
		hb.Labels = map[string]string{}
	}
	hb.Labels["gpu.count"] = strconv.Itoa(len(gpus))
	hb.Labels["gpu.model"] = gpus[0].Model
	hb.Labels["gpu.memory_mb"] = strconv.FormatUint(gpus[0].MemoryMB, 10)
	busiest := 0.0
	for _, g := range gpus {
		if g.UtilKnown {
			busiest = max(busiest, g.Utilization)
		}
	}
	hb.GpuUtilization = busiest
}

func appendNew(have []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	return have
}

// smiSource runs nvidia-smi once per read.
type smiSource struct{ path string }

func (s *smiSource) name() string { return "nvidia-smi" }
func (s *smiSource) close() error { return nil }

func (s *smiSource) read(ctx context.Context) ([]gpuInfo, error) {
	out, err := exec.CommandContext(ctx, s.path, "--query-gpu=name,memory.total,utilization.gpu",
		"--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi: %w", err)
	}
	return parseSMI(out)
}

// errSMIFormat: nvidia-smi printed something we cannot read.
var errSMIFormat = errors.New("nvidia-smi: unexpected output")

// parseSMI reads `nvidia-smi --query-gpu=name,memory.total,utilization.gpu
// --format=csv,noheader,nounits`. A field of "[N/A]" (or "[Not
// Supported]") is left unknown; a GPU whose name is unreadable is skipped.
func parseSMI(out []byte) ([]gpuInfo, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	var gpus []gpuInfo
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errSMIFormat, err)
		}
		if len(rec) != 3 {
			return nil, fmt.Errorf("%w: %d fields in %q", errSMIFormat, len(rec), strings.Join(rec, ","))
		}
		g := gpuInfo{Model: strings.TrimSpace(rec[0])}
		if na(g.Model) {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(rec[1]), 10, 64); err == nil {
			g.MemoryMB = v
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64); err == nil && v >= 0 && v <= 100 {
			g.Utilization, g.UtilKnown = v, true
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

func na(s string) bool { return s == "" || strings.HasPrefix(s, "[") }
