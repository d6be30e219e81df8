package jobstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Live notes are what a running job's attempt streamed (an LLM's tokens)
// and the progress it reported, kept while it runs so that a watcher who
// attaches late sees them (ward jobs watch, the job's page). They are
// bounded (MaxLiveOutput bytes, MaxLiveProgress reports), dropped when
// the job ends (its result holds the whole output) or when a later
// attempt reports, and expire LiveTTL after the last note should the job
// be lost.
type LiveNotes interface {
	// AddOutput keeps chunk seq of attempt's streamed output. It reports
	// false when it was not kept: the job is not DISPATCHED or RUNNING at
	// that attempt, the chunk was kept already, or it is past the bound.
	AddOutput(ctx context.Context, id string, attempt int, seq int64, chunk []byte) (bool, error)
	// AddProgress keeps a progress report of attempt, likewise.
	AddProgress(ctx context.Context, id string, attempt int, p Progress) (bool, error)
	// Live returns the notes kept of id's latest attempt: none (a zero
	// Live) for a job that ended or never reported.
	Live(ctx context.Context, id string) (*Live, error)
}

// The bounds of a job's live notes.
const (
	MaxLiveOutput   = 1 << 20
	MaxLiveProgress = 200
	LiveTTL         = time.Hour
)

// Progress is a progress report of a running job.
type Progress struct {
	At      time.Time `json:"at"`
	Percent int       `json:"percent"`
	Message string    `json:"message,omitempty"`
}

// Chunk is a numbered piece of a job's streamed output.
type Chunk struct {
	Seq  int64
	Data []byte
}

// Live is what a running job's attempt streamed and reported so far.
type Live struct {
	Attempt int
	// Output, in seq order; a seq may be missing (a chunk lost on the
	// bus).
	Output   []Chunk
	Progress []Progress
	// Truncated: notes past the bounds were dropped.
	Truncated bool
}

var (
	_ LiveNotes = (*Redis)(nil)
	_ LiveNotes = (*Memory)(nil)
	_ LiveNotes = (*Sharded)(nil)
)

func (n ns) live(id string) string { return string(n) + "job:live:" + id }

// liveAddCall runs live_add.lua.
type liveAddCall struct {
	id, kind string
	attempt  int
	seq      int64
	data     []byte
}

func (liveAddCall) script() *redis.Script { return liveAddScript }
func (c liveAddCall) keys(n ns) []string  { return []string{n.live(c.id), n.job(c.id)} }
func (c liveAddCall) argv() []any {
	return []any{c.kind, c.attempt, c.seq, c.data, MaxLiveOutput, MaxLiveProgress, LiveTTL.Milliseconds()}
}

// AddOutput keeps a chunk in job:live:<id> (live_add.lua).
func (r *Redis) AddOutput(ctx context.Context, id string, attempt int, seq int64, chunk []byte) (bool, error) {
	n, err := eval(ctx, r, liveAddCall{id: id, kind: "o", attempt: attempt, seq: seq, data: chunk}).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: live output %s: %w", id, err)
	}
	return n == 1, nil
}

// AddProgress keeps a progress report in job:live:<id> (live_add.lua).
func (r *Redis) AddProgress(ctx context.Context, id string, attempt int, p Progress) (bool, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return false, err
	}
	n, err := eval(ctx, r, liveAddCall{id: id, kind: "p", attempt: attempt, data: data}).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: live progress %s: %w", id, err)
	}
	return n == 1, nil
}

