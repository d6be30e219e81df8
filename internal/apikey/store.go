package apikey

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/config"
)

// hashPrefix names the hash function of a stored key's hash.
const hashPrefix = "sha256:"

// stored is a key's value in the bucket: its record and the hash of the
// whole key.
type stored struct {
	Record
	// Hash is "sha256:<hex>" of the whole key.
	Hash string `json:"hash"`
}

// entry is a key in the store's memory.
type entry struct {
	rec  Record
	hash [sha256.Size]byte
	rev  uint64
	// gone: deleted or purged from the bucket (kept for its revision).
	gone bool
}

// Store is the API keys of one process: the bucket, and a copy in memory
// kept fresh by a watch of it, so that Verify makes no round trip and a
// revocation on any replica takes effect on every one as soon as the
// watch delivers it. Its methods are safe for concurrent use.
type Store struct {
	kv  jetstream.KeyValue
	now func() time.Time

	mu   sync.RWMutex
	keys map[string]*entry
	// tenants are the revoked tenants' marks (RevokeTenant), by tenant.
	tenants map[string]*tenantEntry
	err     error // ErrClosed once closed or the watch ended

	w         jetstream.KeyWatcher
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Option configures Open.
type Option func(*Store)

// WithClock makes the store read the time from now (expiry, created_at,
// revoked_at): for tests.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Open opens the bucket, creating it when it is missing (the connection
// must be an admin's: no other role may touch it), and returns once the
// store holds every key in it. Close stops its watch.
func Open(ctx context.Context, js jetstream.JetStream, opts ...Option) (*Store, error) {
	kv, err := bucket(ctx, js)
	if err != nil {
		return nil, err
	}
	s := &Store{kv: kv, now: time.Now, keys: map[string]*entry{}, tenants: map[string]*tenantEntry{}, done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	// The watch lives until Close: its context is not ctx, which only
	// bounds the wait for the keys already there.
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("apikey: watch %s: %w", Bucket, err)
	}
	s.w = w
	ready := make(chan struct{})
	go s.run(w, ready)
	select {
	case <-ready:
		if stop() {
			return s, nil
		}
		// ctx ended just now, and cancelled the watch with it.
	case <-s.done:
	case <-ctx.Done():
	}
	_ = s.Close()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("apikey: watch %s: %w", Bucket, err)
	}
	return nil, fmt.Errorf("apikey: watch %s: ended before it delivered the keys", Bucket)
}

func bucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      Bucket,
			Description: "Ward HTTP gateway API keys: records and SHA-256 hashes, never the keys (ward auth key)",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    config.JetStreamReplicas(),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, Bucket) // another replica created it meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("apikey: bucket %s: %w", Bucket, err)
	}
	return kv, nil
}

// run applies the watch's entries until it ends, closing ready once the
// keys already in the bucket are in.
func (s *Store) run(w jetstream.KeyWatcher, ready chan struct{}) {
	defer close(s.done)
	initial := true
	for e := range w.Updates() {
		if e == nil {
			if initial {
				initial = false
				close(ready)
			}
			continue
		}
		s.apply(e.Key(), e.Operation(), e.Value(), e.Revision())
	}
	// The subscription ended: Close, or the connection closed. No news
	// of revocations comes any more, so answer nothing.
	s.mu.Lock()
	s.err = ErrClosed
	s.mu.Unlock()
}

