package placement

import (
	"slices"
	"strings"
)

// Labels of a job with a meaning to placement. Every other label of a job
// is a constraint: a worker qualifies only if it has that label with that
// value (zone and region also match the heartbeat's zone and region) —
// but for Ward's own labels, under "ward." (a workflow step's run and
// task), which are neither.
const (
	// LabelPreferredPool narrows routing to that pool when the topic maps
	// to it (the scheduler's routing reads it; it is no constraint).
	LabelPreferredPool = "preferred_pool"
	// LabelPreferredWorker sends the job to that worker when it is alive
	// and eligible, whatever the pool's strategy.
	LabelPreferredWorker = "preferred_worker_id"
	// LabelPreviousWorker, LabelPreferredZone and LabelDataLocality are the
	// affinity strategy's hints: the worker that ran the job's previous
	// step, a zone, and a key matched against the comma-separated
	// data_locality label of workers.
	LabelPreviousWorker = "previous_worker_id"
	LabelPreferredZone  = "preferred_zone"
	LabelDataLocality   = "data_locality"
)

// isHint reports whether a label is a placement hint, not a constraint.
func isHint(key string) bool {
	switch key {
	case LabelPreferredPool, LabelPreferredWorker, LabelPreviousWorker, LabelPreferredZone, LabelDataLocality:
		return true
	}
	return strings.HasPrefix(key, SystemLabelPrefix)
}

// SystemLabelPrefix starts the labels Ward sets itself (a workflow step's
// ward.run and ward.task); clients may not set them.
const SystemLabelPrefix = "ward."

// SetLabels sets r's hints and label constraints (sorted by key) from a
// job's labels.
func (r *Request) SetLabels(labels map[string]string) {
	r.PreferredWorker = labels[LabelPreferredWorker]
	r.PreviousWorker = labels[LabelPreviousWorker]
	r.Zone = labels[LabelPreferredZone]
	r.DataKey = labels[LabelDataLocality]
	r.Constraints = r.Constraints[:0]
	for k, v := range labels {
		if !isHint(k) {
			r.Constraints = append(r.Constraints, Label{Key: k, Value: v})
		}
	}
	slices.SortFunc(r.Constraints, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
}
