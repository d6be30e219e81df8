package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
)

// SubmitRequest is POST /v1/jobs's body. The payload is one of payload
// (any JSON value, sent as its JSON), payload_text (sent as the text) or
// payload_base64 (bytes).
type SubmitRequest struct {
	JobID          string            `json:"job_id,omitempty"`
	Topic          string            `json:"topic"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	PayloadText    *string           `json:"payload_text,omitempty"`
	PayloadBase64  string            `json:"payload_base64,omitempty"`
	Priority       int32             `json:"priority,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Requires       []string          `json:"requires,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Pool           string            `json:"pool,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	DeadlineMS     int64             `json:"deadline_ms,omitempty"`
	MaxRetries     int32             `json:"max_retries,omitempty"`
	// Tenant is an admin key's choice of tenant; a tenant key's must be
	// empty or its own.
	Tenant string `json:"tenant,omitempty"`
}

// jobsAPI is the jobs' endpoints (/v1/jobs, /v1/events): they act
// through the caller's client, and audit an admin's cancels.
type jobsAPI struct {
	deadline
	clients *tenantClients
	audit   *auditTrail
}

func (j *jobsAPI) mount(api mountFunc) {
	api("POST", "/v1/jobs", ScopeSubmit, j.submit)
	api("GET", "/v1/jobs", ScopeRead, j.listJobs)
	api("GET", "/v1/jobs/{id}", ScopeRead, j.getJob)
	api("POST", "/v1/jobs/{id}/cancel", ScopeSubmit, j.cancelJob)
	api("POST", "/v1/jobs/cancel", ScopeSubmit, j.bulkCancel)
	api("GET", "/v1/jobs/{id}/events", ScopeRead, j.jobEvents)
	api("GET", "/v1/events", ScopeRead, j.tenantEvents)
}

// decode reads a JSON body into v, refusing unknown fields, and anything
// but white space after the value (d.More would miss a stray ] or }).
func decode(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(http.StatusBadRequest, reason.BadRequest, "the body is not the JSON expected: %v", err)
	}
	if _, err := d.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(http.StatusBadRequest, reason.BadRequest, "the body holds more than one JSON value")
	}
	return nil
}

// decodeOptional is decode for a body that may be left out.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decode(r, v)
}

func (j *jobsAPI) submit(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in SubmitRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	req, err := jobRequest(r, p, &in)
	if err != nil {
		return nil, err
	}
	ctx, cancel := j.ctx(r)
	defer cancel()
	rep, err := j.clients.of(p).Submit(ctx, req)
	if err != nil && !errors.Is(err, client.ErrRefused) {
		return nil, err
	}
	if rep == nil || !rep.GetAccepted() {
		return nil, refusal(rep, err)
	}
	status := http.StatusAccepted
	if rep.GetDuplicate() {
		status = http.StatusOK
	}
	return withStatus{status, apijson.Of(rep)}, nil
}

// jobRequest builds the JobRequest in says, checking what can be checked
// here.
func jobRequest(r *http.Request, p Principal, in *SubmitRequest) (*wardv1.JobRequest, error) {
	if strings.TrimSpace(in.Topic) == "" {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "topic is required (e.g. job.echo)")
	}
	n := 0
	var payload []byte
	if len(in.Payload) > 0 {
		n++
		payload = in.Payload
	}
	if in.PayloadText != nil {
		n++
		payload = []byte(*in.PayloadText)
	}
	if in.PayloadBase64 != "" {
		n++
		b, err := base64.StdEncoding.DecodeString(in.PayloadBase64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "payload_base64: %v", err)
		}
		payload = b
	}
	if n > 1 {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "give one of payload, payload_text and payload_base64")
	}
	key := in.IdempotencyKey
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		if key != "" && key != h {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "the Idempotency-Key header and the body's idempotency_key differ")
		}
		key = h
	}
	tenant := p.Tenant
	if in.Tenant != "" && in.Tenant != p.Tenant {
		if !p.Admin() {
			return nil, errorf(http.StatusForbidden, reason.TenantMismatch, "key %s is tenant %q's; it cannot submit for tenant %q", p.KeyID, p.Tenant, in.Tenant)
		}
		tenant = in.Tenant
	}
	if err := auth.ValidName("tenant", tenant); err != nil {
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
	}
	if in.JobID == "" {
		in.JobID = uuid.NewString()
	}
	req := &wardv1.JobRequest{
		JobId: in.JobID, Topic: in.Topic, Priority: in.Priority, TenantId: tenant,
		Labels: in.Labels, Requires: in.Requires, Env: in.Env, Pool: in.Pool,
		IdempotencyKey: key, Payload: payload,
	}
	if in.DeadlineMS > 0 || in.MaxRetries > 0 {
		req.Budget = &wardv1.Budget{DeadlineMs: in.DeadlineMS, MaxRetries: in.MaxRetries}
	}
	return req, nil
}

// refusal turns a refused submission into its HTTP error.
func refusal(rep *wardv1.SubmitReply, err error) error {
	if rep == nil {
		return errorf(http.StatusBadGateway, CodeUnavailable, "%v", err)
	}
	code := reason.Code(rep.GetReason())
	status := http.StatusUnprocessableEntity
	switch code {
	case reason.BadRequest, reason.WorkflowInvalid:
		status = http.StatusBadRequest
	case reason.RateLimited, reason.TenantLimit:
		status = http.StatusTooManyRequests
	case reason.QueueFull, reason.ModeReadOnly, reason.ModeDraining, reason.ModeDegraded,
		reason.SafetyUnavailable, reason.StoreError, reason.WorkflowBusy:
		status = http.StatusServiceUnavailable
	case reason.TenantMismatch:
		status = http.StatusForbidden
	case reason.WorkflowUnknown:
		status = http.StatusNotFound
	case reason.IdempotencyConflict:
		status = http.StatusConflict
	}
	msg := rep.GetMessage()
	if msg == "" {
		msg = string(code)
	}
	return errorf(status, code, "%s", msg)
}

func (j *jobsAPI) getJob(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	ctx, cancel := j.ctx(r)
	defer cancel()
	withResult := r.URL.Query().Get("result") != "false"
	rec, err := j.clients.of(p).Get(ctx, r.PathValue("id"), withResult)
	if err != nil {
		return nil, notFound(err, "job", r.PathValue("id"))
	}
	if r.URL.Query().Get("context") == "true" {
		// The payload as submitted, read as the key's tenant (or admin)
		// reads the job: none for a context stored by pointer.
		if rec.Context, err = j.clients.of(p).Context(ctx, r.PathValue("id")); err != nil {
			return nil, err
		}
	}
	v := apijson.Of(rec)
	if r.URL.Query().Get("live") == "true" {
		// What the running attempt reported and streamed so far (none once
		// the job ended): progress reports, then the output in seq order.
		live := []map[string]any{}
		if !client.Terminal(rec.GetState()) {
			rep, err := j.clients.of(p).GetLive(ctx, r.PathValue("id"))
			if err != nil {
				return nil, notFound(err, "job", r.PathValue("id"))
			}
			for _, pr := range rep.GetLive() {
				live = append(live, progressView(pr))
			}
			if rep.GetLiveTruncated() {
				v["live_truncated"] = true
			}
		}
		v["live"] = live
	}
	return v, nil
}

// notFound is the error of a get that found nothing: 404 when the system
// said so, else what went wrong.
func notFound(err error, what, id string) error {
	msg := err.Error()
	if strings.Contains(msg, "not found") || strings.Contains(msg, "no such") || strings.Contains(msg, "unknown") {
		return errorf(http.StatusNotFound, CodeNotFound, "%s %s not found", what, id)
	}
	return err
}

// ListReply is GET /v1/jobs's answer.
type ListReply struct {
	Jobs       []map[string]any `json:"jobs"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func (j *jobsAPI) listJobs(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	q, err := listQuery(r, p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := j.ctx(r)
	defer cancel()
	rep, err := j.clients.of(p).ListJobs(ctx, q)
	if err != nil {
		if strings.Contains(err.Error(), "cursor") {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%v", err)
		}
		return nil, err
	}
	out := ListReply{Jobs: apijson.List(rep.GetJobs()), NextCursor: rep.GetNextCursor()}
	return out, nil
}

// listQuery reads GET /v1/jobs's filters.
func listQuery(r *http.Request, p Principal) (*wardv1.ListJobsRequest, error) {
	v := r.URL.Query()
	q := &wardv1.ListJobsRequest{Topic: v.Get("topic"), Cursor: v.Get("cursor"), WorkerId: v.Get("worker")}
	if s := v.Get("state"); s != "" {
		n, ok := apijson.EnumValue(wardv1.JobState(0).Descriptor(), s)
		if !ok {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "state %q is none of PENDING, SCHEDULED, DISPATCHED, RUNNING, SUCCEEDED, FAILED, CANCELLED, TIMEOUT, DENIED", s)
		}
		q.State = wardv1.JobState(n)
	}
	limit, err := limitParam(r, 50)
	if err != nil {
		return nil, err
	}
	q.Limit = int32(limit)
	for _, t := range []struct {
		name string
		to   *int64
	}{{"since", &q.SinceUnixMs}, {"until", &q.UntilUnixMs}} {
		if s := v.Get(t.name); s != "" {
			ms, err := parseTime(s)
			if err != nil {
				return nil, errorf(http.StatusBadRequest, reason.BadRequest, "%s: %v", t.name, err)
			}
			*t.to = ms
		}
	}
	if t := v.Get("tenant"); t != "" {
		if !p.Admin() {
			if t != p.Tenant {
				return nil, errorf(http.StatusForbidden, CodeForbidden, "key %s sees tenant %q's jobs only", p.KeyID, p.Tenant)
			}
		} else {
			q.Tenant = t
		}
	}
	return q, nil
}

// limitParam reads a list's limit (1 to 1000; def when absent).
func limitParam(r *http.Request, def int) (int, error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return def, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > 1000 {
		return 0, errorf(http.StatusBadRequest, CodeBadRequest, "limit %q is not a number from 1 to 1000", l)
	}
	return n, nil
}

// parseTime reads a duration ago (1h), RFC 3339 or Unix milliseconds, as
// the CLI's --since and --until do (client.ParseTime).
func parseTime(s string) (int64, error) { return client.ParseTime(s, time.Now()) }

// CancelRequest is the optional body of a cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (j *jobsAPI) cancelJob(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in CancelRequest
	if err := decodeOptional(r, &in); err != nil {
		return nil, err
	}
	ctx, cancel := j.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	rec, err := j.clients.of(p).Cancel(ctx, id, cancelReason(in.Reason, p))
	if err != nil {
		if rec != nil && client.Terminal(rec.GetState()) {
			return nil, errorf(http.StatusConflict, CodeConflict, "%v", err)
		}
		return nil, notFound(err, "job", id)
	}
	j.auditCancel(ctx, p, rec)
	return apijson.Of(rec), nil
}

