// Package client is Ward's Go client: what a program imports to submit
// jobs, follow them, read them back and cancel them. The `ward` command's
// client commands use it too. It talks to a running system only over NATS,
// never by opening the job store, so it needs nothing but a NATS URL
// (`ward dev` listens on DefaultNATSURL) and a credential (`ward dev`
// writes them; `ward auth tenant add` issues a tenant's). The tenant is the
// credential's:
//
//	c, err := client.Dial(client.NATSURL(""), client.Options{Creds: "acme.creds"})
//	req := &wardv1.JobRequest{JobId: uuid.NewString(), Topic: "job.echo", Payload: []byte("hi")}
//	w, err := c.Watch(req.JobId)                // before Submit: no event is missed
//	_, err = c.Submit(ctx, req)                 // ErrRefused wraps a refusal and its reason code
//	last, err := c.Wait(ctx, req.JobId, w, nil) // the final event: SUCCEEDED, FAILED, DENIED ...
//	job, err := c.Get(ctx, req.JobId, true)     // the stored job, its events, decision and result (read by pointer when large)
//
// Reason codes (a refusal's, a job's end) are those of package
// github.com/ward-run/ward/api/reason.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/telemetry"
)

// DefaultNATSURL is where `ward dev` listens.
const DefaultNATSURL = "nats://127.0.0.1:4222"

// NATSURL returns flag when set, else $NATS_URL, else DefaultNATSURL.
func NATSURL(flag string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv("NATS_URL"); v != "" {
		return v
	}
	return DefaultNATSURL
}

// ErrRefused wraps a submission the scheduler refused; the message carries
// the reason code.
var ErrRefused = errors.New("submission refused")

// Client is a connection to a Ward system, as one tenant, or as an admin.
type Client struct {
	bus *bus.Conn
	// tenant is the tenant this client submits for and whose jobs it sees;
	// for an admin, the tenant it submits for by default.
	tenant string
	// admin sees every tenant's jobs.
	admin bool
	// bound: the tenant is a tenant credential's, and a request naming
	// another is sent on its subject anyway (and refused); otherwise (an
	// admin, or no credential) the request's tenant picks the subject.
	bound bool
	// signer signs the admin requests of a client with an admin's
	// credential (auth.RequestSigner), so that the scheduler that carries
	// them out knows and audits who asked; nil without one.
	signer *auth.RequestSigner

	objsOnce sync.Once
	objs     *bus.Objects
	objsErr  error

	// retry is Options.SubmitRetry (0: never).
	retry time.Duration

	// shards: each tenant's shard of a store of shards with owners, as a
	// submission's reply said (SubmitReply.shard): its later submissions
	// go straight to the shard's owner.
	shards sync.Map // tenant -> shard
}

// DefaultTenant is the tenant of a client that names none.
const DefaultTenant = "default"

// Options say who a client is.
type Options struct {
	// Creds is the .creds file of a tenant or admin credential ($WARD_CREDS
	// for the CLI). A tenant credential is the tenant: Tenant must be empty
	// or the same. Empty: no credential (a system run --insecure).
	Creds string
	// Tenant is the tenant to submit for: an admin's default, or the
	// tenant of a client without a credential. DefaultTenant when empty.
	Tenant string
	// Admin, without a credential, queries every tenant's jobs (with one,
	// the credential decides).
	Admin bool
	// SubmitRetry is how long Submit sends a submission again while nobody
	// could take it: no scheduler answered (a restart, or, with shards
	// with owners, a shard between owners: about a lease), or the store was
	// unavailable (store_error). It sends the same request, job id and
	// all, which a scheduler answers as a duplicate when an earlier try
	// made the job. 0: DefaultSubmitRetry; below 0: never. ctx bounds it too.
	SubmitRetry time.Duration
	// TLS, when set, makes the client speak TLS to NATS: CA verifies the
	// server (empty: the system's roots), Cert and Key are the client's
	// own for a server that requires one ($WARD_TLS_CA, $WARD_TLS_CERT,
	// $WARD_TLS_KEY for the CLI).
	TLS auth.TLSFiles
}

// DefaultSubmitRetry is Options.SubmitRetry's default.
const DefaultSubmitRetry = 10 * time.Second

// New wraps an existing bus connection, as o says.
func New(c *bus.Conn, o Options) *Client {
	t := o.Tenant
	if t == "" {
		t = DefaultTenant
	}
	retry := o.SubmitRetry
	if retry == 0 {
		retry = DefaultSubmitRetry
	}
	return &Client{bus: c, tenant: t, admin: o.Admin, retry: max(retry, 0)}
}

