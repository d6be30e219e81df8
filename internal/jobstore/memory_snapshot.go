package jobstore

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"time"
)

// A snapshot of a Memory is its state as a logged store's snapshot keeps
// it (Logged): every part a replay of the log makes, and no more. What the
// log does not keep (dispatch locks and the jobs' lock marks, leases, live
// notes, rate buckets, failure counts and quarantines) a snapshot does not
// either, so a replay from a snapshot and one from the log's start make
// the same state.
//
// The owner's changes wait while it is written, so the bulk of it (jobs,
// events, indexes, blobs) is written by hand, lengths as varints, in a
// fraction of encoding/gob's time; the small parts (DLQ entries, drains,
// workflow runs) are one gob value at its end.

// snapshotMagic begins every snapshot: its format's name and version.
const snapshotMagic = "ward-snapshot-1\n"

// snapTail is the part of a snapshot encoding/gob writes.
type snapTail struct {
	DLQs    map[string]snapDLQ
	Evicted int64
	Mode    string
	Drained map[string]time.Time
	Runs    []snapRun // oldest first
}

type snapDLQ struct {
	JobID, Topic, Tenant, Reason, Message string
	At                                    time.Time
}

type snapRun struct {
	Run    Run
	Events [][]byte
	Ended  time.Time
}

// appendSnapshot appends a snapshot of m's state to b (give it room: a
// snapshot's bytes are copied each time b grows). It holds m's lock.
func (m *Memory) appendSnapshot(b []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b = append(b, snapshotMagic...)
	b = binary.AppendUvarint(b, uint64(len(m.jobs)))
	p := make([]string, 0, 2*40)
	for id, mj := range m.jobs {
		var err error
		if b, p, err = appendJob(b, id, mj, p); err != nil {
			return nil, err
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.events)))
	for id, evs := range m.events {
		b = appendStr(b, id)
		b = binary.AppendUvarint(b, uint64(len(evs)))
		for _, e := range evs {
			var err error
			if b, err = e.At.AppendBinary(b); err != nil {
				return nil, err
			}
			b = appendStr(appendStr(appendStr(appendStr(appendStr(b, string(e.State)), e.Reason), e.Message), e.WorkerID), e.Chain)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.index)))
	for st, z := range m.index {
		b = appendZset(appendStr(b, string(st)), z)
	}
	b = appendPositions(b, m.created.e)
	b = binary.AppendUvarint(b, uint64(len(m.tenantJobs)))
	for t, x := range m.tenantJobs {
		b = appendPositions(appendStr(b, t), x.e)
	}
	b = binary.AppendUvarint(b, uint64(len(m.idem)))
	for k, v := range m.idem {
		b = appendStr(appendStr(b, k), v)
	}
	b = appendSets(b, m.active)
	b = appendSets(b, m.workers)
	b = binary.AppendUvarint(b, uint64(len(m.blobs)))
	for k, v := range m.blobs {
		b = appendStr(appendStr(b, k), v)
	}
	b = appendZset(b, m.dlq)
	b = binary.AppendUvarint(b, uint64(len(m.ended.jobs)))
	for id, e := range m.ended.jobs {
		b = binary.AppendVarint(binary.AppendVarint(appendStr(b, id), e.at), e.bytes)
	}
	b = binary.AppendUvarint(b, uint64(len(m.waits)))
	for k, z := range m.waits {
		b = appendZset(appendStr(b, k), z)
	}
	b = appendZset(b, m.deadlines)

	tail := snapTail{DLQs: make(map[string]snapDLQ, len(m.dlqs)), Evicted: m.evicted, Mode: m.mode, Drained: m.drained}
	for id, e := range m.dlqs {
		tail.DLQs[id] = snapDLQ{JobID: e.JobID, Topic: e.Topic, Tenant: e.Tenant, Reason: e.Reason, Message: e.Message, At: e.At}
	}
	rs := m.runStore()
	rs.mu.Lock()
	for _, id := range rs.byTime {
		if r, ok := rs.runs[id]; ok {
			tail.Runs = append(tail.Runs, snapRun{Run: r.run, Events: r.events, Ended: r.ended})
		}
	}
	rs.mu.Unlock()
	buf := bytes.NewBuffer(b)
	if err := gob.NewEncoder(buf).Encode(&tail); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readSnapshot replaces m's logged state with the snapshot b. What a