// auditCancel records an admin key's cancel: it acts on every tenant's
// jobs (a tenant key's cancel of its own job is not an admin action).
func (j *jobsAPI) auditCancel(ctx context.Context, p Principal, rec *wardv1.JobRecord) {
	if p.Admin() {
		j.audit.record(ctx, p, audit.JobCancel, rec.GetJobId(), map[string]string{"tenant": rec.GetTenantId(), "state": strings.TrimPrefix(rec.GetState().String(), "JOB_STATE_")})
	}
}

func cancelReason(r string, p Principal) string {
	if r == "" {
		r = "cancelled through the API"
	}
	return r + " (key " + p.KeyID + ")"
}

// BulkCancelRequest names the jobs to cancel: ids, or a filter (state,
// topic) over the key's jobs, up to limit (at most 1000).
type BulkCancelRequest struct {
	IDs    []string `json:"ids,omitempty"`
	State  string   `json:"state,omitempty"`
	Topic  string   `json:"topic,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// check checks in, and sets its limit: 1 to 1000, 1000 when not given.
func (in *BulkCancelRequest) check() error {
	if len(in.IDs) == 0 && in.State == "" && in.Topic == "" {
		return errorf(http.StatusBadRequest, reason.BadRequest, "name the jobs: ids, or a state or topic filter")
	}
	if in.Limit <= 0 || in.Limit > 1000 {
		in.Limit = 1000
	}
	if len(in.IDs) > in.Limit {
		return errorf(http.StatusBadRequest, reason.BadRequest, "%d ids: at most %d a request", len(in.IDs), in.Limit)
	}
	return nil
}

// BulkCancelReply says what became of each job.
type BulkCancelReply struct {
	Cancelled []string          `json:"cancelled"`
	Failed    map[string]string `json:"failed,omitempty"`
}

func (j *jobsAPI) bulkCancel(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var in BulkCancelRequest
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	c := j.clients.of(p)
	ctx, cancel := j.ctx(r)
	defer cancel()
	ids := in.IDs
	if len(ids) == 0 {
		q := &wardv1.ListJobsRequest{Topic: in.Topic, Limit: int32(in.Limit)}
		if in.State != "" {
			n, ok := apijson.EnumValue(wardv1.JobState(0).Descriptor(), in.State)
			if !ok || client.Terminal(wardv1.JobState(n)) {
				return nil, errorf(http.StatusBadRequest, reason.BadRequest, "state %q is not a state a job can be cancelled in", in.State)
			}
			q.State = wardv1.JobState(n)
		}
		for len(ids) < in.Limit {
			rep, err := c.ListJobs(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, j := range rep.GetJobs() {
				if !client.Terminal(j.GetState()) && len(ids) < in.Limit {
					ids = append(ids, j.GetJobId())
				}
			}
			if rep.GetNextCursor() == "" {
				break
			}
			q.Cursor = rep.GetNextCursor()
		}
	}
	out := BulkCancelReply{Cancelled: []string{}, Failed: map[string]string{}}
	for _, id := range ids {
		rec, err := c.Cancel(ctx, id, cancelReason(in.Reason, p))
		if err != nil {
			out.Failed[id] = err.Error()
			continue
		}
		j.auditCancel(ctx, p, rec)
		out.Cancelled = append(out.Cancelled, id)
	}
	return out, nil
}

// sse starts an event stream.
func sse(w http.ResponseWriter) (flush func(), ok bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return f.Flush, true
}

// writeEvent writes one SSE event: its id, its name and v as JSON.
func writeEvent(w http.ResponseWriter, id, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if id != "" {
		fmt.Fprintf(&buf, "id: %s\n", id)
	}
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	_, err = w.Write(buf.Bytes())
	return err
}

// heartbeat is how often an idle stream sends a comment, so that proxies
// keep it open.
const heartbeat = 15 * time.Second

// jobEvents streams a job's events: those stored first (after
// Last-Event-ID, the number of the last one the caller saw), then live
// ones, until the job ends. Event ids are the events' places in the
// job's log, from 1; an OUTPUT chunk is sent as event "output" without an
// id (they are not stored in the log).
func (j *jobsAPI) jobEvents(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	id := r.PathValue("id")
	after := 0
	if le := r.Header.Get("Last-Event-ID"); le != "" {
		n, err := strconv.Atoi(le)
		if err != nil || n < 0 {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "Last-Event-ID %q is not an event number", le)
		}
		after = n
	}
	c := j.clients.of(p)
	watch, err := c.Watch(id) // before the read: no event falls between
	if err != nil {
		return nil, err
	}
	defer watch.Close()
	ctx, cancel := j.ctx(r)
	rec, err := c.Get(ctx, id, false)
	cancel()
	if err != nil {
		return nil, notFound(err, "job", id)
	}
	flush, ok := sse(w)
	if !ok {
		return nil, errorf(http.StatusInternalServerError, reason.Internal, "streaming is not supported here")
	}
	stored := rec.GetEvents()
	n := len(stored)
	for i := after; i < n; i++ {
		if writeEvent(w, strconv.Itoa(i+1), "state", apijson.Of(stored[i])) != nil {
			return nil, nil
		}
	}
	flush()
	if client.Terminal(rec.GetState()) {
		return nil, nil
	}
	seen := func(ev *wardv1.JobEvent) bool {
		for _, st := range stored {
			if st.GetState() == ev.GetState() && st.GetAtUnixMs() == ev.GetAtUnixMs() {
				return true
			}
		}
		return false
	}
	var mu sync.Mutex
	var failed bool
	send := func(id, name string, v any) {
		mu.Lock()
		defer mu.Unlock()
		if failed {
			return
		}
		if v == nil {
			_, err := w.Write([]byte(": keep-alive\n\n"))
			failed = err != nil
		} else {
			failed = writeEvent(w, id, name, v) != nil
		}
		flush()
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				send("", "", nil)
			}
		}
	}()
	// Wait delivers output chunks in order and the end last, and reads
	// the job back when the bus is quiet.
	_, _ = c.Wait(r.Context(), id, watch, func(ev *wardv1.JobEvent) {
		if pr := ev.GetProgress(); pr != nil {
			send("", "progress", progressView(pr))
			return
		}
		if seen(ev) {
			return
		}
		n++
		send(strconv.Itoa(n), "state", apijson.Of(ev))
	})
	mu.Lock() // the keep-alive writes no more once this returns
	failed = true
	mu.Unlock()
	return nil, nil
}

// tenantEvents streams every state change of the key's tenant's jobs
// (every tenant's for an admin) until the caller goes. An event's id is
// its time in Unix ms. A caller that comes back with Last-Event-ID gets
// first, for each of the newest jobs (up to 1000) that changed since, its
// state now (event "state", the job's record's state and time), then the
// live events: what it missed is summed up, not replayed one by one.
func (j *jobsAPI) tenantEvents(w http.ResponseWriter, r *http.Request, p Principal) (any, error) {
	var since int64 = -1
	if le := r.Header.Get("Last-Event-ID"); le != "" {
		ms, err := strconv.ParseInt(le, 10, 64)
		if err != nil || ms < 0 {
			return nil, errorf(http.StatusBadRequest, reason.BadRequest, "Last-Event-ID %q is not a time in Unix ms", le)
		}
		since = ms
	}
	c := j.clients.of(p)
	evs := make(chan *wardv1.JobEvent, 1024)
	stop, _, err := c.Events(func(ev *wardv1.JobEvent) {
		select {
		case evs <- ev:
		default: // a caller too slow for the stream loses events; the job's own stream has them all
		}
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	var missed []*wardv1.JobRecord
	if since >= 0 {
		ctx, cancel := j.ctx(r)
		q := &wardv1.ListJobsRequest{Limit: 500}
		for len(missed) < 1000 {
			rep, err := c.ListJobs(ctx, q)
			if err != nil {
				cancel()
				return nil, err
			}
			for _, j := range rep.GetJobs() {
				if j.GetUpdatedAtUnixMs() > since {
					missed = append(missed, j)
				}
			}
			if rep.GetNextCursor() == "" || len(rep.GetJobs()) == 0 {
				break
			}
			q.Cursor = rep.GetNextCursor()
			if last := rep.GetJobs()[len(rep.GetJobs())-1]; last.GetUpdatedAtUnixMs() < since-int64(time.Hour/time.Millisecond) {
				break // older jobs changed before the caller left, save stragglers
			}
		}
		cancel()
	}
	flush, ok := sse(w)
	if !ok {
		return nil, errorf(http.StatusInternalServerError, reason.Internal, "streaming is not supported here")
	}
	for _, j := range missed {
		ev := &wardv1.JobEvent{JobId: j.GetJobId(), State: j.GetState(), AtUnixMs: j.GetUpdatedAtUnixMs(), Reason: j.GetReason(), WorkerId: j.GetWorkerId()}
		if writeEvent(w, strconv.FormatInt(ev.GetAtUnixMs(), 10), "state", eventView(ev, j.GetTopic())) != nil {
			return nil, nil
		}
	}
	flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil, nil
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return nil, nil
			}
		case ev := <-evs:
			if writeEvent(w, strconv.FormatInt(ev.GetAtUnixMs(), 10), "state", eventView(ev, "")) != nil {
				return nil, nil
			}
		}
		flush()
	}
}

// eventView is an event's view, with the job's topic when known.
func eventView(ev *wardv1.JobEvent, topic string) map[string]any {
	v := apijson.Of(ev)
	if topic != "" {
		v["topic"] = topic
	}
	return v
}

// progressView is a progress report's view with its output as text
// (output_text), or base64 when it is not UTF-8: a chunk of tokens that
// happens to be JSON (" 42") stays the text it was.
func progressView(pr *wardv1.JobProgress) map[string]any {
	v := apijson.Of(pr)
	if out := pr.GetOutput(); len(out) > 0 {
		delete(v, "output")
		if utf8.Valid(out) {
			v["output_text"] = string(out)
		}
	}
	return v
}
