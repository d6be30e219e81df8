package host

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
)

// acks are the host's results waiting for a scheduler's answer
// (sendResult). Each result gets a number, seq, and is sent with the reply
// subject bus.ResultAckSubject(host, seq). A scheduler answers it in a
// batch, wardv1.ResultAcks on bus.ResultAcksSubject(host), with the seqs
// of every result it applied meanwhile, one message for many results; an
// earlier scheduler answers each on its reply subject with an empty
// message. Both subjects are in the host's inbox, where only the host may
// subscribe and only the control plane publish.
//
// The first seq is random, so that an answer meant for an earlier boot's
// result (late, after a restart) names no result of this one, and no one
// guesses the subject of a result to come.
type acks struct {
	mu      sync.Mutex // guards the 3 following fields
	next    uint64
	waiting map[uint64]chan error
	subs    []*nats.Subscription
}

// start subscribes to the host's answers; a host calls it before it takes
// a job.
func (k *acks) start(a *Agent) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next = rand.Uint64() >> 1 // room to count up
	k.waiting = make(map[uint64]chan error)
	nc := a.cfg.Bus.NATS()
	one, err := nc.Subscribe(bus.ResultAckSubjects(a.cfg.ID), func(m *nats.Msg) {
		seq, ok := bus.ResultAckSeq(a.cfg.ID, m.Subject)
		if !ok {
			return
		}
		var err error
		if bus.IsNoResponders(m) {
			err = fmt.Errorf("%w on the results' subject", bus.ErrNoResponders)
		}
		k.answer(seq, err)
	})
	if err != nil {
		return err
	}
	k.subs = append(k.subs, one)
	batch, err := nc.Subscribe(bus.ResultAcksSubject(a.cfg.ID), func(m *nats.Msg) {
		var r wardv1.ResultAcks
		if err := proto.Unmarshal(m.Data, &r); err != nil {
			bus.Malformed(bus.ResultAcksSubject("*")).Inc()
			a.log.Warn("malformed answer to results dropped", "subject", m.Subject, "bytes", len(m.Data), "err", err)
			return
		}
		for _, seq := range r.GetSeqs() {
			k.answer(seq, nil)
		}
	})
	if err != nil {
		return err
	}
	k.subs = append(k.subs, batch)
	return nil
}

// stop unsubscribes: the host sends no more results.
func (k *acks) stop() {
	k.mu.Lock()
	subs := k.subs
	k.subs = nil
	k.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
}

// add numbers a result to be sent: answered gets its answer, nil when a
// scheduler took it, bus.ErrNoResponders when none listens. Call done
// once the result is answered or given up.
func (k *acks) add() (seq uint64, answered <-chan error) {
	ch := make(chan error, 1)
	k.mu.Lock()
	k.next++
	seq = k.next
	k.waiting[seq] = ch
	k.mu.Unlock()
	return seq, ch
}

// done forgets result seq.
func (k *acks) done(seq uint64) {
	k.mu.Lock()
	delete(k.waiting, seq)
	k.mu.Unlock()
}

// answer tells result seq's sender its answer. An answer to a result no
// longer waiting (answered already: sent twice and answered twice) is
// dropped, as is one while an earlier is unread.
func (k *acks) answer(seq uint64, err error) {
	k.mu.Lock()
	ch := k.waiting[seq]
	k.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- err:
	default:
	}
}
