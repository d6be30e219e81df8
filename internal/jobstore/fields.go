package jobstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A job is stored as a flat hash of string fields: the Redis hash job:<id>,
// and the map the memory store keeps. Both stores encode and decode through
// the functions below, so a job reads back the same from either (times to
// the millisecond in UTC, empty labels as nil, and so on).

// Hash field names.
const (
	fID             = "id"
	fTopic          = "topic"
	fTenant         = "tenant"
	fPriority       = "priority"
	fState          = "state"
	fPool           = "pool"
	fWorkerID       = "worker_id"
	fContextPtr     = "context_ptr"
	fResultPtr      = "result_ptr"
	fResultDigest   = "result_digest"
	fModule         = "module"
	fModuleDigest   = "module_digest"
	fLabels         = "labels"
	fRequires       = "requires"
	fIdempotencyKey = "idempotency_key"
	fTraceID        = "trace_id"
	fTraceparent    = "traceparent"
	fDeadlineMS     = "deadline_ms"
	fMaxRetries     = "max_retries"
	fAttempt        = "attempt"
	fSafety         = "safety"
	fReason         = "reason"
	fErrorCode      = "error_code"
	fErrorMessage   = "error_message"
	fLog            = "log"           // the scripts that list jobs spell it too
	fLogTruncated   = "log_truncated" // likewise
	fCreatedAt      = "created_at"
	fUpdatedAt      = "updated_at"
	fEnv            = "env"
	fParentJobID    = "parent_job_id"
	fWorkflowID     = "workflow_id"
	fCPU            = "cpu_millicores"
	fMemory         = "memory_bytes"
	fDeadline       = "deadline"
	fWaiting        = "waiting" // the scripts spell it too
	fLocked         = "locked"  // a move took the dispatch lock; the scripts spell it too
	fChain          = "chain"   // the event log's last chain link; the scripts spell it too
	fWaits          = "waits"
	fPayloadSize    = "payload_size"
	fPayloadDigest  = "payload_digest"
)

// briefFields are the fields a Brief transition returns (transition.lua
// spells them too).
var briefFields = []string{fID, fTopic, fTenant, fState, fPool, fWorkerID, fAttempt, fResultPtr, fUpdatedAt, fCreatedAt}

// decodeBrief decodes the briefFields of hash h: the job a Brief
// transition returns.
func decodeBrief(h map[string]string) (*Job, error) {
	j := &Job{ID: h[fID], Topic: h[fTopic], Tenant: h[fTenant], State: State(h[fState]), Pool: h[fPool],
		WorkerID: h[fWorkerID], ResultPtr: h[fResultPtr]}
	for _, f := range [...]string{fAttempt, fUpdatedAt, fCreatedAt} {
		s := h[f]
		if s == "" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jobstore: job %s: field %s: %w", j.ID, f, err)
		}
		switch f {
		case fAttempt:
			j.Attempt = int(v)
		case fUpdatedAt:
			j.UpdatedAt = fromMS(v)
		default:
			j.CreatedAt = fromMS(v)
		}
	}
	return j, nil
}

// ms is t in Unix milliseconds, the resolution both stores keep.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS is the time a stored millisecond count stands for.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// at is t, or now when t is zero, cut to the millisecond.
func at(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return fromMS(ms(t))
}

// pairs appends field, value to p when value is not empty.
func pairs(p []string, field, value string) []string {
	if value == "" {
		return p
	}
	return append(p, field, value)
}

// jobFields encodes j as field/value pairs, leaving out empty fields.
func jobFields(j *Job) ([]string, error) {
	return appendJobFields(make([]string, 0, 2*30), j)
}

