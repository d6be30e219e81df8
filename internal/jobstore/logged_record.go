package jobstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The logged store's records in the log, in binary: a change is appended
// a few times a job, under the lock that orders the changes, so a record
// costs what copying its fields costs, not what encoding/json's
// reflection does (about a sixth of the store's time, and most of its
// garbage, when records were JSON).
//
// A batch is batchBinary, then each record as its length (uvarint) and
// its bytes. A record is its op (a byte) and its fields, each a tag byte
// and a value, the empty ones left out, then a 0 byte. Values: strings
// and byte slices as a uvarint length and their bytes; integers as
// varints; a bool as its tag alone; times as time.Time's MarshalBinary
// (the instant and its zone offset); a map or list as a count and its
// entries; a nested value (a job, a move, a safety decision, a wait, a
// DLQ entry, a run) as its own fields and a 0. Tags are never reused: a
// new field takes a new tag, and a reader refuses a tag it does not know.
//
// Batches written as JSON (a log begun by an earlier Ward) still replay:
// a JSON batch begins with '['.

// batchBinary begins a batch of binary records.
const batchBinary = 0x01

var opCodes = []logOp{1: opSubmit, 2: opTransition, 3: opPutResult, 4: opDueDeferred, 5: opAddDLQ,
	6: opRemoveDLQ, 7: opSweep, 8: opSetMode, 9: opSetDrained, 10: opCreateRun, 11: opAppendRun, 12: opClaimRun}

func opCode(op logOp) byte {
	for i, o := range opCodes {
		if o == op && i > 0 {
			return byte(i)
		}
	}
	return 0
}

// recWriter appends tagged fields, leaving empty ones out.
type recWriter struct{ b []byte }

func (w *recWriter) str(tag byte, s string) {
	if s != "" {
		w.b = appendStr(append(w.b, tag), s)
	}
}

func (w *recWriter) bytes(tag byte, v []byte) {
	if v != nil {
		w.b = append(binary.AppendUvarint(append(w.b, tag), uint64(len(v))), v...)
	}
}

func (w *recWriter) int(tag byte, v int64) {
	if v != 0 {
		w.b = binary.AppendVarint(append(w.b, tag), v)
	}
}

func (w *recWriter) bool(tag byte, v bool) {
	if v {
		w.b = append(w.b, tag)
	}
}

func (w *recWriter) time(tag byte, t time.Time) {
	if !t.IsZero() {
		w.b = append(w.b, tag)
		b, err := t.AppendBinary(w.b)
		if err != nil { // a zone offset not in whole minutes of ±32767: keep the instant
			b, _ = t.UTC().AppendBinary(w.b)
		}
		w.b = b
	}
}

func (w *recWriter) float(tag byte, v float64) {
	if v != 0 {
		w.b = binary.LittleEndian.AppendUint64(append(w.b, tag), math.Float64bits(v))
	}
}

func (w *recWriter) strs(tag byte, v []string) {
	if v != nil {
		w.b = binary.AppendUvarint(append(w.b, tag), uint64(len(v)))
		for _, s := range v {
			w.b = appendStr(w.b, s)
		}
	}
}

func (w *recWriter) list(tag byte, v [][]byte) {
	if v != nil {
		w.b = binary.AppendUvarint(append(w.b, tag), uint64(len(v)))
		for _, s := range v {
			w.b = append(binary.AppendUvarint(w.b, uint64(len(s))), s...)
		}
	}
}

func (w *recWriter) strMap(tag byte, m map[string]string) {
	if m != nil {
		w.b = binary.AppendUvarint(append(w.b, tag), uint64(len(m)))
		for k, v := range m {
			w.b = appendStr(appendStr(w.b, k), v)
		}
	}
}

func (w *recWriter) end() { w.b = append(w.b, 0) }