// Dial connects to NATS at url as o says.
func Dial(url string, o Options) (*Client, error) {
	bound := false
	var signer *auth.RequestSigner
	if o.Creds == "" {
		// No credential: a system run --insecure, where nothing tells
		// tenants apart; queries see every tenant's jobs, as an admin's.
		o.Admin = true
	} else {
		id, _, err := auth.ReadIdentity(o.Creds)
		if err != nil {
			return nil, err
		}
		switch id.Role {
		case auth.Tenant:
			bound = true
			if o.Tenant != "" && o.Tenant != id.Name {
				return nil, fmt.Errorf("the credential %s is tenant %q's; it cannot act for tenant %q", o.Creds, id.Name, o.Tenant)
			}
			o.Tenant, o.Admin = id.Name, false
		case auth.Admin:
			o.Admin = true
			if signer, err = auth.NewRequestSigner(o.Creds); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("the credential %s is a %s's, not a tenant's or an admin's", o.Creds, id.Role)
		}
	}
	if o.Tenant != "" {
		if err := auth.ValidName("tenant", o.Tenant); err != nil {
			return nil, err
		}
	}
	opts, err := auth.Options(o.Creds)
	if err != nil {
		return nil, err
	}
	tlsOpts, err := o.TLS.NATSOptions()
	if err != nil {
		return nil, err
	}
	c, err := bus.Connect(url, "ward-client", append(opts, tlsOpts...)...)
	if err != nil {
		return nil, err
	}
	cl := New(c, o)
	cl.bound, cl.signer = bound, signer
	return cl, nil
}

// adminRequest is a request only an admin's credential may make: signed
// with it (the scheduler refuses an admin request it cannot identify),
// unsigned by a client without a credential (--insecure).
func (c *Client) adminRequest(ctx context.Context, subject string, req, reply proto.Message) error {
	if c.signer == nil {
		return c.bus.Request(ctx, subject, req, reply)
	}
	return c.bus.RequestSigned(ctx, subject, req, reply, func(subject string, data []byte) (nats.Header, error) {
		return c.signer.Sign(subject, data, time.Now())
	})
}

// scoped is a request on a subject of the client's scope: an admin
// request when the scope is every tenant's.
func (c *Client) scoped(ctx context.Context, base string, req, reply proto.Message) error {
	if c.admin {
		return c.adminRequest(ctx, bus.TenantSubject(base, bus.AllTenants), req, reply)
	}
	return c.bus.Request(ctx, bus.TenantSubject(base, c.tenant), req, reply)
}

// jobRequest is a request about the jobs of the client's scope on base
// (SubjectJobGet, SubjectJobList, SubjectCancel): an admin's is for every
// tenant (a cancel signed, as scoped sends it); a tenant's goes straight to its shard's owner when a
// submission's reply named the shard (SubmitReply.shard), and to any
// scheduler, which forwards it, when nobody takes that subject (the store
// has no shards, or the shard no owner for a moment) or none was named.
func (c *Client) jobRequest(ctx context.Context, base string, req, reply proto.Message) error {
	switch {
	case c.admin && base == bus.SubjectCancel:
		return c.scoped(ctx, base, req, reply) // signed: the scheduler audits who cancelled
	case c.admin:
		return c.bus.Request(ctx, bus.TenantSubject(base, bus.AllTenants), req, reply)
	}
	if shard, ok := c.shards.Load(c.tenant); ok {
		err := c.bus.Request(ctx, bus.ShardedTenantSubject(base, c.tenant, shard.(string)), req, reply)
		if !errors.Is(err, bus.ErrNoResponders) {
			return err
		}
		c.shards.Delete(c.tenant)
	}
	return c.bus.Request(ctx, bus.TenantSubject(base, c.tenant), req, reply)
}

// Tenant is the tenant the client submits for.
func (c *Client) Tenant() string { return c.tenant }

// scope is the tenant token of the client's queries.
func (c *Client) scope() string {
	if c.admin {
		return bus.AllTenants
	}
	return c.tenant
}

// Close closes the connection.
func (c *Client) Close() { c.bus.Close() }

// Bus returns the underlying connection.
func (c *Client) Bus() *bus.Conn { return c.bus }

// Submit sends req and returns the job id the scheduler acknowledged (the
// first job's id when the idempotency key was used before). A job id is
// generated when req has none, so that a caller can watch it first. A
// payload over bus.InlineContextMax does not travel in the submission: it
// is stored in the context bucket and req carries its pointer instead.
//
// The job's trace starts here: Submit's span ("ward.submit"), a child of
// the span in ctx if any, when this process traces (telemetry.Setup) or
// ctx's span records (the caller's own OpenTelemetry SDK); req then
// carries its traceparent and trace id. Not tracing, req carries ctx's
// span context, if it has one. A req with a traceparent already keeps it.
func (c *Client) Submit(ctx context.Context, req *wardv1.JobRequest) (_ *wardv1.SubmitReply, err error) {
	if req.JobId == "" {
		req.JobId = uuid.NewString()
	}
	if req.Traceparent == "" {
		var span trace.Span
		ctx, span = startSubmit(ctx)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("ward.job_id", req.JobId), attribute.String("ward.topic", req.Topic))
			defer func() {
				if err != nil {
					span.RecordError(err)
					span.SetStatus(codes.Error, "submission failed")
				}
				span.End()
			}()
		}
		req.Traceparent = telemetry.Traceparent(ctx)
		if id := telemetry.TraceID(req.Traceparent); id != "" && req.TraceId == "" {
			req.TraceId = id
		}
	}
	// A tenant client submits for its tenant: a request naming another is
	// sent anyway, and refused by the scheduler (tenant_mismatch).
	tenant := c.tenant
	if !c.bound && req.TenantId != "" {
		tenant = req.TenantId
	}
	if req.TenantId == "" {
		req.TenantId = tenant
	}
	if err := auth.ValidName("tenant", tenant); err != nil {
		return nil, err
	}
	if len(req.Payload) > bus.InlineContextMax {
		ptr, err := c.putContext(ctx, tenant, req.Payload)
		if err != nil {
			return nil, fmt.Errorf("the payload of %d bytes is too large for a message, and storing it failed: %w", len(req.Payload), err)
		}
		req.ContextPtr, req.Payload = ptr, nil
	}
	// Sent again while nobody could take it (Options.SubmitRetry).
	giveUp := time.Now().Add(c.retry)
	var lastReply *wardv1.SubmitReply
	var lastErr error // the last try's, when nobody could take it
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		reply, err := c.submitOnce(ctx, tenant, req)
		switch {
		case lastErr != nil && err != nil && ctx.Err() != nil:
			return lastReply, lastErr // ctx ended during a try: why the tries before failed
		case !(errors.Is(err, bus.ErrNoResponders) || reply.GetReason() == string(reason.StoreError)) || time.Now().Add(wait).After(giveUp):
			return reply, err
		}
		lastReply, lastErr = reply, err
		select {
		case <-ctx.Done():
			return reply, err
		case <-time.After(wait):
		}
	}
}

