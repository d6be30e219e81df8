package jobstore

import (
	"encoding/binary"
	"maps"
	"slices"
	"unsafe"
)

// memJob is a job as the memory store holds it: typed, as a Redis hash
// decodes (times to the millisecond in UTC, empty labels as nil, ...), so
// that a move sets fields rather than encoding strings into a map and
// decoding them back. Nothing outside the store holds a memJob or what its
// maps, slices and Safety point to: the store copies what it takes in and
// what it gives out.
type memJob struct {
	Job // WorkerJobs and FirstMove are left zero: they are a move's answer
	// locked: a move took the dispatch lock (the hash's "locked" field).
	locked bool
}

// own makes mj.Job, a copy newJobInto made of a caller's job, the store's
// own: what the Redis store's hash of it decodes to, sharing no map,
// slice or Safety with the caller.
func (mj *memJob) own() {
	j := &mj.Job
	j.Labels, j.Env = cloneMap(j.Labels), cloneMap(j.Env)
	j.Requires = cloneSlice(j.Requires)
	j.Safety = cloneSafety(j.Safety)
	// What Create does not keep (jobFields leaves it out).
	j.Log, j.LogTruncated, j.Waiting, j.Chain = nil, false, "", ""
	j.WorkerJobs, j.FirstMove = 0, false
}

// apply sets what t sets (transitionFields, which the Redis store writes):
// empty fields of t leave the job's as they are; reason, error and log
// only on an end.
func (mj *memJob) apply(t *Transition) {
	j := &mj.Job
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&j.Pool, t.Pool)
	set(&j.WorkerID, t.WorkerID)
	set(&j.ResultPtr, t.ResultPtr)
	set(&j.ResultDigest, t.ResultDigest)
	set(&j.Module, t.Module)
	set(&j.ModuleDigest, t.ModuleDigest)
	if t.To.Terminal() {
		set(&j.Reason, t.Reason)
		set(&j.ErrorCode, t.ErrorCode)
		set(&j.ErrorMessage, t.ErrorMessage)
		if len(t.Log) > 0 {
			j.Log = slices.Clone(t.Log)
		}
		if t.LogTruncated {
			j.LogTruncated = true
		}
	}
	if t.Safety != nil {
		j.Safety = cloneSafety(t.Safety)
	}
	if t.Attempt != 0 {
		j.Attempt = t.Attempt
	}
	if t.MaxRetries != nil {
		j.MaxRetries = *t.MaxRetries
	}
	if !t.Deadline.IsZero() {
		j.Deadline = fromMS(ms(t.Deadline))
	}
	if t.Waits != 0 {
		j.Waits = t.Waits
	}
}

// job is a copy of the job, its log included (Get, Transition).
func (mj *memJob) job() *Job {
	j := mj.listed()
	j.Log, j.LogTruncated = slices.Clone(mj.Log), mj.LogTruncated
	return j
}

// listed is a copy of the job without its log (List, DLQ).
func (mj *memJob) listed() *Job {
	j := mj.Job
	j.Labels, j.Env = cloneMap(j.Labels), cloneMap(j.Env)
	j.Requires = cloneSlice(j.Requires)
	j.Safety = cloneSafety(j.Safety)
	j.Log, j.LogTruncated = nil, false
	return &j
}

// brief is the job a Brief transition returns (briefFields).
func (mj *memJob) brief() *Job {
	return &Job{ID: mj.ID, Topic: mj.Topic, Tenant: mj.Tenant, State: mj.State, Pool: mj.Pool, WorkerID: mj.WorkerID,
		ResultPtr: mj.ResultPtr, Attempt: mj.Attempt, UpdatedAt: mj.UpdatedAt, CreatedAt: mj.CreatedAt}
}

// pairs appends the job's hash as the Redis store would hold it, field
// and value, to p: a snapshot's form of it (the lock mark left out, as a
// snapshot leaves locks out).
func (mj *memJob) pairs(p []string) ([]string, error) {
	p, err := appendJobFields(p, &mj.Job)
	if err != nil {
		return nil, err
	}
	p = pairs(p, fWaiting, mj.Waiting)
	p = pairs(p, fChain, mj.Chain)
	if len(mj.Log) > 0 {
		p = append(p, fLog, string(mj.Log))
	}
	if mj.LogTruncated {
		p = append(p, fLogTruncated, "1")
	}
	return p, nil
}

// memJobOf decodes a snapshot's hash of a job.
func memJobOf(h map[string]string) (*memJob, error) {
	j, err := decodeJob(h)
	if err != nil {
		return nil, err
	}
	return &memJob{Job: *j}, nil
}

// size estimates what the job takes: its struct, its strings, maps and
// slices (the bound counts it, with its events and blobs: jobBytes).
// Lengths, not capacities, so that an owner and a replay of its log count
// alike.
func (mj *memJob) size() int64 {
	j := &mj.Job
	n := int(unsafe.Sizeof(memJob{}))
	for _, s := range [...]string{j.ID, j.Topic, j.Tenant, string(j.State), j.Pool, j.WorkerID, j.ContextPtr, j.ResultPtr,
		j.ResultDigest, j.Module, j.ModuleDigest, j.IdempotencyKey, j.TraceID, j.Traceparent, j.Reason, j.ErrorCode,
		j.ErrorMessage, j.ParentJobID, j.WorkflowID, j.PayloadDigest, j.Waiting, j.Chain} {
		n += len(s)
	}
	for k, v := range j.Labels {
		n += fieldCost + len(k) + len(v)
	}
	for k, v := range j.Env {
		n += fieldCost + len(k) + len(v)
	}
	for _, r := range j.Requires {
		n += 16 + len(r)
	}
	if s := j.Safety; s != nil {
		n += int(unsafe.Sizeof(Safety{})) + len(s.Decision) + len(s.PolicyRevision) + len(s.DecisionID) + len(s.InputDigest) + len(s.Constraints)
		for _, r := range s.Reasons {
			n += 16 + len(r)
		}
	}
	return int64(n + len(j.Log))
}

// cloneMap is a copy of m, nil when m is empty (as an empty map is not
// stored).
func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// cloneSlice is a copy of s, nil when s is empty.
func cloneSlice(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// cloneSafety is a copy of s, empty slices as nil (as its JSON leaves
// them out).
func cloneSafety(s *Safety) *Safety {
	if s == nil {
		return nil
	}
	c := *s
	c.Reasons = cloneSlice(s.Reasons)
	c.Constraints = nil
	if len(s.Constraints) > 0 {
		c.Constraints = slices.Clone(s.Constraints)
	}
	return &c
}

// appendJob appends job id's hash to a snapshot b: the count of its
// fields, then each field and value. p is scratch room, returned for the
// next job.
func appendJob(b []byte, id string, mj *memJob, p []string) ([]byte, []string, error) {
	p, err := mj.pairs(p[:0])
	if err != nil {
		return nil, nil, err
	}
	b = binary.AppendUvarint(appendStr(b, id), uint64(len(p)/2))
	for i := 0; i+1 < len(p); i += 2 {
		b = appendStr(appendStr(b, p[i]), p[i+1])
	}
	return b, p, nil
}