// appendRecord appends r in binary to b.
func appendRecord(b []byte, r *record) ([]byte, error) {
	code := opCode(r.Op)
	if code == 0 {
		return b, fmt.Errorf("unknown op %q", r.Op)
	}
	w := recWriter{b: append(b, code)}
	w.str(1, r.ID)
	if r.Job != nil {
		w.b = append(w.b, 2)
		w.job(r.Job)
	}
	w.bytes(3, r.Payload)
	if r.T != nil {
		w.b = append(w.b, 4)
		w.move(r.T)
	}
	w.bytes(5, r.Data)
	w.time(6, r.At)
	w.time(7, r.Until)
	w.int(8, int64(r.N))
	if r.DLQ != nil {
		w.b = append(w.b, 9)
		w.dlq(r.DLQ)
	}
	w.str(10, r.Mode)
	w.bool(11, r.On)
	if r.Run != nil {
		w.b = append(w.b, 12)
		w.run(r.Run)
	}
	w.list(13, r.Events)
	w.str(14, r.Owner)
	w.str(15, r.State)
	w.str(16, r.Reason)
	w.end()
	return w.b, nil
}

func (w *recWriter) job(j *Job) {
	w.str(1, j.ID)
	w.str(2, j.Topic)
	w.str(3, j.Tenant)
	w.int(4, int64(j.Priority))
	w.str(5, string(j.State))
	w.str(6, j.Pool)
	w.str(7, j.WorkerID)
	w.str(8, j.ContextPtr)
	w.str(9, j.ResultPtr)
	w.str(10, j.ResultDigest)
	w.str(11, j.Module)
	w.str(12, j.ModuleDigest)
	w.strMap(13, j.Labels)
	w.strs(14, j.Requires)
	w.str(15, j.IdempotencyKey)
	w.str(16, j.TraceID)
	w.str(17, j.Traceparent)
	w.int(18, j.DeadlineMS)
	w.int(19, int64(j.MaxRetries))
	w.int(20, int64(j.Attempt))
	w.strMap(21, j.Env)
	w.str(22, j.ParentJobID)
	w.str(23, j.WorkflowID)
	w.int(24, j.CPUMillicores)
	w.int(25, j.MemoryBytes)
	w.int(26, j.PayloadSize)
	w.str(27, j.PayloadDigest)
	w.time(28, j.Deadline)
	w.str(29, j.Waiting)
	w.str(30, j.Chain)
	w.int(31, int64(j.Waits))
	if j.Safety != nil {
		w.b = append(w.b, 32)
		w.safety(j.Safety)
	}
	w.str(33, j.Reason)
	w.str(34, j.ErrorCode)
	w.str(35, j.ErrorMessage)
	w.bytes(36, j.Log)
	w.bool(37, j.LogTruncated)
	w.time(38, j.CreatedAt)
	w.time(39, j.UpdatedAt)
	w.end()
}

func (w *recWriter) safety(s *Safety) {
	w.str(1, s.Decision)
	w.strs(2, s.Reasons)
	w.str(3, s.PolicyRevision)
	w.str(4, s.DecisionID)
	w.bytes(5, s.Constraints)
	w.str(6, s.InputDigest)
	w.int(7, s.EvalNS)
	w.bool(8, s.Cached)
	w.int(9, s.DecidedAtUnixMS)
	w.end()
}