// submitOnce sends req once, on tenant's submission subject: its shard's
// owner's when a reply named it.
func (c *Client) submitOnce(ctx context.Context, tenant string, req *wardv1.JobRequest) (*wardv1.SubmitReply, error) {
	reply := &wardv1.SubmitReply{}
	subject := bus.TenantSubject(bus.SubjectSubmit, tenant)
	if shard, ok := c.shards.Load(tenant); ok {
		subject = bus.SubmitSubject(tenant, shard.(string))
	}
	err := c.bus.Request(ctx, subject, req, reply)
	if errors.Is(err, bus.ErrNoResponders) && subject != bus.TenantSubject(bus.SubjectSubmit, tenant) {
		// Nobody takes the shard's subject (the store is no longer one of
		// shards, or the shard has no owner at the moment): any scheduler.
		c.shards.Delete(tenant)
		subject = bus.TenantSubject(bus.SubjectSubmit, tenant)
		err = c.bus.Request(ctx, subject, req, reply)
	}
	if reply.GetShard() != "" {
		c.shards.Store(tenant, reply.GetShard())
	}
	if err != nil {
		if errors.Is(err, bus.ErrNoResponders) {
			return nil, fmt.Errorf("no scheduler answered on %s (is `ward dev` running? with shards with owners, the tenant's shard may have no owner for a moment: submit again): %w", subject, err)
		}
		return nil, err
	}
	if !reply.GetAccepted() {
		return reply, fmt.Errorf("%w: %s: %s", ErrRefused, reply.GetReason(), reply.GetMessage())
	}
	return reply, nil
}

// startSubmit starts a submission's span: this process's tracer's when it
// traces, else that of ctx's span when it records (a caller's own SDK),
// else none (ctx as it came, a no-op span).
func startSubmit(ctx context.Context) (context.Context, trace.Span) {
	if telemetry.Enabled() {
		return telemetry.Start(ctx, "ward.submit", trace.SpanKindProducer)
	}
	if parent := trace.SpanFromContext(ctx); parent.IsRecording() {
		return parent.TracerProvider().Tracer(telemetry.ScopeName).Start(ctx, "ward.submit", trace.WithSpanKind(trace.SpanKindProducer))
	}
	return ctx, trace.SpanFromContext(context.Background())
}

// Watcher delivers one job's events as the schedulers publish them.
type Watcher struct {
	sub  *nats.Subscription // its own subscription (Client.Watch), or
	f    *Follower          // the Follower that feeds it, its job's id
	id   string
	ch   chan *nats.Msg
	next [2]*wardv1.JobEvent // the rest of an event that told several states (Unfold), in order
	kept int                 // how many of next are unread
}

// Unfold calls f with each state change ev tells, in order: the job's
// creation (PENDING) when ev carries it (created_at_unix_ms), the state
// it moved through (via), then ev's own state, with those fields cleared.
// An event of one state is passed as it is.
func Unfold(ev *wardv1.JobEvent, f func(*wardv1.JobEvent)) {
	if at := ev.GetCreatedAtUnixMs(); at != 0 {
		f(&wardv1.JobEvent{JobId: ev.GetJobId(), State: wardv1.JobState_JOB_STATE_PENDING, AtUnixMs: at})
		ev.CreatedAtUnixMs = 0
	}
	if ev.GetVia() != wardv1.JobState_JOB_STATE_UNSPECIFIED {
		f(&wardv1.JobEvent{JobId: ev.GetJobId(), State: ev.GetVia(), AtUnixMs: ev.GetAtUnixMs(), Message: ev.GetViaMessage(),
			WorkerId: ev.GetWorkerId()})
		ev.Via, ev.ViaMessage = wardv1.JobState_JOB_STATE_UNSPECIFIED, ""
	}
	f(ev)
}