// appendJobFields appends jobFields(j) to p.
func appendJobFields(p []string, j *Job) ([]string, error) {
	created := strconv.FormatInt(ms(j.CreatedAt), 10)
	updated := created // a new job's: one string
	if ms(j.UpdatedAt) != ms(j.CreatedAt) {
		updated = strconv.FormatInt(ms(j.UpdatedAt), 10)
	}
	p = append(p,
		fID, j.ID,
		fTopic, j.Topic,
		fTenant, j.Tenant,
		fPriority, strconv.Itoa(j.Priority),
		fState, string(j.State),
		fCreatedAt, created,
		fUpdatedAt, updated,
	)
	p = pairs(p, fPool, j.Pool)
	p = pairs(p, fWorkerID, j.WorkerID)
	p = pairs(p, fContextPtr, j.ContextPtr)
	p = pairs(p, fResultPtr, j.ResultPtr)
	p = pairs(p, fResultDigest, j.ResultDigest)
	p = pairs(p, fModule, j.Module)
	p = pairs(p, fModuleDigest, j.ModuleDigest)
	if len(j.Labels) > 0 {
		b, err := json.Marshal(j.Labels)
		if err != nil {
			return nil, fmt.Errorf("jobstore: encode labels: %w", err)
		}
		p = append(p, fLabels, string(b))
	}
	if len(j.Requires) > 0 {
		b, err := json.Marshal(j.Requires)
		if err != nil {
			return nil, fmt.Errorf("jobstore: encode requires: %w", err)
		}
		p = append(p, fRequires, string(b))
	}
	p = pairs(p, fIdempotencyKey, j.IdempotencyKey)
	p = pairs(p, fTraceID, j.TraceID)
	p = pairs(p, fTraceparent, j.Traceparent)
	if j.DeadlineMS != 0 {
		p = append(p, fDeadlineMS, strconv.FormatInt(j.DeadlineMS, 10))
	}
	if j.MaxRetries != 0 {
		p = append(p, fMaxRetries, strconv.Itoa(j.MaxRetries))
	}
	if j.Attempt != 0 {
		p = append(p, fAttempt, strconv.Itoa(j.Attempt))
	}
	if j.Safety != nil {
		b, err := json.Marshal(j.Safety)
		if err != nil {
			return nil, fmt.Errorf("jobstore: encode safety: %w", err)
		}
		p = append(p, fSafety, string(b))
	}
	p = pairs(p, fReason, j.Reason)
	p = pairs(p, fErrorCode, j.ErrorCode)
	p = pairs(p, fErrorMessage, j.ErrorMessage)
	if len(j.Env) > 0 {
		b, err := json.Marshal(j.Env)
		if err != nil {
			return nil, fmt.Errorf("jobstore: encode env: %w", err)
		}
		p = append(p, fEnv, string(b))
	}
	p = pairs(p, fParentJobID, j.ParentJobID)
	p = pairs(p, fWorkflowID, j.WorkflowID)
	p = num(p, fCPU, j.CPUMillicores)
	p = num(p, fMemory, j.MemoryBytes)
	if !j.Deadline.IsZero() {
		p = append(p, fDeadline, strconv.FormatInt(ms(j.Deadline), 10))
	}
	p = num(p, fWaits, int64(j.Waits))
	p = num(p, fPayloadSize, j.PayloadSize)
	p = pairs(p, fPayloadDigest, j.PayloadDigest)
	// Waiting is the store's own: Create never sets it.
	return p, nil
}

// setPairs sets the field/value pairs p in hash h.
func setPairs(h map[string]string, p []string) {
	for i := 0; i+1 < len(p); i += 2 {
		h[p[i]] = p[i+1]
	}
}

// num appends field, value to p when value is not zero.
func num(p []string, field string, value int64) []string {
	if value == 0 {
		return p
	}
	return append(p, field, strconv.FormatInt(value, 10))
}

// transitionFields encodes the fields t sets, leaving out empty ones. State
// and updated_at are set by the caller. Reason and the error fields are
// the job's only when it ends: on other moves they go to the event alone,
// so that a job that waited (reason pool_overloaded) or was retried (its
// first attempt failed) and then succeeded carries no reason.
func transitionFields(t Transition) ([]string, error) {
	p := make([]string, 0, 16) // the common moves set a few fields: one allocation
	p = pairs(p, fPool, t.Pool)
	p = pairs(p, fWorkerID, t.WorkerID)
	p = pairs(p, fResultPtr, t.ResultPtr)
	p = pairs(p, fResultDigest, t.ResultDigest)
	p = pairs(p, fModule, t.Module)
	p = pairs(p, fModuleDigest, t.ModuleDigest)
	if t.To.Terminal() {
		p = pairs(p, fReason, t.Reason)
		p = pairs(p, fErrorCode, t.ErrorCode)
		p = pairs(p, fErrorMessage, t.ErrorMessage)
		if len(t.Log) > 0 {
			p = append(p, fLog, string(t.Log))
		}
		if t.LogTruncated {
			p = append(p, fLogTruncated, "1")
		}
	}
	if t.Safety != nil {
		b, err := json.Marshal(t.Safety)
		if err != nil {
			return nil, fmt.Errorf("jobstore: encode safety: %w", err)
		}
		p = append(p, fSafety, string(b))
	}
	if t.Attempt != 0 {
		p = append(p, fAttempt, strconv.Itoa(t.Attempt))
	}
	if t.MaxRetries != nil {
		p = append(p, fMaxRetries, strconv.Itoa(*t.MaxRetries))
	}
	if !t.Deadline.IsZero() {
		p = append(p, fDeadline, strconv.FormatInt(ms(t.Deadline), 10))
	}
	p = num(p, fWaits, int64(t.Waits))
	return p, nil
}

