package sandbox

import (
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// Bounds of a run's streamed output (ward.stream_write). A chunk goes out
// when streamChunkBytes are pending, or streamEvery after the first pending
// byte was written: a guest that streams a token at a time sends at most
// one message per streamEvery, and one that floods sends chunks of
// streamChunkBytes until the run's output limit, after which its writes
// are refused. Either way a run sends at most
// maxOutput/streamChunkBytes + duration/streamEvery messages.
const (
	streamChunkBytes = 16 << 10
	streamEvery      = 50 * time.Millisecond
)

// streamer coalesces what a guest streams into numbered chunks and hands
// them to emit in order. The guest's goroutine writes; a timer flushes the
// tail, so emit may run on the timer's goroutine, never at the same time.
type streamer struct {
	emit func(seq int, chunk []byte)
	max  int // bytes a run may stream

	mu     sync.Mutex // guards the 6 following fields
	buf    []byte
	seq    int
	total  int
	timer  *time.Timer
	armed  bool // a tick is due
	closed bool
}

// write queues p; it reports false, queuing nothing, past the run's cap.
func (s *streamer) write(p []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.total+len(p) > s.max {
		return false
	}
	s.total += len(p)
	if s.emit == nil || len(p) == 0 {
		return true
	}
	s.buf = append(s.buf, p...)
	for len(s.buf) >= streamChunkBytes {
		s.send(streamChunkBytes)
	}
	if len(s.buf) > 0 && !s.armed {
		s.armed = true
		if s.timer == nil {
			s.timer = time.AfterFunc(streamEvery, s.tick)
		} else {
			s.timer.Reset(streamEvery)
		}
	}
	return true
}

// tick sends what is pending.
func (s *streamer) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if !s.closed && len(s.buf) > 0 {
		s.send(len(s.buf))
	}
}

// send emits the first n pending bytes as the next chunk.
// Lock must be held.
func (s *streamer) send(n int) {
	chunk := make([]byte, n)
	copy(chunk, s.buf)
	s.buf = append(s.buf[:0], s.buf[n:]...)
	s.seq++
	s.emit(s.seq, chunk)
}

// close sends what is pending and refuses later writes. The run calls it
// before it returns, so every chunk is out before the result.
func (s *streamer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if len(s.buf) > 0 {
		s.send(len(s.buf))
	}
}

// stream_write(ptr, len) -> i32: appends to the job's streamed output,
// which those following the job see as it is written (an LLM's tokens);
// it is not the result. Past the run's output limit in all, writes are
// refused with ErrnoLimit and the run goes on.
func hostStreamWrite(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	if uint64(n) > uint64(c.stream.max) {
		return errno(c.fail(ErrnoLimit, "stream_write: over the %d bytes a run may stream", c.stream.max))
	}
	b, ok := read(mod, ptr, n)
	if !ok {
		return errno(c.fail(ErrnoInvalid, "stream_write: [%d, +%d) is outside the module's memory", ptr, n))
	}
	if !c.stream.write(b) {
		return errno(c.fail(ErrnoLimit, "stream_write: over the %d bytes a run may stream; dropped", c.stream.max))
	}
	return 0
}