// split returns the first state change ev tells (Unfold) and keeps the
// others for the next reads.
func (w *Watcher) split(ev *wardv1.JobEvent) *wardv1.JobEvent {
	if ev.GetVia() == wardv1.JobState_JOB_STATE_UNSPECIFIED && ev.GetCreatedAtUnixMs() == 0 {
		return ev
	}
	var first *wardv1.JobEvent
	Unfold(ev, func(e *wardv1.JobEvent) {
		if first == nil {
			first = e
		} else {
			w.next[w.kept] = e
			w.kept++
		}
	})
	return first
}

// queued returns the next event split kept, if any.
func (w *Watcher) queued() *wardv1.JobEvent {
	if w.kept == 0 {
		return nil
	}
	ev := w.next[0]
	w.next[0], w.next[1] = w.next[1], nil
	w.kept--
	return ev
}

// watchBuffer is how many events a Watcher holds unread: a message that
// finds it full is dropped by NATS, so it leaves room for a burst of
// streamed output.
const watchBuffer = 1024

// Watch subscribes to job id's events: its state changes, and its progress
// and streamed output (events with Progress set). Call it before Submit so
// that no event is missed; Close it when done.
func (c *Client) Watch(id string) (*Watcher, error) {
	ch := make(chan *nats.Msg, watchBuffer)
	tenant := c.tenant
	if c.admin {
		tenant = bus.AnyTenant
	}
	sub, err := c.bus.NATS().ChanSubscribe(bus.EventSubject(tenant, id), ch)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", id, err)
	}
	if err := c.bus.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return &Watcher{sub: sub, ch: ch}, nil
}

// Follower follows many jobs over one subscription to every event of the
// client's tenant (an admin's: of every tenant), handing each job's events
// to its Watcher. A client that keeps many jobs in flight (`ward bench`, a
// gateway) uses one instead of a Watch per job, which costs a subscription
// and a round trip to the server for each job.
type Follower struct {
	sub    *nats.Subscription
	prefix string // the event subjects' prefix; the job id follows it
	mu     sync.Mutex
	jobs   map[string]chan *nats.Msg
}

// Follow subscribes to the tenant's events; Close the Follower when done.
func (c *Client) Follow() (*Follower, error) {
	tenant := c.tenant
	if c.admin {
		tenant = bus.AnyTenant
	}
	f := &Follower{prefix: bus.EventSubject(tenant, ""), jobs: map[string]chan *nats.Msg{}}
	if c.admin {
		f.prefix = "" // the tenant token varies: the id is the subject's tail
	}
	sub, err := c.bus.NATS().Subscribe(bus.EventSubject(tenant, ">"), f.route)
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	// Events come in bursts of many jobs: the Watchers' buffers bound them.
	_ = sub.SetPendingLimits(-1, -1)
	if err := c.bus.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	f.sub = sub
	return f, nil
}

// route hands an event to its job's Watcher; events of jobs nobody
// watches are dropped, and so is one that finds its Watcher's buffer full.
func (f *Follower) route(m *nats.Msg) {
	id := strings.TrimPrefix(m.Subject, f.prefix)
	if f.prefix == "" {
		// sys.job.event.<tenant>.<id>: the id is what follows the fourth dot.
		for range 4 {
			_, id, _ = strings.Cut(id, ".")
		}
	}
	f.mu.Lock()
	ch := f.jobs[id]
	f.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- m:
	default:
	}
}

// followBuffer is how many events a Follower's Watcher holds unread. It is
// smaller than a Watch's (watchBuffer), as a Follower serves many jobs at
// once: a job that streams output faster than it is read loses what
// overflows, as it would with a full Watch.
const followBuffer = 64

// Watch returns job id's Watcher, as Client.Watch does, fed by f. Call it
// before Submit so that no event is missed; Close it when done.
func (f *Follower) Watch(id string) *Watcher {
	ch := make(chan *nats.Msg, followBuffer)
	f.mu.Lock()
	f.jobs[id] = ch
	f.mu.Unlock()
	return &Watcher{f: f, id: id, ch: ch}
}

// forget stops feeding w.
func (f *Follower) forget(w *Watcher) {
	f.mu.Lock()
	if f.jobs[w.id] == w.ch {
		delete(f.jobs, w.id)
	}
	f.mu.Unlock()
}

// Close ends the subscription; the Watchers get no more events.
func (f *Follower) Close() { _ = f.sub.Unsubscribe() }

// Next returns the next event, or ctx's error. A malformed event is
// skipped. An event published for a move through another state in one
// store step (JobEvent.via) comes as two: the state passed, then the one
// reached.
func (w *Watcher) Next(ctx context.Context) (*wardv1.JobEvent, error) {
	return w.nextUntil(ctx, nil)
}

// errQuiet: no event came before the timer nextUntil was given fired.
var errQuiet = errors.New("client: no event yet")

