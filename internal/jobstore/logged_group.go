package jobstore

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// logGroup is the logs one process owns (Owned's shards). A writer about
// to append a batch of its log takes along the batches the group's other
// logs have queued (those whose writer is not busy with one), and sends
// them all in one pipeline: the process then pays one round trip to
// Redis a turn rather than one a log, however many shards it owns. Each
// script still appends to one log, at that log's epoch and sequence, and
// each log's batches still go in order (its writing lock); a batch that
// fails in the pipeline is sent again alone, with its log's retries.
type logGroup struct {
	mu   sync.Mutex
	logs []*Logged
}

func (g *logGroup) add(l *Logged) {
	g.mu.Lock()
	g.logs = append(g.logs, l)
	g.mu.Unlock()
}

func (g *logGroup) remove(l *Logged) {
	g.mu.Lock()
	g.logs = slices.DeleteFunc(g.logs, func(x *Logged) bool { return x == l })
	g.mu.Unlock()
}

// append appends b, whose log's writing is held, with the batches the
// other logs have queued, then settles each (appended) and lets their
// logs' writing go.
func (g *logGroup) append(b *outBatch) {
	batches := []*outBatch{b}
	g.mu.Lock()
	logs := slices.Clone(g.logs)
	g.mu.Unlock()
	for _, o := range logs {
		if o == b.l || !o.writing.TryLock() {
			continue // its writer appends it (order), or it is b's
		}
		ob := o.take(false)
		switch {
		case ob == nil:
			o.writing.Unlock()
		case ob.records == 0: // barriers alone: nothing to append
			o.appended(ob)
			o.writing.Unlock()
		default:
			batches = append(batches, ob)
		}
	}
	bufs := make([][]byte, len(batches))
	for i, x := range batches {
		bufs[i] = x.buf()
	}
	if len(batches) == 1 {
		b.id, b.err = b.l.append(b.seq, bufs[0])
	} else {
		appendPipelined(batches, bufs)
	}
	for _, x := range batches {
		x.l.appended(x)
		x.l.writing.Unlock()
	}
}

// appendPipelined appends each batch to its log in one pipeline; one
// that fails for a reason a retry may change goes again alone (append).
func appendPipelined(batches []*outBatch, bufs [][]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pipe := batches[0].l.c.Pipeline()
	cmds := make([]*redis.Cmd, len(batches))
	for i, b := range batches {
		l := b.l
		cmds[i] = evalSha(ctx, appendBatch, []string{l.keys.stream, l.keys.epoch, l.keys.seq},
			[]any{strconv.FormatInt(l.epoch, 10), strconv.FormatInt(b.seq, 10), bufs[i]})
		_ = pipe.Process(ctx, cmds[i])
	}
	_, _ = pipe.Exec(ctx) // each command's outcome is its own
	shared := -1
	for i, b := range batches {
		id, err := cmds[i].Text()
		switch final := finalErr(err); {
		case err == nil:
			b.id = id
			shared++
		case final != nil:
			b.err = final
		default: // NOSCRIPT (a restarted Redis), a timeout: alone, with retries
			b.id, b.err = b.l.append(b.seq, bufs[i])
		}
	}
	if shared > 0 {
		logShared.Add(float64(shared))
	}
}
