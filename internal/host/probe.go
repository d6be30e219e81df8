package host

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// cpuSampler turns /proc/stat's cumulative counters into a load figure
// between two samples. Not safe for concurrent use: the heartbeat loop owns it.
type cpuSampler struct {
	path            string
	idle, total     uint64
	havePrevSamples bool
}

// sample returns the CPU use (0–100) since the previous call; the first
// call returns the use since boot. It returns 0 where /proc is absent.
func (c *cpuSampler) sample() float64 {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return 0
	}
	idle, total, ok := parseProcStat(data)
	if !ok {
		return 0
	}
	dIdle, dTotal := idle, total
	if c.havePrevSamples {
		dIdle, dTotal = idle-c.idle, total-c.total
	}
	c.idle, c.total, c.havePrevSamples = idle, total, true
	if dTotal == 0 {
		return 0
	}
	return 100 * float64(dTotal-dIdle) / float64(dTotal)
}

// parseProcStat reads the aggregate "cpu" line: idle is idle+iowait.
func parseProcStat(data []byte) (idle, total uint64, ok bool) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		// guest and guest_nice (9th, 10th) are already counted in user and nice.
		if i >= 8 {
			break
		}
		total += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, total, true
}

// readMemInfo returns MemTotal and MemAvailable in bytes, or zeros.
func readMemInfo(path string) (total, available uint64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "MemTotal":
			total = kb * 1024
		case "MemAvailable":
			available = kb * 1024
		}
	}
	return total, available
}
