// Package jsread reads JetStream Object Store objects and Key-Value entries
// without creating a consumer: objects with direct gets, a bucket's changes
// with a plain subscription to its subjects and a direct get of each key.
//
// Why: a consumer's configuration names the subject it delivers to, and
// NATS does not check that subject against the permissions of the user
// who creates the consumer. A credential that may create consumers on a
// stream whose messages it can write (a tenant's own context bucket, a
// host's own keys in the module registry) could have the server publish
// what it wrote on any subject of the account: a forged result, a job on
// another host's dispatch subject, an API key into the gateway's bucket.
// So tenants and hosts may create no consumer and configure no stream
// (auth/perms.go); what they read, they read with this package, which
// needs only $JS.API.STREAM.INFO, $JS.API.DIRECT.GET and a subscription.
package jsread

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrTooLarge is returned by Object for an object over the size asked.
var ErrTooLarge = errors.New("jsread: object too large")

// ObjectStream is the name of the stream of Object Store bucket.
func ObjectStream(bucket string) string { return "OBJ_" + bucket }

// MetaSubject is where the Object Store keeps name's description.
func MetaSubject(bucket, name string) string {
	return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// ObjectInfo returns the description of object name of bucket, whose
// stream is s. An object deleted, or never stored, is an error that wraps
// jetstream.ErrObjectNotFound.
func ObjectInfo(ctx context.Context, s jetstream.Stream, bucket, name string) (*jetstream.ObjectInfo, error) {
	m, err := s.GetLastMsgForSubject(ctx, MetaSubject(bucket, name))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %s/%s", jetstream.ErrObjectNotFound, bucket, name)
	}
	if err != nil {
		return nil, fmt.Errorf("jsread: %s/%s: %w", bucket, name, err)
	}
	info := &jetstream.ObjectInfo{}
	if err := json.Unmarshal(m.Data, info); err != nil {
		return nil, fmt.Errorf("jsread: %s/%s: its description: %w", bucket, name, err)
	}
	if info.Deleted {
		return nil, fmt.Errorf("%w: %s/%s (deleted)", jetstream.ErrObjectNotFound, bucket, name)
	}
	// Where it was read, not what its writer says (Chunks reads there).
	info.Bucket, info.Name = bucket, name
	return info, nil
}

// Object reads object name of bucket, whose stream is s, refusing one over
// max bytes (ErrTooLarge) before it reads a chunk. The bytes are checked
// against the size and the SHA-256 digest the object's description gives:
// a mismatch is an error that wraps jetstream.ErrDigestMismatch.
func Object(ctx context.Context, s jetstream.Stream, bucket, name string, max int64) ([]byte, *jetstream.ObjectInfo, error) {
	info, err := ObjectInfo(ctx, s, bucket, name)
	if err != nil {
		return nil, nil, err
	}
	if int64(info.Size) > max {
		return nil, info, fmt.Errorf("%w: %s/%s holds %d bytes, more than %d", ErrTooLarge, bucket, name, info.Size, max)
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size))
	var after uint64
	for {
		data, last, done, err := Chunks(ctx, s, info, after, int64(buf.Len()), math.MaxInt)
		if err != nil {
			return nil, info, err
		}
		buf.Write(data)
		if done {
			break
		}
		after = last
	}
	sum := sha256.Sum256(buf.Bytes())
	if want, got := info.Digest, "SHA-256="+base64.URLEncoding.EncodeToString(sum[:]); want != got {
		return nil, info, fmt.Errorf("%w: %s/%s: digest %s, its description says %s", jetstream.ErrDigestMismatch, bucket, name, got, want)
	}
	return buf.Bytes(), info, nil
}

// Chunks reads the chunks of the object info describes that come after
// stream sequence after, offset bytes into it, until their bytes reach
// max (one chunk at least) or the object ends. It returns their bytes,
// the sequence of the last one, and whether the object ended there. The
// bytes are checked against the size the description gives (a mismatch
// wraps jetstream.ErrDigestMismatch); the digest is the reader's to check
// once it holds them all.
func Chunks(ctx context.Context, s jetstream.Stream, info *jetstream.ObjectInfo, after uint64, offset int64, max int) (data []byte, last uint64, done bool, err error) {
	bucket, name := info.Bucket, info.Name
	chunks := "$O." + bucket + ".C." + info.NUID
	last = after
	for offset+int64(len(data)) < int64(info.Size) && (len(data) == 0 || len(data) < max) {
		m, err := s.GetMsg(ctx, last+1, jetstream.WithGetMsgSubject(chunks))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, 0, false, fmt.Errorf("%w: %s/%s: %d of its %d bytes are there", jetstream.ErrDigestMismatch, bucket, name, offset+int64(len(data)), info.Size)
		}
		if err != nil {
			return nil, 0, false, fmt.Errorf("jsread: %s/%s: %w", bucket, name, err)
		}
		if offset+int64(len(data)+len(m.Data)) > int64(info.Size) {
			return nil, 0, false, fmt.Errorf("%w: %s/%s: more bytes than its %d", jetstream.ErrDigestMismatch, bucket, name, info.Size)
		}
		data = append(data, m.Data...)
		last = m.Sequence
	}
	return data, last, offset+int64(len(data)) == int64(info.Size), nil
}

// Entry is the latest value of a Key-Value key.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
	// Created is when the value was stored, by the server's clock.
	Created time.Time
	// Deleted is set for a key deleted or purged: Value is empty.
	Deleted bool
}

