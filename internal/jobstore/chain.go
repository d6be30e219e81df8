package jobstore

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
)

// A job's event log is a hash chain: each event carries Chain, the hex
// SHA-1 of the chain before it (the previous event's Chain; "" for the
// first) followed by the event's canonical encoding, and the job keeps the
// last one (Job.Chain). The stores compute it as they append (Redis in
// its scripts, with redis.sha1hex — the one digest Redis's Lua has); a
// reader recomputes it (VerifyEvents) and finds the first event altered,
// removed or moved. Like the workflow log's, it shows changes made behind
// the store's back; whoever can rewrite the store can rewrite the chain.

// Canonical is e's canonical encoding, the input of its chain link: its
// time in Unix ms, state, reason, message and worker, each prefixed with
// its length.
func Canonical(e Event) string {
	var buf [160]byte
	return string(appendCanonical(buf[:0], e))
}

// appendCanonical appends e's canonical encoding to b: Canonical without a
// string, so that a link is computed on the stack for a common event.
func appendCanonical(b []byte, e Event) []byte {
	var at [20]byte
	b = appendField(b, strconv.AppendInt(at[:0], e.At.UnixMilli(), 10))
	for _, f := range [...]string{string(e.State), e.Reason, e.Message, e.WorkerID} {
		b = appendField(b, f)
	}
	return b
}

// appendField appends f with its length before it.
func appendField[F string | []byte](b []byte, f F) []byte {
	b = strconv.AppendInt(b, int64(len(f)), 10)
	b = append(b, ':')
	return append(b, f...)
}

// ChainOf is the chain link of e after prev.
func ChainOf(prev string, e Event) string {
	var buf [256]byte
	h := sha1.Sum(appendCanonical(append(buf[:0], prev...), e))
	var x [2 * sha1.Size]byte
	hex.Encode(x[:], h[:])
	return string(x[:])
}

// ChainError names the first event of a job's log that does not hold.
type ChainError struct {
	Index  int // 0-based; len(events) for a log whose end is gone
	Reason string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("jobstore: event %d: %s", e.Index+1, e.Reason)
}

// VerifyEvents recomputes the chain of events (oldest first) and checks it
// ends at head, the job's Chain. It returns nil, or a *ChainError naming
// the first event altered, removed or moved (or that the log's last
// events are gone).
func VerifyEvents(events []Event, head string) error {
	prev := ""
	for i, e := range events {
		want := ChainOf(prev, e)
		if e.Chain != want {
			if e.Chain != "" && i+1 < len(events) && events[i+1].Chain == ChainOf(prev, events[i+1]) {
				return &ChainError{Index: i, Reason: "is missing or out of place: the next event follows the one before it"}
			}
			return &ChainError{Index: i, Reason: "was altered, removed or moved: its chain link does not match"}
		}
		prev = want
	}
	if prev != head {
		return &ChainError{Index: len(events), Reason: "the log ends early: the job's chain goes on past its last event (events were removed)"}
	}
	return nil
}