// snapshot does not keep is left as it is: m is a fresh store.
func (m *Memory) readSnapshot(b []byte) (err error) {
	if !bytes.HasPrefix(b, []byte(snapshotMagic)) {
		return errors.New("snapshot: not a snapshot of this version")
	}
	r := &snapReader{b: b[len(snapshotMagic):]}
	defer func() {
		if e := recover(); e != nil {
			if e != errBadSnapshot {
				panic(e)
			}
			err = errBadSnapshot
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := r.count()
	m.jobs = make(map[string]*memJob, n)
	h := make(map[string]string, 40)
	for range n {
		id := r.str()
		nf := r.count()
		clear(h)
		for range nf {
			k := r.str()
			h[k] = r.str()
		}
		mj, err := memJobOf(h)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		m.jobs[id] = mj
	}
	n = r.count()
	m.events = make(map[string][]Event, n)
	for range n {
		id := r.str()
		evs := make([]Event, r.count())
		for i := range evs {
			e := &evs[i]
			if err := e.At.UnmarshalBinary(r.bytes(timeBinaryLen(r.b))); err != nil {
				return fmt.Errorf("snapshot: event time: %w", err)
			}
			e.State, e.Reason, e.Message, e.WorkerID, e.Chain = State(r.str()), r.str(), r.str(), r.str(), r.str()
		}
		m.events[id] = evs
	}
	n = r.count()
	m.index = make(map[State]zset, n)
	for range n {
		st := State(r.str())
		m.index[st] = r.zset()
	}
	m.created = ordIndex{e: r.positions()}
	n = r.count()
	m.tenantJobs = make(map[string]*ordIndex, n)
	for range n {
		t := r.str()
		m.tenantJobs[t] = &ordIndex{e: r.positions()}
	}
	n = r.count()
	m.idem = make(map[string]string, n)
	for range n {
		k := r.str()
		m.idem[k] = r.str()
	}
	m.active = r.sets()
	m.workers = r.sets()
	n = r.count()
	m.blobs = make(map[string][]byte, n)
	for range n {
		k := r.str()
		m.blobs[k] = []byte(r.str())
	}
	m.dlq = r.zset()
	m.ended = endedSet{}
	n = r.count()
	for range n {
		id := r.str()
		at := r.varint()
		m.ended.add(id, at, r.varint())
	}
	n = r.count()
	m.waits = make(map[string]zset, n)
	for range n {
		k := r.str()
		m.waits[k] = r.zset()
	}
	m.deadlines = r.zset()

	var tail snapTail
	if err := gob.NewDecoder(bytes.NewReader(r.b)).Decode(&tail); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	m.dlqs = make(map[string]DLQEntry, len(tail.DLQs))
	for id, e := range tail.DLQs {
		m.dlqs[id] = DLQEntry{JobID: e.JobID, Topic: e.Topic, Tenant: e.Tenant, Reason: e.Reason, Message: e.Message, At: e.At}
	}
	m.evicted, m.mode, m.drained = tail.Evicted, tail.Mode, tail.Drained
	rs := m.runStore()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.runs = make(map[string]*memRun, len(tail.Runs))
	rs.byTime = rs.byTime[:0]
	for _, r := range tail.Runs {
		rs.runs[r.Run.ID] = &memRun{run: r.Run, events: r.Events, ended: r.Ended}
		rs.byTime = append(rs.byTime, r.Run.ID)
	}
	return nil
}

// timeBinaryLen is the length of the time.Time MarshalBinary wrote at the
// start of b: 15 bytes, 16 with seconds of its zone offset (version 2).
func timeBinaryLen(b []byte) int {
	if len(b) > 0 && b[0] == 2 {
		return 16
	}
	return 15
}

func appendStr[S ~string | ~[]byte](b []byte, s S) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendZset(b []byte, z zset) []byte {
	b = binary.AppendUvarint(b, uint64(len(z)))
	for id, score := range z {
		b = binary.LittleEndian.AppendUint64(appendStr(b, id), math.Float64bits(score))
	}
	return b
}

func appendPositions(b []byte, ps []listPos) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = appendStr(binary.AppendVarint(b, p.score), p.id)
	}
	return b
}

func appendSets(b []byte, sets map[string]map[string]struct{}) []byte {
	b = binary.AppendUvarint(b, uint64(len(sets)))
	for k, set := range sets {
		b = binary.AppendUvarint(appendStr(b, k), uint64(len(set)))
		for id := range set {
			b = appendStr(b, id)
		}
	}
	return b
}

// errBadSnapshot: a snapshot ends before its parts do, or says it holds
// more than it has room for.
var errBadSnapshot = errors.New("snapshot: truncated or corrupt")

// snapReader reads what appendSnapshot wrote; it panics with
// errBadSnapshot (readSnapshot recovers it) where b is too short.
type snapReader struct{ b []byte }

func (r *snapReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		panic(errBadSnapshot)
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *snapReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		panic(errBadSnapshot)
	}
	r.b = r.b[n:]
	return v
}

func (r *snapReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		panic(errBadSnapshot)
	}
	r.b = r.b[n:]
	return v
}

// count is a count of entries; each takes a byte at least, so one past
// what is left is corrupt (and allocates nothing).
func (r *snapReader) count() int {
	v := r.uvarint()
	if v > uint64(len(r.b)) {
		panic(errBadSnapshot)
	}
	return int(v)
}

func (r *snapReader) str() string { return string(r.bytes(r.count())) }

func (r *snapReader) zset() zset {
	n := r.count()
	z := make(zset, n)
	for range n {
		id := r.str()
		z[id] = math.Float64frombits(binary.LittleEndian.Uint64(r.bytes(8)))
	}
	return z
}

func (r *snapReader) positions() []listPos {
	ps := make([]listPos, r.count())
	for i := range ps {
		ps[i].score = r.varint()
		ps[i].id = r.str()
	}
	return ps
}

func (r *snapReader) sets() map[string]map[string]struct{} {
	n := r.count()
	out := make(map[string]map[string]struct{}, n)
	for range n {
		k := r.str()
		c := r.count()
		set := make(map[string]struct{}, c)
		for range c {
			set[r.str()] = struct{}{}
		}
		out[k] = set
	}
	return out
}