// apply puts a bucket entry in memory, unless a newer revision of its key
// is there already (Add and Revoke apply what they wrote before the watch
// delivers it).
func (s *Store) apply(id string, op jetstream.KeyValueOp, value []byte, rev uint64) {
	if tenant, ok := strings.CutPrefix(id, tenantKeyPrefix); ok {
		s.applyTenant(tenant, op, value, rev)
		return
	}
	e := &entry{rev: rev, gone: true}
	if op == jetstream.KeyValuePut {
		if d, err := decode(id, value); err == nil {
			d.rev = rev
			e = d
		} // else a value it cannot read: as if gone, the key is refused
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.keys[id]; ok && cur.rev >= rev {
		return
	}
	s.keys[id] = e
}

func decode(id string, value []byte) (*entry, error) {
	var st stored
	if err := json.Unmarshal(value, &st); err != nil {
		return nil, err
	}
	h, ok := strings.CutPrefix(st.Hash, hashPrefix)
	if st.ID != id || !ok {
		return nil, errors.New("apikey: a record that is not its key's")
	}
	e := &entry{rec: st.Record}
	// The length first: hex.Decode writes past a destination too short.
	if len(h) != 2*sha256.Size {
		return nil, errors.New("apikey: a record without a hash")
	}
	if n, err := hex.Decode(e.hash[:], []byte(h)); err != nil || n != sha256.Size {
		return nil, errors.New("apikey: a record without a hash")
	}
	return e, nil
}

func encode(rec Record, hash [sha256.Size]byte) ([]byte, error) {
	return json.Marshal(stored{Record: rec, Hash: hashPrefix + hex.EncodeToString(hash[:])})
}

// Close stops the watch and waits for its goroutine to end. The store
// answers ErrClosed from then on. It does not close the connection.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.err = ErrClosed
		s.mu.Unlock()
		s.cancel()
		if s.w != nil {
			_ = s.w.Stop() // the connection may be closed already
		}
	})
	<-s.done
	return nil
}

func (s *Store) closed() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.err
}

// Add creates a key for spec and returns it, the only time it is shown,
// with its record. Only its hash is stored.
func (s *Store) Add(ctx context.Context, spec Spec) (key string, rec Record, err error) {
	if err := s.closed(); err != nil {
		return "", Record{}, err
	}
	now := s.now().UTC()
	if spec, err = spec.check(now); err != nil {
		return "", Record{}, err
	}
	if tr, ok := s.TenantRevoked(spec.Tenant); ok {
		return "", Record{}, fmt.Errorf("%w: %s, at %s by %s (ward auth tenant add %s reinstates it)",
			ErrTenantRevoked, tr.Tenant, tr.RevokedAt.Format(time.RFC3339), tr.RevokedBy, tr.Tenant)
	}
	for range 5 { // ids are 41 bits: a collision is rare, two are rarer
		k, id := newKey()
		rec = Record{ID: id, Name: spec.Name, Tenant: spec.Tenant, Scopes: spec.Scopes,
			CreatedAt: now, CreatedBy: spec.CreatedBy}
		if !spec.ExpiresAt.IsZero() {
			rec.ExpiresAt = spec.ExpiresAt.UTC()
		}
		hash := sha256.Sum256([]byte(k))
		b, err := encode(rec, hash)
		if err != nil {
			return "", Record{}, err
		}
		rev, err := s.kv.Create(ctx, id, b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return "", Record{}, fmt.Errorf("apikey: add: %w", err)
		}
		s.apply(id, jetstream.KeyValuePut, b, rev)
		return k, rec.clone(), nil
	}
	return "", Record{}, errors.New("apikey: add: no free id after 5 tries")
}

// Revoke revokes the key id (an id, a prefix or a whole key: IDOf),
// recording when and by whom. The record stays, revoked. ErrUnknown when
// there is no such key, ErrRevoked (with when) when it was revoked
// already.
func (s *Store) Revoke(ctx context.Context, id, by string) error {
	_, err := s.revoke(ctx, id, by, "")
	return err
}

// RevokeWithReason is Revoke, recording why too (Record.RevokedReason).
func (s *Store) RevokeWithReason(ctx context.Context, id, by, reason string) error {
	_, err := s.revoke(ctx, id, by, reason)
	return err
}

