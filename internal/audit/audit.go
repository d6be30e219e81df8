// Package audit is Ward's audit log of admin actions: who pushed a policy,
// deployed, rolled back or retired a module, added or revoked a tenant,
// added a host, retried a dead-lettered job or changed the scheduler mode.
//
// Each action is one JSON record in the JetStream stream WARD_AUDIT, on
// the subject ward.audit.<action>. The stream refuses message deletes and
// purges (DenyDelete, DenyPurge, which JetStream never lets an update
// turn off), so a record goes away only when it is older than the
// stream's MaxAge (90 days by default).
//
//	Record ──JetStream publish (acked, Nats-Msg-Id)──▶ WARD_AUDIT ◀──direct get, newest first── List
package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/config"
)

const (
	// StreamName is the JetStream stream that holds the log.
	StreamName = "WARD_AUDIT"
	// SubjectPrefix starts every record's subject: ward.audit.<action>.
	// Only admin credentials may publish under it, and the schedulers and
	// kernels the actions they carry out (auth.SchedulerAudits,
	// auth.SafetyAudits); NATS subject permissions enforce that, not this
	// package.
	SubjectPrefix = "ward.audit."
	// DefaultMaxAge is how long records are kept when Config.MaxAge is 0.
	DefaultMaxAge = 90 * 24 * time.Hour
	// MaxEntrySize bounds a record's JSON encoding.
	MaxEntrySize = 16 << 10
	// DefaultLimit is how many records List returns when Filter.Limit is 0;
	// MaxLimit is the most it returns.
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Actions: the closed set of what may be recorded.
const (
	PolicyPush     = "policy.push"
	ModuleDeploy   = "module.deploy"
	ModuleRollback = "module.rollback"
	ModuleRm       = "module.rm"
	TenantAdd      = "tenant.add"
	TenantRevoke   = "tenant.revoke"
	HostAdd        = "host.add"
	HostRevoke     = "host.revoke"
	DLQRetry       = "dlq.retry"
	DLQDrop        = "dlq.drop"
	SchedulerMode  = "scheduler.mode"
	APIKeyAdd      = "apikey.add"
	APIKeyRevoke   = "apikey.revoke"
	// APIKeyThrottle: a gateway refuses a source address or a key id
	// unchecked after too many failed authentications (once per episode,
	// not per request).
	APIKeyThrottle = "apikey.throttle"
	// JobCancel: an admin cancelled a job of any tenant (sys.job.cancel._all,
	// or an admin API key); WorkflowCancel: a workflow run.
	JobCancel      = "job.cancel"
	WorkflowCancel = "workflow.cancel"
	// HostDrain and HostUndrain: an admin drained a host (no new job is
	// placed on it) or lifted the drain (sys.host.drain).
	HostDrain   = "host.drain"
	HostUndrain = "host.undrain"
	// PolicyApply: a safety kernel put a bundle pushed to its bucket in
	// force, or refused it.
	PolicyApply = "policy.apply"
)

var actions = []string{PolicyPush, ModuleDeploy, ModuleRollback, ModuleRm,
	TenantAdd, TenantRevoke, HostAdd, HostRevoke, DLQRetry, DLQDrop, SchedulerMode,
	APIKeyAdd, APIKeyRevoke, APIKeyThrottle, JobCancel, WorkflowCancel, HostDrain, HostUndrain, PolicyApply}

// Claimed is how a record names an actor that no part authenticated, but
// the record of the change claims (a KV write's "by"): "claimed:admin:alice".
func Claimed(by string) string {
	if by == "" {
		by = "unknown"
	}
	return "claimed:" + by
}

// Errors.
var (
	ErrUnknownAction = errors.New("audit: unknown action")
	ErrInvalid       = errors.New("audit: invalid entry")
	ErrNoLog         = errors.New("audit: no audit log on this NATS server (stream " + StreamName + ")")
	// ErrScanLimit comes with the records List found when it stopped
	// after examining maxScan records without reaching Filter.Limit.
	ErrScanLimit = errors.New("audit: scan limit reached; narrow the filter")
)

// maxScan bounds the records one List call reads (a var for tests).
var maxScan uint64 = 10_000

// headerRoom is what the stream allows beyond MaxEntrySize for the
// headers Record sets.
const headerRoom = 1 << 10

// Entry is one recorded admin action.
type Entry struct {
	// At is when it happened, by the writer's clock; Record sets it to
	// now when it is zero.
	At time.Time `json:"at"`
	// Actor is the credential name that did it: "admin", "admin:alice".
	Actor string `json:"actor"`
	// Action is one of the Actions.
	Action string `json:"action"`
	// Target is what it was done to: a module, a tenant, a job, a mode.
	Target string            `json:"target,omitempty"`
	Detail map[string]string `json:"detail,omitempty"`
	// Seq is the record's stream sequence, filled by List.
	Seq uint64 `json:"seq,omitempty"`
}

// Filter selects records for List. Zero fields match everything.
type Filter struct {
	Action string
	Actor  string
	// Since keeps records stored at or after it, by the NATS server's
	// clock (the one that orders the stream).
	Since time.Time
	// Limit is the most records returned: DefaultLimit when 0, at most
	// MaxLimit.
	Limit int
}

// Config is the stream's configuration; the zero value is the default.
type Config struct {
	// MaxAge is how long a record is kept: DefaultMaxAge when 0.
	MaxAge time.Duration
	// Replicas is the stream's replica count in a NATS cluster: 1 when 0.
	Replicas int
}

// Actions returns every valid action, in declaration order.
func Actions() []string { return slices.Clone(actions) }

// Subject returns the subject records of action are published on.
func Subject(action string) string { return SubjectPrefix + action }

// CheckAction returns ErrUnknownAction unless action is one of the Actions.
func CheckAction(action string) error {
	if !slices.Contains(actions, action) {
		return fmt.Errorf("%w %q (want one of %v)", ErrUnknownAction, action, actions)
	}
	return nil
}

// Ensure creates the stream with the default Config, or updates it to it.
func Ensure(ctx context.Context, js jetstream.JetStream) error {
	return EnsureConfig(ctx, js, Config{Replicas: config.JetStreamReplicas()})
}

// Create creates the stream with the default Config when it does not
// exist, and leaves one that does as it is: for the parts whose
// credentials may create the stream but not update it (schedulers,
// kernels).
func Create(ctx context.Context, js jetstream.JetStream) error {
	_, err := js.Stream(ctx, StreamName)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("audit: stream %s: %w", StreamName, err)
	}
	_, err = js.CreateStream(ctx, streamConfig(Config{MaxAge: DefaultMaxAge, Replicas: config.JetStreamReplicas()}))
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("audit: stream %s: %w (is JetStream enabled on the NATS server?)", StreamName, err)
	}
	return nil
}