// nextUntil is Next, which also gives up with errQuiet when quiet fires.
func (w *Watcher) nextUntil(ctx context.Context, quiet <-chan time.Time) (*wardv1.JobEvent, error) {
	if ev := w.queued(); ev != nil {
		return ev, nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-quiet:
			return nil, errQuiet
		case msg := <-w.ch:
			ev := &wardv1.JobEvent{}
			if proto.Unmarshal(msg.Data, ev) == nil {
				return w.split(ev), nil
			}
		}
	}
}

// Close stops the watch.
func (w *Watcher) Close() {
	if w.f != nil {
		w.f.forget(w)
		return
	}
	_ = w.sub.Unsubscribe()
}

// pending returns the events already received and not yet read.
func (w *Watcher) pending() []*wardv1.JobEvent {
	var out []*wardv1.JobEvent
	for ev := w.queued(); ev != nil; ev = w.queued() {
		out = append(out, ev)
	}
	for {
		select {
		case msg := <-w.ch:
			ev := &wardv1.JobEvent{}
			if proto.Unmarshal(msg.Data, ev) == nil {
				out = append(out, w.split(ev))
				for ev := w.queued(); ev != nil; ev = w.queued() {
					out = append(out, ev)
				}
			}
		default:
			return out
		}
	}
}

// MaxResultBytes caps a result Get reads from the object store: the
// largest result a host may send (bus.ResultMax).
const MaxResultBytes = bus.ResultMax

// Get returns a stored job with its event log, and its result when
// includeResult is set. A result too large for a message
// (bus.InlineResultMax) does not come in the scheduler's reply: its
// record points into the tenant's result bucket (nats-os://WARD_RES_<tenant>/...),
// and Get reads it from there into the record's Result.
func (c *Client) Get(ctx context.Context, id string, includeResult bool) (*wardv1.JobRecord, error) {
	reply := &wardv1.GetJobReply{}
	if err := c.jobRequest(ctx, bus.SubjectJobGet, &wardv1.GetJobRequest{JobId: id, IncludeResult: includeResult}, reply); err != nil {
		return nil, err
	}
	rec := reply.GetJob()
	if reply.GetError() != "" {
		return rec, errors.New(reply.GetError())
	}
	if includeResult && len(rec.GetResult()) == 0 && bus.IsObjectPtr(rec.GetResultPtr()) {
		data, err := c.objectResult(ctx, rec)
		if err != nil {
			return rec, err
		}
		rec.Result = data
	}
	return rec, nil
}

// GetLive returns job id's record with, while it runs, what its attempt
// streamed and reported so far (GetJobReply.live: progress reports, then
// the chunks of output in seq order): a watcher that attaches late prints
// them, then the events it receives (those it has seen, by seq, are
// skipped: Output does that).
func (c *Client) GetLive(ctx context.Context, id string) (*wardv1.GetJobReply, error) {
	reply := &wardv1.GetJobReply{}
	if err := c.jobRequest(ctx, bus.SubjectJobGet, &wardv1.GetJobRequest{JobId: id, IncludeLive: true}, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" && reply.GetJob() == nil {
		return nil, errors.New(reply.GetError())
	}
	return reply, nil
}

// Context returns job id's context as it was submitted, when the job
// store holds it (nil for one stored by pointer: context_ptr names it).
func (c *Client) Context(ctx context.Context, id string) ([]byte, error) {
	reply := &wardv1.GetJobReply{}
	if err := c.jobRequest(ctx, bus.SubjectJobGet, &wardv1.GetJobRequest{JobId: id, IncludeContext: true}, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" && reply.GetJob() == nil {
		return nil, errors.New(reply.GetError())
	}
	return reply.GetJob().GetContext(), nil
}

// putContext stores a context too large for a message in tenant's
// context bucket and returns its pointer. A tenant may configure no stream
// (auth/perms.go): when the bucket does not exist yet, it asks a scheduler
// to create it (bus.SubjectBuckets), then stores.
func (c *Client) putContext(ctx context.Context, tenant string, data []byte) (string, error) {
	c.objsOnce.Do(func() { c.objs, c.objsErr = bus.NewObjects(c.bus) })
	if c.objsErr != nil {
		return "", c.objsErr
	}
	ptr, err := c.objs.PutContext(ctx, tenant, bytes.NewReader(data))
	if !errors.Is(err, bus.ErrNoContextBucket) {
		return ptr, err
	}
	reply := &wrapperspb.StringValue{}
	subject := bus.TenantSubject(bus.SubjectBuckets, tenant)
	if err := c.bus.Request(ctx, subject, &emptypb.Empty{}, reply); err != nil {
		return "", fmt.Errorf("asking a scheduler for the tenant's context bucket on %s: %w", subject, err)
	}
	if reply.GetValue() != "" {
		return "", errors.New(reply.GetValue())
	}
	return c.objs.PutContext(ctx, tenant, bytes.NewReader(data))
}