func (w *recWriter) move(t *transitionRecord) {
	w.str(1, string(t.To))
	w.str(2, string(t.From))
	w.str(3, t.Pool)
	w.str(4, t.WorkerID)
	w.str(5, t.ResultPtr)
	w.bytes(6, t.Result)
	w.bool(7, t.StoreResult)
	w.str(8, t.ResultDigest)
	w.str(9, t.Module)
	w.str(10, t.ModuleDigest)
	w.str(11, t.Reason)
	w.str(12, t.ErrorCode)
	w.str(13, t.ErrorMessage)
	w.bytes(14, t.Log)
	w.bool(15, t.LogTruncated)
	if t.Safety != nil {
		w.b = append(w.b, 16)
		w.safety(t.Safety)
	}
	w.int(17, int64(t.Attempt))
	if t.MaxRetries != nil {
		// present even when 0: a nil MaxRetries leaves the job's as it is
		w.b = binary.AppendVarint(append(w.b, 18), int64(*t.MaxRetries))
	}
	w.time(19, t.Deadline)
	w.int(20, int64(t.Waits))
	w.str(21, t.IfWorker)
	w.int(22, int64(t.IfAttempt))
	w.str(23, t.IfTenant)
	if t.Wait != nil {
		w.b = append(w.b, 24)
		w.str(1, t.Wait.Pool)
		w.float(2, t.Wait.Score)
		w.int(3, int64(t.Wait.Cap))
		w.time(4, t.Wait.Until)
		w.end()
	}
	w.str(25, t.Message)
	w.time(26, t.At)
	w.str(27, string(t.Via))
	w.str(28, t.ViaMessage)
	w.end()
}

func (w *recWriter) dlq(e *DLQEntry) {
	w.str(1, e.JobID)
	w.str(2, e.Topic)
	w.str(3, e.Tenant)
	w.str(4, e.Reason)
	w.str(5, e.Message)
	w.time(6, e.At)
	w.end()
}

func (w *recWriter) run(r *Run) {
	w.str(1, r.ID)
	w.str(2, r.Tenant)
	w.str(3, r.Workflow)
	w.bytes(4, r.Definition)
	w.bytes(5, r.Input)
	w.str(6, r.State)
	w.str(7, r.Reason)
	w.str(8, r.Owner)
	w.time(9, r.OwnedUntil)
	w.time(10, r.Deadline)
	w.time(11, r.CreatedAt)
	w.time(12, r.UpdatedAt)
	w.int(13, int64(r.Events))
	w.end()
}

// errBadRecord: a record holds a tag its reader does not know.
var errBadRecord = errors.New("a record field this version does not know")

// readRecord reads a binary record; it panics with errBadSnapshot (the
// batch's reader recovers it) where the bytes run out.
func readRecord(r *snapReader) (*record, error) {
	code := int(r.tag())
	if code <= 0 || code >= len(opCodes) {
		return nil, fmt.Errorf("unknown op code %d", code)
	}
	rec := &record{Op: opCodes[code]}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return rec, nil
		case 1:
			rec.ID = r.str()
		case 2:
			j, err := r.job()
			if err != nil {
				return nil, err
			}
			rec.Job = j
		case 3:
			rec.Payload = r.blob()
		case 4:
			t, err := r.move()
			if err != nil {
				return nil, err
			}
			rec.T = t
		case 5:
			rec.Data = r.blob()
		case 6:
			rec.At = r.time()
		case 7:
			rec.Until = r.time()
		case 8:
			rec.N = int(r.varint())
		case 9:
			e, err := r.dlq()
			if err != nil {
				return nil, err
			}
			rec.DLQ = e
		case 10:
			rec.Mode = r.str()
		case 11:
			rec.On = true
		case 12:
			run, err := r.run()
			if err != nil {
				return nil, err
			}
			rec.Run = run
		case 13:
			rec.Events = r.list()
		case 14:
			rec.Owner = r.str()
		case 15:
			rec.State = r.str()
		case 16:
			rec.Reason = r.str()
		default:
			return nil, fmt.Errorf("%w: record tag %d", errBadRecord, tag)
		}
	}
}

func (r *snapReader) tag() byte { return r.bytes(1)[0] }

func (r *snapReader) blob() []byte { return []byte(r.str()) }

func (r *snapReader) time() time.Time {
	var t time.Time
	if err := t.UnmarshalBinary(r.bytes(timeBinaryLen(r.b))); err != nil {
		panic(errBadSnapshot)
	}
	return t
}

func (r *snapReader) strs() []string {
	v := make([]string, r.count())
	for i := range v {
		v[i] = r.str()
	}
	return v
}

