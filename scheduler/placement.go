package scheduler

import (
	"fmt"
	"strconv"
)

// Placement is a placement decision and why it was made.
type Placement struct {
	WorkerID string
	Score    float64
	// Reasoning is a one-line account stored in the job's event log.
	Reasoning string
}

// PlaceLeastLoaded picks the worker with the lowest score
// active_jobs + pending + cpu_load/100 + gpu_utilization/100 among workers
// that have every capability in requires. Ties go to the lowest id, so the
// same snapshot gives the same answer. It returns false when no worker is
// eligible. It does no I/O and keeps no state.
func PlaceLeastLoaded(workers []Worker, requires []string) (Placement, bool) {
	best, bestScore, eligible := -1, 0.0, 0
	for i := range workers {
		w := &workers[i]
		if !w.Has(requires) {
			continue
		}
		eligible++
		s := score(w)
		if best < 0 || s < bestScore || (s == bestScore && w.ID < workers[best].ID) {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return Placement{}, false
	}
	w := &workers[best]
	p := Placement{WorkerID: w.ID, Score: bestScore}
	if eligible == 1 {
		p.Reasoning = "OnlyWorkerAvailable{worker=" + w.ID + "}"
	} else {
		p.Reasoning = fmt.Sprintf("LeastLoaded{worker=%s score=%s queue_depth=%d candidates=%d}",
			w.ID, strconv.FormatFloat(bestScore, 'f', 2, 64), w.ActiveJobs+w.Pending, eligible)
	}
	return p, true
}

func score(w *Worker) float64 {
	return float64(w.ActiveJobs+w.Pending) + w.CPULoad/100 + w.GPUUtil/100
}
