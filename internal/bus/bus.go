package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"google.golang.org/protobuf/proto"
)

var (
	malformed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_bus_malformed_messages_total",
		Help: "Messages that could not be decoded, by subscription subject.",
	}, []string{"subject"})
	panics = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_bus_handler_panics_total",
		Help: "Handler panics recovered, by subscription subject.",
	}, []string{"subject"})
)

var refused = promauto.NewCounter(prometheus.CounterOpts{
	Name: "ward_bus_refused_total",
	Help: "Asynchronous errors the NATS server sent this process: permission violations of publishes and subscriptions, slow consumers.",
})

// Malformed returns the counter of undecodable messages for a subscription
// subject: handlers that decode on their own count there too (Subscribe
// counts its own), and tests read it.
func Malformed(subject string) prometheus.Counter { return malformed.WithLabelValues(subject) }

// ErrNoResponders means nobody serves the subject asked.
var ErrNoResponders = errors.New("bus: no responders")

// Conn is a NATS connection that speaks protobuf.
type Conn struct {
	nc *nats.Conn
}

// Connect dials url with opts (a credential: auth.Options). name
// identifies the process in NATS monitoring. The connection reconnects
// forever; a down server is not an error after the first connect. A
// publish or subscription the server refuses (a permissions violation) is
// logged and counted in ward_bus_refused_total, never fatal.
func Connect(url, name string, opts ...nats.Option) (*Conn, error) {
	opts = append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			refused.Inc()
			slog.Warn("nats: refused by the server", "conn", name, "subject", subject, "err", err)
		}),
	}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect %s: %w", url, err)
	}
	return &Conn{nc: nc}, nil
}

// NATS returns the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// encodeBufs holds encoding buffers: the NATS client copies what it
// publishes into its own buffer before Publish returns, so a message's
// encoding is needed only until then.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Publish encodes m and publishes it on subject.
func (c *Conn) Publish(subject string, m proto.Message) error { return c.publish(subject, "", m) }

// putEncodeBuf gives data, encoded into *bp, back to encodeBufs, unless it
// grew large: a large buffer is not kept for every message.
func putEncodeBuf(bp *[]byte, data []byte) {
	if cap(data) <= 64<<10 {
		*bp = data
		encodeBufs.Put(bp)
	}
}

// PublishRequest encodes m and publishes it on subject with reply as its
// reply subject: the answer comes to a subscription of the caller's own
// (Request makes one per call). A publish nobody subscribes to is
// answered on reply by the server, with a status 503 header (IsNoResponders).
func (c *Conn) PublishRequest(subject, reply string, m proto.Message) error {
	return c.publish(subject, reply, m)
}

// publish encodes m into a pooled buffer and publishes it on subject,
// with reply as its reply subject unless empty (nats.go refuses an empty
// one in PublishRequest).
func (c *Conn) publish(subject, reply string, m proto.Message) error {
	bp := encodeBufs.Get().(*[]byte)
	data, err := proto.MarshalOptions{}.MarshalAppend((*bp)[:0], m)
	if err != nil {
		encodeBufs.Put(bp)
		return fmt.Errorf("bus: encode for %s: %w", subject, err)
	}
	if reply == "" {
		err = c.nc.Publish(subject, data)
	} else {
		err = c.nc.PublishRequest(subject, reply, data)
	}
	putEncodeBuf(bp, data)
	return err
}

// IsNoResponders reports whether msg is the server's answer to a publish
// with a reply subject that nobody subscribed to (PublishRequest).
func IsNoResponders(msg *nats.Msg) bool {
	return len(msg.Data) == 0 && msg.Header.Get("Status") == "503" // as nats.go's own requests read it
}

// Reply answers msg with m. It does nothing when msg expects no reply.
func (c *Conn) Reply(msg *nats.Msg, m proto.Message) error {
	if msg.Reply == "" {
		return nil
	}
	return c.Publish(msg.Reply, m)
}

// Request sends req on subject and decodes the answer into reply.
func (c *Conn) Request(ctx context.Context, subject string, req, reply proto.Message) error {
	bp := encodeBufs.Get().(*[]byte)
	data, err := proto.MarshalOptions{}.MarshalAppend((*bp)[:0], req)
	if err != nil {
		encodeBufs.Put(bp)
		return fmt.Errorf("bus: encode for %s: %w", subject, err)
	}
	msg, err := c.nc.RequestWithContext(ctx, subject, data)
	putEncodeBuf(bp, data)
	return decodeReply(subject, msg, err, reply)
}

// decodeReply decodes the answer msg to a request on subject into reply,
// or says why there is none (err).
func decodeReply(subject string, msg *nats.Msg, err error, reply proto.Message) error {
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return fmt.Errorf("%w on %s", ErrNoResponders, subject)
		}
		return fmt.Errorf("bus: request %s: %w", subject, err)
	}
	if err := proto.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("bus: decode reply from %s: %w", subject, err)
	}
	return nil
}

