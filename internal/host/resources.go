package host

import (
	"runtime"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// reportResources adds the host's CPU figures to a heartbeat (after the
// CPU load is set): resource-fit placement compares a job's request with
// them.
func reportResources(hb *wardv1.Heartbeat) {
	cores := runtime.NumCPU()
	hb.CpuCores = int32(cores)
	free := float64(cores) * 1000 * (1 - hb.GetCpuLoad()/100)
	hb.CpuMillicoresFree = max(0, int64(free))
}