// Live reads job:live:<id>.
func (r *Redis) Live(ctx context.Context, id string) (*Live, error) {
	h, err := r.c.HGetAll(ctx, r.ns.live(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: live %s: %w", id, err)
	}
	return liveOf(h)
}

// liveOf decodes the hash live_add.lua writes.
func liveOf(h map[string]string) (*Live, error) {
	l := &Live{}
	for k, v := range h {
		switch {
		case k == "attempt":
			l.Attempt, _ = strconv.Atoi(v)
		case k == "trunc":
			l.Truncated = true
		case strings.HasPrefix(k, "o:"):
			seq, err := strconv.ParseInt(k[2:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("jobstore: live: bad field %q", k)
			}
			l.Output = append(l.Output, Chunk{Seq: seq, Data: []byte(v)})
		case strings.HasPrefix(k, "p:"):
			var p Progress
			if err := json.Unmarshal([]byte(v), &p); err != nil {
				return nil, fmt.Errorf("jobstore: live: progress %q: %w", k, err)
			}
			l.Progress = append(l.Progress, p)
		}
	}
	slices.SortFunc(l.Output, func(a, b Chunk) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortStableFunc(l.Progress, func(a, b Progress) int { return a.At.Compare(b.At) })
	return l, nil
}

// AddOutput keeps a chunk in the job's shard.
func (s *Sharded) AddOutput(ctx context.Context, id string, attempt int, seq int64, chunk []byte) (bool, error) {
	return onJob(ctx, s, "live output "+id, id, func(r *Redis) (bool, error) { return r.AddOutput(ctx, id, attempt, seq, chunk) })
}

// AddProgress keeps a progress report in the job's shard.
func (s *Sharded) AddProgress(ctx context.Context, id string, attempt int, p Progress) (bool, error) {
	return onJob(ctx, s, "live progress "+id, id, func(r *Redis) (bool, error) { return r.AddProgress(ctx, id, attempt, p) })
}

// Live reads the notes in the job's shard.
func (s *Sharded) Live(ctx context.Context, id string) (*Live, error) {
	return onJob(ctx, s, "live "+id, id, func(r *Redis) (*Live, error) { return r.Live(ctx, id) })
}

// memLive is a job's live notes in the memory store.
type memLive struct {
	Live
	bytes int
	seqs  map[int64]bool
}

// addLive is live_add.lua on m.live. Lock should be held.
func (m *Memory) addLive(id string, attempt int, add func(l *memLive) bool) bool {
	mj := m.jobs[id]
	if mj == nil || (mj.State != Running && mj.State != Dispatched) || mj.Attempt != attempt {
		return false // a late note of a job that ended, or of another attempt
	}
	l := m.live[id]
	switch {
	case l != nil && attempt < l.Attempt:
		return false
	case l == nil || attempt > l.Attempt:
		if m.live == nil {
			m.live = make(map[string]*memLive)
		}
		l = &memLive{Live: Live{Attempt: attempt}, seqs: make(map[int64]bool)}
		m.live[id] = l
	}
	return add(l)
}

// AddOutput keeps a chunk, as the Redis store does.
func (m *Memory) AddOutput(ctx context.Context, id string, attempt int, seq int64, chunk []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLive(id, attempt, func(l *memLive) bool {
		switch {
		case l.bytes+len(chunk) > MaxLiveOutput:
			l.Truncated = true
			return false
		case l.seqs[seq]:
			return false
		}
		l.seqs[seq] = true
		l.bytes += len(chunk)
		l.Output = append(l.Output, Chunk{Seq: seq, Data: slices.Clone(chunk)})
		return true
	}), nil
}

// AddProgress keeps a progress report, as the Redis store does.
func (m *Memory) AddProgress(ctx context.Context, id string, attempt int, p Progress) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	p.At = fromMS(ms(p.At)) // as JSON keeps it
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLive(id, attempt, func(l *memLive) bool {
		if len(l.Progress) >= MaxLiveProgress {
			l.Truncated = true
			return false
		}
		l.Progress = append(l.Progress, p)
		return true
	}), nil
}

// Live returns a copy of the job's notes.
func (m *Memory) Live(ctx context.Context, id string) (*Live, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.live[id]
	if l == nil {
		return &Live{}, nil
	}
	out := &Live{Attempt: l.Attempt, Output: slices.Clone(l.Output), Progress: slices.Clone(l.Progress), Truncated: l.Truncated}
	slices.SortFunc(out.Output, func(a, b Chunk) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortStableFunc(out.Progress, func(a, b Progress) int { return a.At.Compare(b.At) })
	return out, nil
}
