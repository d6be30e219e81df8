package safety

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// The Client sends its checks over CheckStream streams, one to each
// kernel it was given (the balancer puts each new stream on the next
// kernel that is connected): a check is then a message each way, not a
// call with its own stream, headers and trailers, which roughly halves
// what a remote check costs both sides in CPU. A stream that breaks (its
// kernel died, the connection was reset) fails the checks in flight on
// it, which are asked again on another (streamTries), and is opened again
// by the next check. A kernel that does not serve CheckStream (one older
// than it) is asked with Check, a call each, from then on.

// streamTries is how many streams a check is sent on at most, when the
// ones before broke under it: as the unary calls' retry policy, within
// the check's timeout.
const streamTries = 3

// streams are the Client's CheckStreams.
type streams struct {
	rpc    safetyv1.SafetyKernelClient
	slots  []streamSlot
	next   atomic.Uint64 // round robin over slots
	unary  atomic.Bool   // the kernel does not serve CheckStream
	ctx    context.Context
	cancel context.CancelFunc // ends every stream (Close)
}

// streamSlot holds one stream, opened on demand.
type streamSlot struct {
	mu sync.Mutex
	s  *liveStream // nil: none open
}

// liveStream is one open CheckStream and the calls waiting on it.
type liveStream struct {
	ready  chan struct{} // closed once opened, or failed to (err)
	stream safetyv1.SafetyKernel_CheckStreamClient
	cancel context.CancelFunc
	sendMu sync.Mutex // Send is not safe for concurrent use

	mu      sync.Mutex
	ids     uint64
	pending map[uint64]chan streamAnswer
	err     error // why it broke; set once
}

// streamAnswer is a call's answer, or why its stream broke (err).
type streamAnswer struct {
	res *safetyv1.CheckResult
	err error
}

func newStreams(rpc safetyv1.SafetyKernelClient, n int) *streams {
	ctx, cancel := context.WithCancel(context.Background())
	return &streams{rpc: rpc, slots: make([]streamSlot, max(n, 1)), ctx: ctx, cancel: cancel}
}

// check asks for a decision on req: over a stream, or with a call of its
// own where the kernel serves no streams. Its error is a gRPC status
// error, as the call's would be.
func (ss *streams) check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	var err error
	for range streamTries {
		if ss.unary.Load() {
			return ss.rpc.Check(ctx, req)
		}
		var res *safetyv1.CheckResult
		res, err = ss.once(ctx, req)
		switch {
		case err == nil && res.GetCode() != 0:
			return nil, status.Error(codes.Code(res.GetCode()), res.GetMessage())
		case err == nil:
			return res.GetResponse(), nil
		case status.Code(err) == codes.Unimplemented:
			ss.unary.Store(true)
			return ss.rpc.Check(ctx, req)
		case ctx.Err() != nil:
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		// The stream broke under the call: again, on a stream opened anew
		// (with several kernels, the balancer puts it on one connected).
	}
	return nil, err
}

// once sends req on a stream and waits for its answer. An error is the
// stream's (it broke, or could not be opened) or ctx's.
func (ss *streams) once(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResult, error) {
	ls := ss.open(&ss.slots[ss.next.Add(1)%uint64(len(ss.slots))])
	select {
	case <-ls.ready:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	id, answer, err := ls.add()
	if err != nil {
		return nil, err
	}
	ls.sendMu.Lock()
	err = ls.stream.Send(&safetyv1.CheckCall{Id: id, Request: req})
	ls.sendMu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) {
		ls.remove(id)
		ls.broke(err)
		return nil, ls.why()
	}
	// Sent, or the stream had ended (io.EOF): then its receiver learns
	// why, and fails the call with it.
	select {
	case a := <-answer:
		return a.res, a.err
	case <-ctx.Done():
		ls.remove(id) // its answer, should it come, is dropped
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// open returns slot's stream, opening one when it has none or it broke.
// The stream is opened on a goroutine of its own, which then receives
// its answers, so that each caller waits for it no longer than its own
// timeout (ready).
func (ss *streams) open(slot *streamSlot) *liveStream {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.s != nil && slot.s.why() == nil {
		return slot.s
	}
	ctx, cancel := context.WithCancel(ss.ctx)
	ls := &liveStream{ready: make(chan struct{}), cancel: cancel, pending: map[uint64]chan streamAnswer{}}
	slot.s = ls
	go func() {
		stream, err := ss.rpc.CheckStream(ctx)
		if err != nil {
			ls.broke(err)
			close(ls.ready)
			return
		}
		ls.stream = stream
		close(ls.ready)
		ls.receive()
	}()
	return ls
}

// receive hands each answer to its call until the stream breaks, then
// fails the calls still waiting.
func (ls *liveStream) receive() {
	for {
		res, err := ls.stream.Recv()
		if err != nil {
			ls.broke(err)
			return
		}
		ls.mu.Lock()
		answer, ok := ls.pending[res.GetId()]
		delete(ls.pending, res.GetId())
		ls.mu.Unlock()
		if ok { // else its caller gave up on it
			answer <- streamAnswer{res: res}
		}
	}
}

// add registers a call and returns its id and where its answer comes.
func (ls *liveStream) add() (uint64, chan streamAnswer, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.err != nil {
		return 0, nil, ls.err
	}
	ls.ids++
	answer := make(chan streamAnswer, 1)
	ls.pending[ls.ids] = answer
	return ls.ids, answer, nil
}

// remove forgets a call nobody waits for any more.
func (ls *liveStream) remove(id uint64) {
	ls.mu.Lock()
	delete(ls.pending, id)
	ls.mu.Unlock()
}

// broke marks the stream broken with err (the first reason stands), ends
// it, and fails every call waiting on it.
func (ls *liveStream) broke(err error) {
	ls.mu.Lock()
	if ls.err == nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.Unavailable, "safety: check stream: "+err.Error())
		}
		ls.err = err
	}
	pending := ls.pending
	ls.pending = map[uint64]chan streamAnswer{}
	why := ls.err
	ls.mu.Unlock()
	ls.cancel()
	for _, answer := range pending {
		answer <- streamAnswer{err: why}
	}
}

// why is why the stream broke; nil while it is open.
func (ls *liveStream) why() error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.err
}

// close ends every stream; their receivers then end.
func (ss *streams) close() { ss.cancel() }