// objectResult reads a result stored by pointer, in the job's tenant's
// result bucket: a tenant's credential may read its own bucket only.
func (c *Client) objectResult(ctx context.Context, rec *wardv1.JobRecord) ([]byte, error) {
	ptr := rec.GetResultPtr()
	c.objsOnce.Do(func() { c.objs, c.objsErr = bus.NewObjects(c.bus) })
	if c.objsErr != nil {
		return nil, fmt.Errorf("job %s: reading its result %s: %w", rec.GetJobId(), ptr, c.objsErr)
	}
	data, err := c.objs.GetResult(ctx, rec.GetTenantId(), ptr, rec.GetResultDigest(), MaxResultBytes)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, fmt.Errorf("job %s: its result %s is gone (results stored by pointer are kept %s)", rec.GetJobId(), ptr, bus.ResultTTL)
	case err != nil:
		return nil, fmt.Errorf("job %s: reading its result %s: %w", rec.GetJobId(), ptr, err)
	}
	return data, nil
}

// List returns up to limit jobs (1000 at most; 50 when 0), newest first,
// optionally of one state: the first page of ListJobs. With a state other
// than PENDING the order is by when the job entered the state. Like any
// page it may hold fewer jobs than limit while more exist (ListJobs says
// where to go on).
func (c *Client) List(ctx context.Context, limit int, state wardv1.JobState) ([]*wardv1.JobRecord, error) {
	reply, err := c.ListJobs(ctx, &wardv1.ListJobsRequest{Limit: int32(limit), State: state})
	return reply.GetJobs(), err
}

// ListJobs returns a page of jobs that pass q's filters, newest first, and
// in reply.next_cursor where the next page starts ("" when there is no
// more): set q.cursor to it, with the same filters, to go on. A page may
// be short, even empty, with a cursor (each request reads a bounded number
// of the store's entries). A tenant's client lists its own jobs (q.tenant
// is ignored); an admin's lists every tenant's, or q.tenant's. An error the
// scheduler answered comes with the reply, whose cursor may still go on.
func (c *Client) ListJobs(ctx context.Context, q *wardv1.ListJobsRequest) (*wardv1.ListJobsReply, error) {
	if q == nil {
		q = &wardv1.ListJobsRequest{}
	}
	reply := &wardv1.ListJobsReply{}
	if err := c.jobRequest(ctx, bus.SubjectJobList, q, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" {
		return reply, errors.New(reply.GetError())
	}
	return reply, nil
}

// Terminal reports whether s ends a job.
func Terminal(s wardv1.JobState) bool {
	switch s {
	case wardv1.JobState_JOB_STATE_SUCCEEDED, wardv1.JobState_JOB_STATE_FAILED, wardv1.JobState_JOB_STATE_CANCELLED,
		wardv1.JobState_JOB_STATE_TIMEOUT, wardv1.JobState_JOB_STATE_DENIED:
		return true
	}
	return false
}

// quietTimers are Wait's timers, kept for the next Wait: a program that
// waits for many jobs makes no timer for each. Since Go 1.23 a timer's
// Stop and Reset leave no stale tick in its channel, so a used timer is
// as good as a new one.
var quietTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// Wait follows w until the job ends and returns the final event. Every
// event, the final one included, is passed to each (which may be nil):
// state changes, progress, and streamed output (Progress.Kind OUTPUT) in
// the order the module wrote it — schedulers forward chunks concurrently,
// so Wait puts them back in order by their seq (see Output). In case an
// event was lost, it also asks for the job every poll interval.
func (c *Client) Wait(ctx context.Context, id string, w *Watcher, each func(*wardv1.JobEvent)) (*wardv1.JobEvent, error) {
	return c.WaitFrom(ctx, id, w, &Output{}, each)
}