// RequestSigned is Request with headers: sign, given the subject and the
// encoded request, returns them (an admin's identity, auth.RequestSigner).
func (c *Conn) RequestSigned(ctx context.Context, subject string, req, reply proto.Message, sign func(subject string, data []byte) (nats.Header, error)) error {
	data, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("bus: encode for %s: %w", subject, err)
	}
	h, err := sign(subject, data)
	if err != nil {
		return err
	}
	msg, err := c.nc.RequestMsgWithContext(ctx, &nats.Msg{Subject: subject, Header: h, Data: data})
	return decodeReply(subject, msg, err, reply)
}

// Flush waits until the server has processed everything published so far.
func (c *Conn) Flush() error { return c.nc.Flush() }

// Close drains the connection: pending publishes are flushed first.
func (c *Conn) Close() {
	if err := c.nc.Drain(); err != nil {
		c.nc.Close()
		return
	}
	for !c.nc.IsClosed() {
		time.Sleep(5 * time.Millisecond)
	}
}

// Workers runs message handlers on at most n goroutines at once. Several
// subscriptions may share one Workers, so that together they never exceed n.
//
// A goroutine that finished a handler waits for the next one rather than
// ending, so that a busy subscription does not start a goroutine (and grow
// its stack again through the store and bus calls) for every message: a
// handler is handed to an idle goroutine when there is one, and a new
// goroutine starts only while fewer than n run. Wait ends the idle ones.
type Workers struct {
	sem   chan struct{} // a token per goroutine, busy or idle
	work  chan func()   // unbuffered: the hand-off to an idle goroutine
	quit  chan struct{} // closed by Wait: idle goroutines end
	once  sync.Once
	tasks sync.WaitGroup // handlers running
	procs sync.WaitGroup // goroutines
}

// NewWorkers returns a Workers of n goroutines (at least 1).
func NewWorkers(n int) *Workers {
	return &Workers{sem: make(chan struct{}, max(n, 1)), work: make(chan func()), quit: make(chan struct{})}
}

// run runs f on a worker, blocking while all n are busy. Blocking here keeps
// further messages in the NATS client's pending buffer, which is the queue.
func (w *Workers) run(f func()) {
	w.tasks.Add(1)
	select {
	case w.work <- f: // an idle goroutine took it
	case w.sem <- struct{}{}:
		w.procs.Add(1)
		go w.loop(f)
	}
}

// loop runs f, then each handler handed to it, until Wait ends it while
// it is idle.
func (w *Workers) loop(f func()) {
	defer func() { <-w.sem; w.procs.Done() }()
	for {
		f()
		w.tasks.Done()
		select {
		case f = <-w.work:
		case <-w.quit:
			return
		}
	}
}

// Go runs f on a worker like a handler, blocking while all n are busy, so
// that work a component hands out itself shares the bound and is waited
// for by Wait.
func (w *Workers) Go(f func()) { w.run(f) }

// Wait blocks until every running handler has returned and the goroutines
// have ended, or ctx ends. A component calls it as it stops, once its
// subscriptions are drained.
func (w *Workers) Wait(ctx context.Context) error {
	w.once.Do(func() { close(w.quit) })
	done := make(chan struct{})
	go func() { w.tasks.Wait(); w.procs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler handles one decoded message. msg is the raw message, for Reply.
type Handler[P proto.Message] func(ctx context.Context, msg *nats.Msg, m P)

// Subscription is a decoding subscription.
type Subscription struct {
	sub *nats.Subscription
}

// Subscribe decodes every message on subject (in queue group queue, if not
// empty) into a new T and runs h on w. A message that does not decode is
// logged and counted in ward_bus_malformed_messages_total, and dropped; a
// handler that panics is logged and counted, and the subscription goes on.
func Subscribe[T any, P interface {
	*T
	proto.Message
}](ctx context.Context, c *Conn, subject, queue string, w *Workers, log *slog.Logger, h Handler[P]) (*Subscription, error) {
	cb := func(msg *nats.Msg) {
		m := P(new(T))
		if err := proto.Unmarshal(msg.Data, m); err != nil {
			malformed.WithLabelValues(subject).Inc()
			log.Warn("malformed message dropped", "subject", msg.Subject, "bytes", len(msg.Data), "err", err)
			return
		}
		w.run(func() {
			defer func() {
				if r := recover(); r != nil {
					panics.WithLabelValues(subject).Inc()
					log.Error("handler panic", "subject", msg.Subject, "panic", r, "stack", string(debug.Stack()))
				}
			}()
			h(ctx, msg, m)
		})
	}
	var (
		sub *nats.Subscription
		err error
	)
	if queue != "" {
		sub, err = c.nc.QueueSubscribe(subject, queue, cb)
	} else {
		sub, err = c.nc.Subscribe(subject, cb)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	// The defaults (64 MiB) are far below what a burst of small jobs may
	// queue while every worker is busy; a slow consumer would drop them.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	return &Subscription{sub: sub}, nil
}

// Drain stops new deliveries, lets the messages already received reach the
// handlers, and returns once the subscription is closed or ctx ends. The
// handlers may still run: wait on their Workers.
func (s *Subscription) Drain(ctx context.Context) error {
	if err := s.sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("bus: drain %s: %w", s.sub.Subject, err)
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.sub.IsValid() {
		select {
		case <-ctx.Done():
			_ = s.sub.Unsubscribe()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