func streamConfig(c Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Ward's audit log of admin actions",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      c.MaxAge,
		MaxMsgSize:  MaxEntrySize + headerRoom,
		Replicas:    c.Replicas,
		DenyDelete:  true,
		DenyPurge:   true,
		AllowDirect: true,
	}
}

// EnsureConfig creates the stream with c, or updates it to c.
func EnsureConfig(ctx context.Context, js jetstream.JetStream, c Config) error {
	if c.MaxAge < 0 || c.Replicas < 0 {
		return fmt.Errorf("%w: config %+v", ErrInvalid, c)
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	_, err := js.CreateOrUpdateStream(ctx, streamConfig(c))
	if err != nil {
		return fmt.Errorf("audit: stream %s: %w (is JetStream enabled on the NATS server?)", StreamName, err)
	}
	return nil
}

// errDuplicateInProcess is JetStream's answer to a publish whose message id
// another publish of the same id is storing at that moment (409, 10158).
const errDuplicateInProcess jetstream.ErrorCode = 10158

// Record stores e and returns once JetStream acknowledged it. Its message
// id is the digest of its encoding, so a retried Record of the same entry
// (At included) is stored once.
func Record(ctx context.Context, js jetstream.JetStream, e Entry) error {
	if err := CheckAction(e.Action); err != nil {
		return err
	}
	if e.Actor == "" {
		return fmt.Errorf("%w: no actor", ErrInvalid)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.At, e.Seq = e.At.UTC(), 0
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	if len(data) > MaxEntrySize {
		return fmt.Errorf("%w: %d bytes encoded, over %d", ErrInvalid, len(data), MaxEntrySize)
	}
	sum := sha256.Sum256(data)
	msg := &nats.Msg{Subject: Subject(e.Action), Data: data}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(hex.EncodeToString(sum[:16])),
		jetstream.WithExpectStream(StreamName)); err != nil {
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == errDuplicateInProcess {
			// The same record, being stored for another writer (two
			// scheduler replicas record each module change): stored once.
			return nil
		}
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}

// List returns the records that match f, newest first. It reads the
// stream backwards in pages of sequences, one direct get per record of
// f.Action (of any action when unset), and stops at f.Limit records, at
// the first record older than f.Since, or after examining 10,000
// sequences: then it returns what it found with ErrScanLimit.
func List(ctx context.Context, js jetstream.JetStream, f Filter) ([]Entry, error) {
	subject := SubjectPrefix + ">"
	if f.Action != "" {
		if err := CheckAction(f.Action); err != nil {
			return nil, err
		}
		subject = Subject(f.Action)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	s, err := js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, ErrNoLog
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	st := s.CachedInfo().State
	if st.Msgs == 0 {
		return nil, nil
	}
	var out []Entry
	size := uint64(limit) // a first page of limit records serves the unfiltered case
	for hi, scanned := st.LastSeq, uint64(0); ; {
		if scanned >= maxScan {
			return out, ErrScanLimit
		}
		size = min(size, maxScan-scanned)
		lo := st.FirstSeq
		if hi-lo >= size {
			lo = hi - size + 1
		}
		page, err := readPage(ctx, s, subject, lo, hi)
		if err != nil {
			return nil, err
		}
		for i := len(page) - 1; i >= 0; i-- {
			m := page[i]
			if m.Time.Before(f.Since) {
				return out, nil
			}
			var e Entry
			if err := json.Unmarshal(m.Data, &e); err != nil {
				return nil, fmt.Errorf("audit: record %d: %w", m.Sequence, err)
			}
			if f.Actor != "" && e.Actor != f.Actor {
				continue
			}
			e.Seq = m.Sequence
			if out = append(out, e); len(out) == limit {
				return out, nil
			}
		}
		if lo == st.FirstSeq {
			return out, nil
		}
		scanned += hi - lo + 1
		hi, size = lo-1, min(2*size, 1024)
	}
}

// readPage returns the records of subject stored at sequences lo..hi,
// oldest first: one direct get each, and one past the last.
func readPage(ctx context.Context, s jetstream.Stream, subject string, lo, hi uint64) ([]*jetstream.RawStreamMsg, error) {
	var page []*jetstream.RawStreamMsg
	for seq := lo; seq <= hi; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("audit: read %d: %w", seq, err)
		}
		if m.Sequence > hi {
			break
		}
		page = append(page, m)
		seq = m.Sequence + 1
	}
	return page, nil
}