func (r *snapReader) list() [][]byte {
	v := make([][]byte, r.count())
	for i := range v {
		v[i] = r.blob()
	}
	return v
}

func (r *snapReader) strMap() map[string]string {
	n := r.count()
	m := make(map[string]string, n)
	for range n {
		k := r.str()
		m[k] = r.str()
	}
	return m
}

func (r *snapReader) job() (*Job, error) {
	j := &Job{}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return j, nil
		case 1:
			j.ID = r.str()
		case 2:
			j.Topic = r.str()
		case 3:
			j.Tenant = r.str()
		case 4:
			j.Priority = int(r.varint())
		case 5:
			j.State = State(r.str())
		case 6:
			j.Pool = r.str()
		case 7:
			j.WorkerID = r.str()
		case 8:
			j.ContextPtr = r.str()
		case 9:
			j.ResultPtr = r.str()
		case 10:
			j.ResultDigest = r.str()
		case 11:
			j.Module = r.str()
		case 12:
			j.ModuleDigest = r.str()
		case 13:
			j.Labels = r.strMap()
		case 14:
			j.Requires = r.strs()
		case 15:
			j.IdempotencyKey = r.str()
		case 16:
			j.TraceID = r.str()
		case 17:
			j.Traceparent = r.str()
		case 18:
			j.DeadlineMS = r.varint()
		case 19:
			j.MaxRetries = int(r.varint())
		case 20:
			j.Attempt = int(r.varint())
		case 21:
			j.Env = r.strMap()
		case 22:
			j.ParentJobID = r.str()
		case 23:
			j.WorkflowID = r.str()
		case 24:
			j.CPUMillicores = r.varint()
		case 25:
			j.MemoryBytes = r.varint()
		case 26:
			j.PayloadSize = r.varint()
		case 27:
			j.PayloadDigest = r.str()
		case 28:
			j.Deadline = r.time()
		case 29:
			j.Waiting = r.str()
		case 30:
			j.Chain = r.str()
		case 31:
			j.Waits = int(r.varint())
		case 32:
			s, err := r.safety()
			if err != nil {
				return nil, err
			}
			j.Safety = s
		case 33:
			j.Reason = r.str()
		case 34:
			j.ErrorCode = r.str()
		case 35:
			j.ErrorMessage = r.str()
		case 36:
			j.Log = r.blob()
		case 37:
			j.LogTruncated = true
		case 38:
			j.CreatedAt = r.time()
		case 39:
			j.UpdatedAt = r.time()
		default:
			return nil, fmt.Errorf("%w: job tag %d", errBadRecord, tag)
		}
	}
}

func (r *snapReader) safety() (*Safety, error) {
	s := &Safety{}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return s, nil
		case 1:
			s.Decision = r.str()
		case 2:
			s.Reasons = r.strs()
		case 3:
			s.PolicyRevision = r.str()
		case 4:
			s.DecisionID = r.str()
		case 5:
			s.Constraints = r.blob()
		case 6:
			s.InputDigest = r.str()
		case 7:
			s.EvalNS = r.varint()
		case 8:
			s.Cached = true
		case 9:
			s.DecidedAtUnixMS = r.varint()
		default:
			return nil, fmt.Errorf("%w: safety tag %d", errBadRecord, tag)
		}
	}
}

