package scheduler

import (
	"log/slog"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
)

var (
	resultAcks = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_scheduler_result_acks_total",
		Help: "Host results answered in batches (wardv1.ResultAcks): applied, or refused for good.",
	})
	resultAckBatches = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_scheduler_result_ack_batches_total",
		Help: "Batches of answers to host results published: ward_scheduler_result_acks_total over it is the answers a message.",
	})
)

// acker answers hosts' results in batches. A result handler adds the
// result's seq (bus.ResultAckSeq of its reply subject) once the result is
// applied or refused for good; the acker publishes, for each host, one
// wardv1.ResultAcks on bus.ResultAcksSubject with every seq added since
// its last batch: one message for many results, where each result had an
// answer of its own. It yields once before it takes a batch, so that the
// handlers finishing meanwhile add theirs to it.
//
// A batch that is lost (the process killed before it published it, a cut
// connection) loses nothing: the hosts send those results again, and a
// result sent again for a job that moved on is refused as late, and
// answered.
type acker struct {
	bus *bus.Conn
	log *slog.Logger

	mu      sync.Mutex          // guards seqs
	seqs    map[string][]uint64 // host → seqs to answer
	wake    chan struct{}       // 1-buffered: seqs were added
	quit    chan struct{}       // closed by close
	done    chan struct{}       // closed when run returns
	started bool
	once    sync.Once
}

func newAcker(c *bus.Conn, log *slog.Logger) *acker {
	return &acker{bus: c, log: log, seqs: make(map[string][]uint64), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// start runs the acker until close.
func (k *acker) start() {
	k.mu.Lock()
	k.started = true
	k.mu.Unlock()
	go k.run()
}

// close publishes what was added and stops the acker; the result handlers
// have returned.
func (k *acker) close() {
	k.once.Do(func() { close(k.quit) })
	k.mu.Lock()
	started := k.started
	k.mu.Unlock()
	if started {
		<-k.done
	}
}

// add answers host's result seq in the next batch.
func (k *acker) add(host string, seq uint64) {
	k.mu.Lock()
	k.seqs[host] = append(k.seqs[host], seq)
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

func (k *acker) run() {
	defer close(k.done)
	for {
		select {
		case <-k.wake:
			runtime.Gosched()
			k.flush()
		case <-k.quit:
			k.flush()
			return
		}
	}
}

// flush publishes a batch for each host with seqs added.
func (k *acker) flush() {
	k.mu.Lock()
	batch := k.seqs
	if len(batch) == 0 {
		k.mu.Unlock()
		return
	}
	k.seqs = make(map[string][]uint64, len(batch))
	k.mu.Unlock()
	for host, seqs := range batch {
		if err := k.bus.Publish(bus.ResultAcksSubject(host), &wardv1.ResultAcks{Seqs: seqs}); err != nil {
			publishFailures.WithLabelValues("result_acks").Inc()
			k.log.Warn("answers to results not sent: the host sends them again", "worker_id", host, "results", len(seqs), "err", err)
			continue
		}
		resultAcks.Add(float64(len(seqs)))
		resultAckBatches.Inc()
	}
}