// decodeJob decodes a stored hash, its log included.
func decodeJob(h map[string]string) (*Job, error) {
	j, err := decodeListed(h)
	if err != nil {
		return nil, err
	}
	if s := h[fLog]; s != "" {
		j.Log = []byte(s)
	}
	j.LogTruncated = h[fLogTruncated] != ""
	return j, nil
}

// decodeListed decodes a stored hash as List, Recent and DLQ return it:
// without the log (Job.Log), which only Get and Transition carry.
func decodeListed(h map[string]string) (*Job, error) {
	j := &Job{
		ID:             h[fID],
		Topic:          h[fTopic],
		Tenant:         h[fTenant],
		State:          State(h[fState]),
		Pool:           h[fPool],
		WorkerID:       h[fWorkerID],
		ContextPtr:     h[fContextPtr],
		ResultPtr:      h[fResultPtr],
		ResultDigest:   h[fResultDigest],
		Module:         h[fModule],
		ModuleDigest:   h[fModuleDigest],
		IdempotencyKey: h[fIdempotencyKey],
		TraceID:        h[fTraceID],
		Traceparent:    h[fTraceparent],
		Reason:         h[fReason],
		ErrorCode:      h[fErrorCode],
		ErrorMessage:   h[fErrorMessage],
		ParentJobID:    h[fParentJobID],
		WorkflowID:     h[fWorkflowID],
		Waiting:        h[fWaiting],
		Chain:          h[fChain],
	}
	var err error
	num := func(field string) int64 {
		s := h[field]
		if s == "" || err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(s, 10, 64)
		if err != nil {
			err = fmt.Errorf("jobstore: job %s: field %s: %w", j.ID, field, err)
		}
		return v
	}
	j.Priority = int(num(fPriority))
	j.DeadlineMS = num(fDeadlineMS)
	j.MaxRetries = int(num(fMaxRetries))
	j.Attempt = int(num(fAttempt))
	j.CreatedAt = fromMS(num(fCreatedAt))
	j.UpdatedAt = fromMS(num(fUpdatedAt))
	j.CPUMillicores = num(fCPU)
	j.MemoryBytes = num(fMemory)
	j.Waits = int(num(fWaits))
	j.PayloadSize = num(fPayloadSize)
	j.PayloadDigest = h[fPayloadDigest]
	if h[fDeadline] != "" {
		j.Deadline = fromMS(num(fDeadline))
	}
	if err != nil {
		return nil, err
	}
	if s := h[fEnv]; s != "" {
		if err := json.Unmarshal([]byte(s), &j.Env); err != nil {
			return nil, fmt.Errorf("jobstore: job %s: env: %w", j.ID, err)
		}
	}
	if s := h[fLabels]; s != "" {
		if err := json.Unmarshal([]byte(s), &j.Labels); err != nil {
			return nil, fmt.Errorf("jobstore: job %s: labels: %w", j.ID, err)
		}
	}
	if s := h[fRequires]; s != "" {
		if err := json.Unmarshal([]byte(s), &j.Requires); err != nil {
			return nil, fmt.Errorf("jobstore: job %s: requires: %w", j.ID, err)
		}
	}
	if s := h[fSafety]; s != "" {
		j.Safety = new(Safety)
		if err := json.Unmarshal([]byte(s), j.Safety); err != nil {
			return nil, fmt.Errorf("jobstore: job %s: safety: %w", j.ID, err)
		}
	}
	return j, nil
}

// externalPtrScheme starts the pointer of a context too large for a
// message, which the client stored in NATS's object store (bus.ObjectScheme):
// Create keeps such a pointer, and any other is replaced by the job's own.
const externalPtrScheme = "nats-os://"