func (r *snapReader) move() (*transitionRecord, error) {
	t := &transitionRecord{}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return t, nil
		case 1:
			t.To = State(r.str())
		case 2:
			t.From = State(r.str())
		case 3:
			t.Pool = r.str()
		case 4:
			t.WorkerID = r.str()
		case 5:
			t.ResultPtr = r.str()
		case 6:
			t.Result = r.blob()
		case 7:
			t.StoreResult = true
		case 8:
			t.ResultDigest = r.str()
		case 9:
			t.Module = r.str()
		case 10:
			t.ModuleDigest = r.str()
		case 11:
			t.Reason = r.str()
		case 12:
			t.ErrorCode = r.str()
		case 13:
			t.ErrorMessage = r.str()
		case 14:
			t.Log = r.blob()
		case 15:
			t.LogTruncated = true
		case 16:
			s, err := r.safety()
			if err != nil {
				return nil, err
			}
			t.Safety = s
		case 17:
			t.Attempt = int(r.varint())
		case 18:
			v := int(r.varint())
			t.MaxRetries = &v
		case 19:
			t.Deadline = r.time()
		case 20:
			t.Waits = int(r.varint())
		case 21:
			t.IfWorker = r.str()
		case 22:
			t.IfAttempt = int(r.varint())
		case 23:
			t.IfTenant = r.str()
		case 24:
			w := &Wait{}
			for done := false; !done; {
				switch wt := r.tag(); wt {
				case 0:
					done = true
				case 1:
					w.Pool = r.str()
				case 2:
					w.Score = math.Float64frombits(binary.LittleEndian.Uint64(r.bytes(8)))
				case 3:
					w.Cap = int(r.varint())
				case 4:
					w.Until = r.time()
				default:
					return nil, fmt.Errorf("%w: wait tag %d", errBadRecord, wt)
				}
			}
			t.Wait = w
		case 25:
			t.Message = r.str()
		case 26:
			t.At = r.time()
		case 27:
			t.Via = State(r.str())
		case 28:
			t.ViaMessage = r.str()
		default:
			return nil, fmt.Errorf("%w: move tag %d", errBadRecord, tag)
		}
	}
}

func (r *snapReader) dlq() (*DLQEntry, error) {
	e := &DLQEntry{}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return e, nil
		case 1:
			e.JobID = r.str()
		case 2:
			e.Topic = r.str()
		case 3:
			e.Tenant = r.str()
		case 4:
			e.Reason = r.str()
		case 5:
			e.Message = r.str()
		case 6:
			e.At = r.time()
		default:
			return nil, fmt.Errorf("%w: DLQ tag %d", errBadRecord, tag)
		}
	}
}

func (r *snapReader) run() (*Run, error) {
	run := &Run{}
	for {
		switch tag := r.tag(); tag {
		case 0:
			return run, nil
		case 1:
			run.ID = r.str()
		case 2:
			run.Tenant = r.str()
		case 3:
			run.Workflow = r.str()
		case 4:
			run.Definition = r.blob()
		case 5:
			run.Input = r.blob()
		case 6:
			run.State = r.str()
		case 7:
			run.Reason = r.str()
		case 8:
			run.Owner = r.str()
		case 9:
			run.OwnedUntil = r.time()
		case 10:
			run.Deadline = r.time()
		case 11:
			run.CreatedAt = r.time()
		case 12:
			run.UpdatedAt = r.time()
		case 13:
			run.Events = int(r.varint())
		default:
			return nil, fmt.Errorf("%w: run tag %d", errBadRecord, tag)
		}
	}
}

// readBatch reads a batch of binary records (after its batchBinary byte)
// and calls apply on each, in order; it answers how many it applied.
func readBatch(b []byte, apply func(*record) error) (n int, err error) {
	defer func() {
		if e := recover(); e != nil {
			if e != errBadSnapshot {
				panic(e)
			}
			err = fmt.Errorf("record %d: cut short or corrupt", n)
		}
	}()
	r := &snapReader{b: b}
	for len(r.b) > 0 {
		one := &snapReader{b: r.bytes(r.count())}
		rec, err := readRecord(one)
		if err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		if len(one.b) != 0 {
			return n, fmt.Errorf("record %d: %d bytes past its end", n, len(one.b))
		}
		if err := apply(rec); err != nil {
			return n, fmt.Errorf("record %d (%s): %w", n, rec.Op, err)
		}
		n++
	}
	return n, nil
}