// FollowKV calls apply with the entries of Key-Value bucket whose keys
// match filter (a subject filter over the keys, such as "mod.>"): once
// with every entry, before it returns, then with the entries that changed,
// from a goroutine of its own, until ctx ends; done is closed then. apply
// is never called twice at once, and an entry's revision only grows.
//
// It learns of a change from a subscription to the bucket's subjects,
// then reads the key with a direct get; since such a subscription may
// miss a message (a reconnect), it reads every key again each resync.
func FollowKV(ctx context.Context, nc *nats.Conn, bucket, filter string, resync time.Duration, apply func([]Entry)) (done <-chan struct{}, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jsread: %w", err)
	}
	s, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("jsread: bucket %s: %w", bucket, err)
	}
	f := &kvFollower{s: s, prefix: "$KV." + bucket + ".", filter: filter, known: map[string]uint64{},
		pending: map[string]int{}, wake: make(chan struct{}, 1)}
	// Subscribed before the first read, so that no change falls between.
	sub, err := nc.Subscribe(f.prefix+filter, func(m *nats.Msg) { f.note(m.Subject, 0) })
	if err != nil {
		return nil, fmt.Errorf("jsread: subscribe to bucket %s: %w", bucket, err)
	}
	all, err := f.readAll(ctx)
	if err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	apply(all)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer func() { _ = sub.Unsubscribe() }()
		t := time.NewTicker(resync)
		defer t.Stop()
		for {
			var (
				batch []Entry
				err   error
			)
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
				batch, err = f.readPending(ctx)
			case <-t.C:
				batch, err = f.readAll(ctx)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				// Nothing is lost: the next resync reads every key again.
				continue
			}
			if len(batch) > 0 {
				apply(batch)
			}
		}
	}()
	return stopped, nil
}

// kvFollower is FollowKV's state.
type kvFollower struct {
	s              jetstream.Stream
	prefix, filter string
	known          map[string]uint64 // subject → revision applied; the reading goroutine's

	mu      sync.Mutex     // guards pending
	pending map[string]int // subject → how often it was read and found unchanged
	wake    chan struct{}
}

// Rereads of a noted subject found unchanged: the message reaches this
// subscriber and the stream independently, so the direct get may come
// before the stream has stored it and read the revision before. Such a
// subject is read again after rereadAfter, doubling, rereads times; past
// them the resync reads it.
const (
	rereads     = 6
	rereadAfter = 20 * time.Millisecond
)

// note records that subject changed (tries: the rereads so far that found
// it unchanged), and wakes the reader.
func (f *kvFollower) note(subject string, tries int) {
	f.mu.Lock()
	if cur, ok := f.pending[subject]; !ok || tries < cur { // a new change starts the rereads again
		f.pending[subject] = tries
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// readPending reads the keys noted since the last call.
func (f *kvFollower) readPending(ctx context.Context) ([]Entry, error) {
	f.mu.Lock()
	tries := maps.Clone(f.pending)
	clear(f.pending)
	f.mu.Unlock()
	subjects := slices.Sorted(maps.Keys(tries))
	var out []Entry
	for i, subj := range subjects {
		e, changed, err := f.read(ctx, subj)
		if err != nil {
			// Noted again, to be read at the next wake or resync.
			for _, s := range subjects[i:] {
				f.note(s, tries[s])
			}
			return out, err
		}
		if changed {
			out = append(out, e)
		} else if n := tries[subj]; n < rereads {
			time.AfterFunc(rereadAfter<<n, func() { f.note(subj, n+1) })
		}
	}
	return out, nil
}

// readAll reads every key, and tells the keys that are gone as deleted.
func (f *kvFollower) readAll(ctx context.Context) ([]Entry, error) {
	info, err := f.s.Info(ctx, jetstream.WithSubjectFilter(f.prefix+f.filter))
	if err != nil {
		return nil, fmt.Errorf("jsread: list %s: %w", f.prefix+f.filter, err)
	}
	subjects := make([]string, 0, len(info.State.Subjects))
	for s := range info.State.Subjects {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	var out []Entry
	seen := make(map[string]bool, len(subjects))
	for _, subj := range subjects {
		seen[subj] = true
		e, changed, err := f.read(ctx, subj)
		if err != nil {
			return out, err
		}
		if changed {
			out = append(out, e)
		}
	}
	for subj, rev := range f.known {
		if !seen[subj] {
			delete(f.known, subj)
			out = append(out, Entry{Key: strings.TrimPrefix(subj, f.prefix), Revision: rev, Deleted: true})
		}
	}
	return out, nil
}

// read reads subject's latest message, and reports whether it is newer
// than the one applied.
func (f *kvFollower) read(ctx context.Context, subject string) (Entry, bool, error) {
	key := strings.TrimPrefix(subject, f.prefix)
	m, err := f.s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		rev, ok := f.known[subject]
		delete(f.known, subject)
		return Entry{Key: key, Revision: rev, Deleted: true}, ok, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("jsread: %s: %w", key, err)
	}
	if m.Sequence <= f.known[subject] {
		return Entry{}, false, nil
	}
	f.known[subject] = m.Sequence
	e := Entry{Key: key, Value: m.Data, Revision: m.Sequence, Created: m.Time}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		e.Value, e.Deleted = nil, true
	}
	return e, true, nil
}