// newJob checks j and returns the copy Create stores: in PENDING, with its
// context pointer and times set.
func newJob(j *Job) (*Job, error) {
	n := new(Job)
	return n, newJobInto(n, j)
}

// newJobInto is newJob, the copy made in *n.
func newJobInto(n, j *Job) error {
	if j == nil {
		return fmt.Errorf("jobstore: create: no job")
	}
	if err := CheckID(j.ID); err != nil {
		return fmt.Errorf("jobstore: create: %w", err)
	}
	*n = *j
	n.State = Pending
	if !strings.HasPrefix(n.ContextPtr, externalPtrScheme) {
		n.ContextPtr = ContextPtr(j.ID)
	}
	n.CreatedAt = at(j.CreatedAt)
	n.UpdatedAt = n.CreatedAt
	n.Waiting = ""
	n.WorkerJobs = 0
	if !n.Deadline.IsZero() {
		n.Deadline = fromMS(ms(n.Deadline))
	}
	return nil
}

// reservedIDs are the names of the store's shared keys under "job:"
// (job:recent, job:deadlines, ...): a job of that id would take the key.
var reservedIDs = map[string]bool{"recent": true, "dlq": true, "deferred": true, "deadlines": true, "mode": true, "quarantine": true, "ended": true}

// CheckID refuses a job id that would collide with the store's other keys:
// an empty one, one with a ':' (job:events:<id>, job:lock:<id>, ... are
// other keys of the same prefix), or the name of a shared key (recent,
// deadlines, ...). A client picks job ids: one that took job:deadlines
// would break every job's deadline.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("job has no id")
	case strings.Contains(id, ":"):
		return fmt.Errorf("job id %q may not contain ':'", id)
	case reservedIDs[id]:
		return fmt.Errorf("job id %q is reserved", id)
	}
	return nil
}

// created copies what Create set into the caller's job.
func created(dst, stored *Job) {
	dst.State = stored.State
	dst.ContextPtr = stored.ContextPtr
	dst.CreatedAt = stored.CreatedAt
	dst.UpdatedAt = stored.UpdatedAt
}

// refused is the error for a move the table (or the From guard) forbids.
func refused(id string, current State, t Transition) error {
	return &TransitionError{ID: id, Current: current, Wanted: t.To, Required: t.From}
}

// attemptErr is the error for a move the IfAttempt guard refuses: the job
// is in current, at attempt.
func attemptErr(id string, current State, t Transition, attempt int) error {
	return &TransitionError{ID: id, Current: current, Wanted: t.To, Required: t.From, IfAttempt: t.IfAttempt, Attempt: attempt}
}

// allowed reports whether t may move a job that is in current.
func allowed(current State, t Transition) bool {
	if t.From != "" && t.From != current {
		return false
	}
	if current == Pending && t.To == Pending {
		return t.Wait != nil
	}
	if t.Via != "" {
		return CanTransition(current, t.Via) && CanTransition(t.Via, t.To)
	}
	return CanTransition(current, t.To)
}

// checkTransition refuses a malformed t before any store looks at the job.
func checkTransition(id string, t Transition) error {
	switch {
	case id == "":
		return fmt.Errorf("jobstore: transition: no job id")
	case t.Wait != nil && t.To != Pending:
		return fmt.Errorf("jobstore: transition %s: a Wait needs To PENDING, not %s", id, t.To)
	case t.Wait != nil && (t.Wait.Pool == "") == t.Wait.Until.IsZero():
		return fmt.Errorf("jobstore: transition %s: a Wait needs a Pool or an Until, not both", id)
	case t.Lock != nil && (t.Lock.Owner == "" || t.Lock.TTL < time.Millisecond):
		return fmt.Errorf("jobstore: transition %s: a Lock needs an owner and a ttl of at least 1ms", id)
	case t.Via != "" && (t.Via == Pending || t.Via.Terminal() || t.Via == t.To || t.Wait != nil):
		return fmt.Errorf("jobstore: transition %s: via %s to %s: Via may not be PENDING, terminal or To, nor go with a Wait", id, t.Via, t.To)
	}
	return nil
}

// waitingKey is the key of the set a job waits in ("queue:echo" →
// job:queue:echo, "deferred" → job:deferred).
func waitingKey(w string) string { return "job:" + w }