// WaitFrom is Wait for a watcher that has delivered some of the job's
// streamed output already, through out (the chunks GetLive returned): a
// chunk out has delivered is not delivered again.
func (c *Client) WaitFrom(ctx context.Context, id string, w *Watcher, out *Output, each func(*wardv1.JobEvent)) (*wardv1.JobEvent, error) {
	const poll = 2 * time.Second
	if each == nil {
		each = func(*wardv1.JobEvent) {}
	}
	deliver := func(ev *wardv1.JobEvent) {
		if ev.GetProgress().GetKind() != wardv1.JobProgress_KIND_OUTPUT {
			each(ev) // what Add would return, without a slice
			return
		}
		for _, e := range out.Add(ev) {
			each(e)
		}
	}
	end := func(last *wardv1.JobEvent) *wardv1.JobEvent {
		// Output the host sent before its result may be forwarded after
		// the final event: what has arrived goes out first, and the chunks
		// the final event counts that have not are waited for, a while.
		for _, ev := range w.pending() {
			if ev.GetProgress() != nil {
				deliver(ev)
			}
		}
		if n := last.GetOutputChunks(); n > 0 && !out.Has(n) {
			wctx, cancel := context.WithTimeout(ctx, lateChunks)
			for !out.Has(n) {
				ev, err := w.Next(wctx)
				if err != nil {
					break
				}
				if ev.GetProgress() != nil {
					deliver(ev)
				}
			}
			cancel()
		}
		for _, e := range out.Flush() {
			each(e)
		}
		each(last)
		return last
	}
	quiet := quietTimers.Get().(*time.Timer)
	quiet.Reset(poll)
	defer func() { quiet.Stop(); quietTimers.Put(quiet) }()
	for {
		ev, err := w.nextUntil(ctx, quiet.C)
		quiet.Reset(poll)
		if err == nil {
			if Terminal(ev.GetState()) {
				return end(ev), nil
			}
			deliver(ev)
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rec, err := c.Get(ctx, id, false)
		if err == nil && Terminal(rec.GetState()) {
			last := &wardv1.JobEvent{JobId: id, State: rec.GetState(), AtUnixMs: rec.GetUpdatedAtUnixMs(),
				Reason: rec.GetReason(), WorkerId: rec.GetWorkerId()}
			if n := len(rec.GetEvents()); n > 0 {
				last = rec.GetEvents()[n-1]
			}
			return end(last), nil
		}
	}
}

// Workers asks every live host for its last heartbeat and returns the
// answers that arrive within window, sorted by worker id.
func (c *Client) Workers(ctx context.Context, window time.Duration) ([]*wardv1.Heartbeat, error) {
	out, err := gather(ctx, c, bus.SubjectWorkerPing, nil, window, (*wardv1.Heartbeat).GetWorkerId)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	return out, nil
}

// Schedulers asks every scheduler replica for its status (an admin's
// request) and returns the answers that arrive within window, sorted by
// replica id.
func (c *Client) Schedulers(ctx context.Context, window time.Duration) ([]*wardv1.SchedulerStatus, error) {
	out, err := gather(ctx, c, bus.SubjectSchedulerStatus, &wardv1.SchedulerStatusRequest{}, window, (*wardv1.SchedulerStatus).GetSchedulerId)
	if err != nil {
		return nil, fmt.Errorf("schedulers: %w", err)
	}
	return out, nil
}

// gather publishes req (nil: an empty message) on the scatter-gather
// subject and collects the answers that arrive within window: one for each
// id, the last, sorted by id; an answer that does not decode, or has no
// id, is dropped.
func gather[T interface {
	proto.Message
	*M
}, M any](ctx context.Context, c *Client, subject string, req proto.Message, window time.Duration, id func(T) string) ([]T, error) {
	var data []byte
	if req != nil {
		var err error
		if data, err = proto.Marshal(req); err != nil {
			return nil, err
		}
	}
	nc := c.bus.NATS()
	inbox := nc.NewRespInbox()
	ch := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, err
	}
	timer := time.NewTimer(window)
	defer timer.Stop()
	seen := map[string]T{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			out := make([]T, 0, len(seen))
			for _, v := range seen {
				out = append(out, v)
			}
			slices.SortFunc(out, func(a, b T) int { return strings.Compare(id(a), id(b)) })
			return out, nil
		case m := <-ch:
			v := T(new(M))
			if proto.Unmarshal(m.Data, v) == nil && id(v) != "" {
				seen[id(v)] = v
			}
		}
	}
}

// Cancel asks for job id to end CANCELLED, and returns the job as it is
// after the cancel. The host running it stops it at once. A job that has
// ended already is returned with an error that says so.
func (c *Client) Cancel(ctx context.Context, id, reason string) (*wardv1.JobRecord, error) {
	reply := &wardv1.GetJobReply{}
	if err := c.jobRequest(ctx, bus.SubjectCancel, &wardv1.JobCancel{JobId: id, Reason: reason}, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" {
		return reply.GetJob(), errors.New(reply.GetError())
	}
	return reply.GetJob(), nil
}

// DLQ returns up to limit dead-lettered jobs, newest first.
func (c *Client) DLQ(ctx context.Context, limit int) ([]*wardv1.DLQEntry, error) {
	return c.TenantDLQ(ctx, "", limit)
}

// TenantDLQ returns up to limit of tenant's dead-lettered jobs, newest
// first (every tenant's when tenant is ""). The DLQ is an admin's to read:
// a tenant's credential may not ask.
func (c *Client) TenantDLQ(ctx context.Context, tenant string, limit int) ([]*wardv1.DLQEntry, error) {
	reply := &wardv1.DLQListReply{}
	if err := c.bus.Request(ctx, bus.SubjectDLQList, &wardv1.DLQListRequest{Limit: int32(limit), TenantId: tenant}, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" {
		return reply.GetEntries(), errors.New(reply.GetError())
	}
	return reply.GetEntries(), nil
}

// RetryDLQ submits dead-lettered job id again, as a new job, and returns
// the scheduler's answer (the new job's id).
func (c *Client) RetryDLQ(ctx context.Context, id string) (*wardv1.SubmitReply, error) {
	reply := &wardv1.SubmitReply{}
	if err := c.adminRequest(ctx, bus.SubjectDLQRetry, &wardv1.DLQRetryRequest{JobId: id}, reply); err != nil {
		return nil, err
	}
	if !reply.GetAccepted() {
		return reply, fmt.Errorf("%w: %s: %s", ErrRefused, reply.GetReason(), reply.GetMessage())
	}
	return reply, nil
}

