package jobstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis store's runs (RunStore). Every call that checks and writes is
// one script (lua/run_*.lua), group-committed as the job scripts are.
//
// Keys:
//
//	run:id:<id>          hash: the run (id, tenant, workflow, definition, input, state, reason, owner,
//	                     owned_until, deadline, created_at, updated_at in Unix ms, events: the log's length)
//	run:log:<id>         list: the run's log (the workflow's JSON events), oldest first
//	run:index            zset: every run's id, scored by creation ms (ListRuns with no tenant)
//	run:tenant:<tenant>  zset: the tenant's run ids, scored by creation ms
//	run:active           zset: RUNNING run ids, scored by owned_until ms (OrphanRuns)
//	run:ended            zset: runs that ended with a retention, scored by the ms their keys expire, as
//	                     "<created ms>:<tenant length>:<tenant><id>": run_create.lua trims them from the indexes
//
// A run's own keys have a prefix of their own (run:id:, run:log:) that no
// other key starts with, so that no id, whatever it holds (a client may
// choose it), names another key: with run:<id> and run:events:<id>, a run
// "index" or "tenant:acme" would have been the index itself, a run
// "events:x" run x's log.
//
// A run that ends (AppendRun to a state other than RUNNING, or CreateRun
// of an ended run) leaves run:active, and its hash and log expire after
// the store's retention (SetRetention; 0: kept for ever). The indexes
// lose its id when a later CreateRun trims run:ended, or when ListRuns
// meets it gone.

var _ RunStore = (*Redis)(nil)

// Run hash fields beside the job ones they share (fID, fTenant, fState,
// fReason, fDeadline, fCreatedAt, fUpdatedAt). The scripts spell owner,
// owned_until, events, tenant, state, reason, created_at and updated_at.
const (
	fRunWorkflow   = "workflow"
	fRunDefinition = "definition"
	fRunInput      = "input"
	fRunOwner      = "owner"
	fRunOwnedUntil = "owned_until"
	fRunEvents     = "events"
)

// runFields encodes r as the hash's field/value pairs; every field is
// written (empty ones as ""), times in Unix ms ("" for a zero time).
func runFields(r *Run) []string {
	return []string{
		fID, r.ID,
		fTenant, r.Tenant,
		fRunWorkflow, r.Workflow,
		fRunDefinition, string(r.Definition),
		fRunInput, string(r.Input),
		fState, r.State,
		fReason, r.Reason,
		fRunOwner, r.Owner,
		fRunOwnedUntil, optMS(r.OwnedUntil),
		fDeadline, optMS(r.Deadline),
		fCreatedAt, optMS(r.CreatedAt),
		fUpdatedAt, optMS(r.UpdatedAt),
		fRunEvents, strconv.Itoa(r.Events),
	}
}

// decodeRun decodes a run hash.
func decodeRun(h map[string]string) (*Run, error) {
	r := &Run{ID: h[fID], Tenant: h[fTenant], Workflow: h[fRunWorkflow], State: h[fState], Reason: h[fReason], Owner: h[fRunOwner]}
	if s := h[fRunDefinition]; s != "" {
		r.Definition = []byte(s)
	}
	if s := h[fRunInput]; s != "" {
		r.Input = []byte(s)
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{fRunOwnedUntil, &r.OwnedUntil}, {fDeadline, &r.Deadline}, {fCreatedAt, &r.CreatedAt}, {fUpdatedAt, &r.UpdatedAt}} {
		if s := h[f.name]; s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("jobstore: run %s: field %s: %w", r.ID, f.name, err)
			}
			*f.t = fromMS(v)
		}
	}
	if s := h[fRunEvents]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("jobstore: run %s: field %s: %w", r.ID, fRunEvents, err)
		}
		r.Events = n
	}
	return r, nil
}