// revoke revokes the key id and returns its record, revoked.
func (s *Store) revoke(ctx context.Context, id, by, reason string) (Record, error) {
	if err := s.closed(); err != nil {
		return Record{}, err
	}
	id, err := IDOf(id)
	if err != nil {
		return Record{}, err
	}
	if err := checkText("revoked by", by); err != nil {
		return Record{}, err
	}
	if err := checkTextLen("reason", reason, MaxReasonLen); err != nil {
		return Record{}, err
	}
	for {
		e, err := s.kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Record{}, fmt.Errorf("%w: %s", ErrUnknown, id)
		}
		if err != nil {
			return Record{}, fmt.Errorf("apikey: revoke %s: %w", id, err)
		}
		d, err := decode(id, e.Value())
		if err != nil {
			return Record{}, fmt.Errorf("apikey: revoke %s: %w", id, err)
		}
		if d.rec.Revoked() {
			return Record{}, fmt.Errorf("%w: %s at %s by %s", ErrRevoked, id, d.rec.RevokedAt.Format(time.RFC3339), d.rec.RevokedBy)
		}
		d.rec.RevokedAt, d.rec.RevokedBy, d.rec.RevokedReason = s.now().UTC(), by, reason
		b, err := encode(d.rec, d.hash)
		if err != nil {
			return Record{}, err
		}
		rev, err := s.kv.Update(ctx, id, b, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return Record{}, fmt.Errorf("apikey: revoke %s: %w", id, err)
		}
		s.apply(id, jetstream.KeyValuePut, b, rev)
		return d.rec.clone(), nil
	}
}

// Verify returns the record of key, a bearer token ("Bearer " before it
// is allowed), from memory: ErrMalformed, ErrUnknown (no such id, or the
// secret does not match: compared in constant time), ErrRevoked (the key
// was revoked, or its tenant: then ErrTenantRevoked too), ErrExpired, or
// ErrClosed once the store stopped watching the bucket.
// A key added on another replica is known here once the watch delivers it.
func (s *Store) Verify(_ context.Context, bearer string) (Record, error) {
	if len(bearer) > len("Bearer ") && strings.EqualFold(bearer[:len("Bearer ")], "Bearer ") {
		bearer = bearer[len("Bearer "):]
	}
	id, err := Parse(bearer)
	if err != nil {
		return Record{}, err
	}
	s.mu.RLock()
	e, ok := s.keys[id]
	var tenantRevoked bool
	if ok {
		t, marked := s.tenants[e.rec.Tenant]
		tenantRevoked = marked && !t.gone
	}
	closedErr := s.err
	s.mu.RUnlock()
	if closedErr != nil {
		return Record{}, closedErr
	}
	if !ok || e.gone {
		return Record{}, ErrUnknown
	}
	hash := sha256.Sum256([]byte(bearer))
	if subtle.ConstantTimeCompare(hash[:], e.hash[:]) != 1 {
		return Record{}, ErrUnknown
	}
	switch {
	case e.rec.Revoked():
		return Record{}, fmt.Errorf("%w: %s", ErrRevoked, id)
	case tenantRevoked:
		// Whatever the key's own record says: a key added on another
		// replica before the tenant's mark reached it is refused too.
		return Record{}, fmt.Errorf("%w: %s: %w: %s", ErrRevoked, id, ErrTenantRevoked, e.rec.Tenant)
	case e.rec.Expired(s.now()):
		return Record{}, fmt.Errorf("%w: %s", ErrExpired, id)
	}
	return e.rec.clone(), nil
}

// Get returns the record of the key id (IDOf), from memory.
func (s *Store) Get(_ context.Context, id string) (Record, error) {
	id, err := IDOf(id)
	if err != nil {
		return Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.err != nil {
		return Record{}, s.err
	}
	e, ok := s.keys[id]
	if !ok || e.gone {
		return Record{}, fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	return e.rec.clone(), nil
}

// List returns the records of tenant's keys, every tenant's when tenant
// is "", revoked and expired ones included, oldest first, from memory.
func (s *Store) List(_ context.Context, tenant string) ([]Record, error) {
	if tenant != "" {
		if err := auth.ValidName("tenant", tenant); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	s.mu.RLock()
	var out []Record
	for _, e := range s.keys {
		if !e.gone && (tenant == "" || e.rec.Tenant == tenant) {
			out = append(out, e.rec.clone())
		}
	}
	err := s.err
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}