// DropDLQ removes dead-lettered job id's entry from the DLQ (the job
// stays, until its retention). It reports false when there was none.
func (c *Client) DropDLQ(ctx context.Context, id string) (bool, error) {
	reply := &wardv1.DLQDropReply{}
	if err := c.adminRequest(ctx, bus.SubjectDLQDrop, &wardv1.DLQDropRequest{JobId: id}, reply); err != nil {
		return false, err
	}
	if reply.GetError() != "" {
		return false, errors.New(reply.GetError())
	}
	return reply.GetDropped(), nil
}

// Stats returns the store's exact job counts by state and, with steps > 0,
// how many jobs were created and ended in each of steps steps of step
// ending at until (now when zero). Admins only.
func (c *Client) Stats(ctx context.Context, step time.Duration, steps int, until time.Time) (*wardv1.JobStatsReply, error) {
	q := &wardv1.JobStatsRequest{StepMs: step.Milliseconds(), Steps: int32(steps)}
	if !until.IsZero() {
		q.UntilUnixMs = until.UnixMilli()
	}
	reply := &wardv1.JobStatsReply{}
	if err := c.bus.Request(ctx, bus.SubjectStats, q, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" {
		return nil, errors.New(reply.GetError())
	}
	return reply, nil
}

// DrainHost drains host worker (no scheduler places a new job on it until
// it is undrained; the jobs it runs finish), or with undrain lifts the
// drain. Admins only. The reply says whether it changed anything and how
// many jobs the host holds.
func (c *Client) DrainHost(ctx context.Context, worker string, undrain bool) (*wardv1.HostDrainReply, error) {
	reply := &wardv1.HostDrainReply{}
	if err := c.adminRequest(ctx, bus.SubjectHostDrain, &wardv1.HostDrainRequest{WorkerId: worker, Undrain: undrain}, reply); err != nil {
		return nil, err
	}
	if reply.GetError() != "" {
		return nil, errors.New(reply.GetError())
	}
	return reply, nil
}

// SchedulerMode sets the mode every scheduler replica follows (NORMAL,
// DEGRADED, READ_ONLY, DRAINING), or, with an empty mode, reads it.
func (c *Client) SchedulerMode(ctx context.Context, mode string) (string, error) {
	reply := &wardv1.SchedulerModeReply{}
	if err := c.adminRequest(ctx, bus.SubjectMode, &wardv1.SchedulerModeRequest{Mode: mode}, reply); err != nil {
		return "", err
	}
	if reply.GetError() != "" {
		return reply.GetMode(), errors.New(reply.GetError())
	}
	return reply.GetMode(), nil
}

// maxHeld bounds the chunks Output holds while it waits for a missing one.
const maxHeld = 256

// Output puts a job's streamed output back in the order the module wrote
// it. Hosts number the chunks of each attempt from 1; the schedulers that
// forward them may swap two, and NATS may lose one. A chunk that comes
// early is held until those before it arrive; one that never does is
// skipped once maxHeld chunks wait behind it, or when the job ends (Flush).
// Chunks of an earlier attempt than the latest seen are dropped: a retried
// job streams again from the start. The zero value is ready to use.
type Output struct {
	attempt int32
	next    int64 // the seq due next; 0 before the first chunk
	held    map[int64]*wardv1.JobEvent
}

// Add takes an event and returns those now due, in order: ev itself unless
// it is a chunk that comes early, late or twice, and the chunks it was
// holding that ev unblocks.
func (o *Output) Add(ev *wardv1.JobEvent) []*wardv1.JobEvent {
	p := ev.GetProgress()
	if p.GetKind() != wardv1.JobProgress_KIND_OUTPUT {
		return []*wardv1.JobEvent{ev}
	}
	switch {
	case o.next == 0 || p.GetAttempt() > o.attempt:
		o.attempt, o.next, o.held = p.GetAttempt(), 1, nil
	case p.GetAttempt() < o.attempt:
		return nil
	}
	seq := p.GetSeq()
	if seq < o.next || o.held[seq] != nil {
		return nil
	}
	if o.held == nil {
		o.held = map[int64]*wardv1.JobEvent{}
	}
	o.held[seq] = ev
	if len(o.held) > maxHeld {
		o.next = minKey(o.held) // give up on the missing ones
	}
	return o.due()
}

// Has reports whether every chunk up to seq n has been delivered.
func (o *Output) Has(n int64) bool { return n <= 0 || o.next > n }

// lateChunks bounds how long Wait waits, after a job's final event, for
// streamed chunks that event counts and that have not arrived.
const lateChunks = 2 * time.Second

// Flush returns every chunk held, in order, skipping those that never came.
func (o *Output) Flush() []*wardv1.JobEvent {
	var out []*wardv1.JobEvent
	for len(o.held) > 0 {
		o.next = minKey(o.held)
		out = append(out, o.due()...)
	}
	return out
}

// due removes and returns the held chunks from next on with no gap.
func (o *Output) due() []*wardv1.JobEvent {
	var out []*wardv1.JobEvent
	for {
		ev, ok := o.held[o.next]
		if !ok {
			return out
		}
		delete(o.held, o.next)
		out = append(out, ev)
		o.next++
	}
}

func minKey(m map[int64]*wardv1.JobEvent) int64 {
	first := true
	var k int64
	for s := range m {
		if first || s < k {
			k, first = s, false
		}
	}
	return k
}