// claimScore is t's score in run:active: its Unix ms, 0 for a zero time
// (never owned: an orphan from the start).
func claimScore(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

// CreateRun stores run and its first events in one script; see RunStore.
// run itself is not changed.
func (r *Redis) CreateRun(ctx context.Context, run *Run, events [][]byte) error {
	if run == nil || run.ID == "" {
		return fmt.Errorf("jobstore: create run: no id")
	}
	now := time.Now()
	n := *run
	if n.State == "" {
		n.State = RunRunning
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
	if n.UpdatedAt.IsZero() {
		n.UpdatedAt = n.CreatedAt
	}
	n.Events = len(events)
	res, err := eval(ctx, r, runCreateCall{n: &n, events: events, fields: runFields(&n), now: now, retention: r.retention}).Text()
	if err != nil {
		return fmt.Errorf("jobstore: create run %s: %w", n.ID, err)
	}
	switch res {
	case "created":
		return nil
	case "exists":
		return fmt.Errorf("jobstore: create run %s: %w", n.ID, ErrExists)
	}
	return fmt.Errorf("jobstore: create run %s: unexpected reply %q", n.ID, res)
}

// AppendRun appends events and sets the run's state in one script; see
// RunStore. owner holds the claim while it is the run's owner: a claim
// that ran out stays its owner's until another replica claims the run.
// The guards are checked in this order: ErrNotFound, ErrRunEnded,
// ErrNotOwner, ErrLogMoved. An empty state leaves the state as it is.
func (r *Redis) AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error {
	res, err := eval(ctx, r, runAppendCall{id: id, owner: owner, after: after, events: events, state: state, reason: reason,
		now: time.Now(), retention: r.retention}).StringSlice()
	if err != nil {
		return fmt.Errorf("jobstore: append to run %s: %w", id, err)
	}
	switch {
	case res[0] == "ok":
		return nil
	case res[0] == "notfound":
		return fmt.Errorf("jobstore: append to run %s: %w", id, ErrNotFound)
	case res[0] == "ended" && len(res) == 2:
		return fmt.Errorf("jobstore: append to run %s: %w (%s)", id, ErrRunEnded, res[1])
	case res[0] == "owner" && len(res) == 2:
		return fmt.Errorf("jobstore: append to run %s: %w (%s)", id, ErrNotOwner, res[1])
	case res[0] == "moved" && len(res) == 2:
		return fmt.Errorf("jobstore: append to run %s after %d events: %w (it holds %s)", id, after, ErrLogMoved, res[1])
	}
	return fmt.Errorf("jobstore: append to run %s: unexpected reply %q", id, res)
}

// ClaimRun claims run id for owner until until in one script; see
// RunStore. A claim runs out at its owned_until (this replica's clock); a
// missing run is ErrNotFound.
func (r *Redis) ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	n, err := eval(ctx, r, runClaimCall{id: id, owner: owner, until: until, now: time.Now()}).Int()
	if err != nil {
		return false, fmt.Errorf("jobstore: claim run %s: %w", id, err)
	}
	if n < 0 {
		return false, fmt.Errorf("jobstore: claim run %s: %w", id, ErrNotFound)
	}
	return n == 1, nil
}

// GetRun returns a run and its log, read together (MULTI); see RunStore.
func (r *Redis) GetRun(ctx context.Context, id string) (*Run, [][]byte, error) {
	var hash *redis.MapStringStringCmd
	var list *redis.StringSliceCmd
	if _, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hash = p.HGetAll(ctx, r.ns.run(id))
		list = p.LRange(ctx, r.ns.runEvents(id), 0, -1)
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("jobstore: run %s: %w", id, err)
	}
	if len(hash.Val()) == 0 {
		return nil, nil, fmt.Errorf("jobstore: run %s: %w", id, ErrNotFound)
	}
	run, err := decodeRun(hash.Val())
	if err != nil {
		return nil, nil, err
	}
	events := make([][]byte, len(list.Val()))
	for i, s := range list.Val() {
		events[i] = []byte(s)
	}
	return run, events, nil
}

// ListRuns returns up to limit runs, newest first (by creation; ties by
// id, the greater first); see RunStore.
func (r *Redis) ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error) {
	if limit <= 0 {
		return nil, nil
	}
	res, err := eval(ctx, r, runListCall{tenant: tenant, limit: limit}).Slice()
	if err != nil {
		return nil, fmt.Errorf("jobstore: list runs: %w", err)
	}
	out := make([]*Run, 0, len(res))
	for _, v := range res {
		h, err := hashReply("list runs", v)
		if err != nil {
			return nil, err
		}
		run, err := decodeRun(h)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// OrphanRuns returns the RUNNING runs whose claim ran out before now,
// from run:active; see RunStore. Ties go by id.
func (r *Redis) OrphanRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: r.ns.runActive(), Start: "-inf", Stop: "(" + strconv.FormatInt(orphanCut(now), 10), ByScore: true, Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("jobstore: orphan runs: %w", err)
	}
	return ids, nil
}

// orphanCut is the score under which a claim ran out before now:
// owned_until (whole ms) < now, so below now's ms rounded up.
func orphanCut(now time.Time) int64 {
	cut := ms(now)
	if now.Sub(fromMS(cut)) > 0 {
		cut++
	}
	return cut
}
