package jobstore

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The hot path's script calls (a job's creation and its moves) and plain
// commands (a host's SET of a result) are group-committed: one sender
// takes the calls that are waiting when it is free and sends them in one
// pipeline, one write and one read for them all, on both sides of the
// connection. A call that finds the sender idle goes alone, at once; under
// load the calls that arrive while its round trip is in flight go together
// in the next. One sender, not several: an idle second sender takes alone
// a call that would have shared a trip, and every trip costs a write and a
// read here and in Redis (measured with `make bench-peers`: four senders
// took about 10 % more CPU a job than one, and a higher p99). Every script
// still runs atomically on its own: a pipeline only shares the trip.
// Scripts that may run long (listings, sweeps) do not queue here, so as not
// to hold the hot path up behind them (hotScript).
const (
	batchSenders = 1  // round trips in flight at most
	batchMax     = 64 // calls in one pipeline at most
)

// call is one script run, or one plain command (script nil, cmd made
// beforehand), waiting for a sender.
type call struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{}
}

// batcher sends script calls in pipelines.
type batcher struct {
	c     redis.UniversalClient
	calls chan *call
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once // starts the senders
	ended sync.Once // stops them
}

func newBatcher(c redis.UniversalClient) *batcher {
	return &batcher{c: c, calls: make(chan *call), stop: make(chan struct{})}
}

// run runs script with keys and args: in a pipeline with others when they
// wait together. A call whose ctx ends before it is sent is not sent.
func (b *batcher) run(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	return b.wait(&call{ctx: ctx, script: script, keys: keys, args: args, done: make(chan struct{})})
}

// do sends the command args (its name first), in a pipeline with others
// when they wait together.
func (b *batcher) do(ctx context.Context, args ...any) *redis.Cmd {
	return b.wait(&call{ctx: ctx, cmd: redis.NewCmd(context.WithoutCancel(ctx), args...), done: make(chan struct{})})
}

// wait hands c to a sender and waits for its answer.
func (b *batcher) wait(c *call) *redis.Cmd {
	ctx := c.ctx
	b.once.Do(func() {
		for range batchSenders {
			b.wg.Add(1)
			go b.send()
		}
	})
	select {
	case b.calls <- c:
	case <-ctx.Done():
		return failed(ctx, ctx.Err())
	case <-b.stop:
		return failed(ctx, redis.ErrClosed)
	}
	// Once taken, a call is sent whatever its ctx does, and its answer
	// awaited: the caller learns whether the script ran.
	<-c.done
	return c.cmd
}

// failed is a Cmd that failed with err before it was sent.
func failed(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}

// send is a sender: it takes a call, then every call waiting, and sends
// them.
func (b *batcher) send() {
	defer b.wg.Done()
	batch := make([]*call, 0, batchMax)
	for {
		select {
		case c := <-b.calls:
			batch = append(batch[:0], c)
		case <-b.stop:
			return
		}
	more:
		for len(batch) < batchMax {
			select {
			case c := <-b.calls:
				batch = append(batch, c)
			default:
				break more
			}
		}
		b.flush(batch)
	}
}

// flush sends batch: one call on its own, several in a pipeline, as
// EVALSHAs and commands; a call the server lacks the script for is sent
// again on its own (EVAL, which loads it).
func (b *batcher) flush(batch []*call) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.cmd = failed(c.ctx, err)
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	// A call taken is sent whatever its ctx does from now on (wait), so
	// it is sent without it: no hook reads a context's values here.
	bg := context.Background()
	for _, c := range live {
		if c.script != nil {
			c.cmd = evalSha(bg, c.script, c.keys, c.args)
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		_ = b.c.Process(bg, live[0].cmd)
	default:
		pipe := b.c.Pipeline()
		for _, c := range live {
			_ = pipe.Process(bg, c.cmd)
		}
		_, _ = pipe.Exec(bg)
	}
	for _, c := range live {
		if err := c.cmd.Err(); err != nil && c.script != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			c.cmd = c.script.Run(bg, b.c, c.keys, c.args...)
		}
		close(c.done)
	}
}

// evalSha is the EVALSHA of script with keys and args, as go-redis's
// EvalSha makes it, but with the keys passed by pointer (see anys): no
// allocation a key.
func evalSha(ctx context.Context, script *redis.Script, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", script.Hash(), len(keys))
	for i := range keys {
		a = append(a, &keys[i])
	}
	cmd := redis.NewCmd(ctx, append(a, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a cluster routes the call by its first key
	}
	return cmd
}

// close stops the senders; calls still waiting get redis.ErrClosed.
func (b *batcher) close() {
	b.ended.Do(func() { close(b.stop) })
	b.wg.Wait()
}
