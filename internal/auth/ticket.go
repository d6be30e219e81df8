package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// Signed dispatch. Schedulers share one secret; each host holds only its
// own key, HMAC-SHA256(secret, host id), and a dispatch is the ticket's
// bytes with their HMAC under the key of the host it is for. A host can
// check a ticket addressed to it and cannot sign one for another host; one
// HMAC over a few hundred bytes costs about a microsecond.

// DefaultTicketTTL is how long a host accepts a ticket after it was issued.
// A ticket is checked when the host takes the job from its queue, so this
// covers the wait there.
const DefaultTicketTTL = 5 * time.Minute

// BootNonceSize is the length of a host's boot nonce (NewBootNonce).
const BootNonceSize = 16

// NewBootNonce returns a random boot nonce. A host agent makes one each
// time it starts and announces it in its heartbeats; schedulers put it in
// the tickets they sign for the host (DispatchTicket.boot_nonce), and the
// host's Verifier (NewBootVerifier) refuses a ticket of any other boot. So
// a restart voids every ticket signed before it, although the set of job
// attempts a Verifier took, which refuses replays within a boot, lives in
// memory and is lost with it. The nonce need not be secret (heartbeats
// carry it in the clear), only new: what a ticket says of it is under the
// ticket's signature.
func NewBootNonce() ([]byte, error) {
	b := make([]byte, BootNonceSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("auth: boot nonce: %w", err)
	}
	return b, nil
}

// HostKey is host id's dispatch key, derived from the schedulers' secret.
func HostKey(secret []byte, hostID string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ward dispatch v1\x00"))
	m.Write([]byte(hostID))
	return m.Sum(nil)
}

// KeyID names a secret without revealing it: the first bytes of its hash.
func KeyID(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:6])
}

// Signer signs tickets; schedulers hold one. It is safe for concurrent use.
type Signer struct {
	secret []byte
	keyID  string
	ttl    time.Duration
	macs   sync.Map // host id → *macPool under its key
}

// macPool holds HMAC-SHA256 states under one key, reset and reused: a
// dispatch signed or checked allocates none.
type macPool struct{ sync.Pool }

func newMACPool(key []byte) *macPool {
	p := &macPool{}
	p.New = func() any { return hmac.New(sha256.New, key) }
	return p
}

// sum appends the HMAC of b to out.
func (p *macPool) sum(out, b []byte) []byte {
	m := p.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	out = m.Sum(out)
	p.Put(m)
	return out
}

// NewSigner returns a Signer over the schedulers' secret; ttl 0 is
// DefaultTicketTTL.
func NewSigner(secret []byte, ttl time.Duration) *Signer {
	if ttl <= 0 {
		ttl = DefaultTicketTTL
	}
	return &Signer{secret: secret, keyID: KeyID(secret), ttl: ttl}
}

// Sign stamps t with its issue and expiry times and returns it signed for
// t.HostId.
func (s *Signer) Sign(t *wardv1.DispatchTicket, now time.Time) (*wardv1.Dispatch, error) {
	t.IssuedUnixMs = now.UnixMilli()
	t.ExpiresUnixMs = now.Add(s.ttl).UnixMilli()
	b, err := proto.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("auth: ticket: %w", err)
	}
	macs, ok := s.macs.Load(t.GetHostId())
	if !ok {
		macs, _ = s.macs.LoadOrStore(t.GetHostId(), newMACPool(HostKey(s.secret, t.GetHostId())))
	}
	return &wardv1.Dispatch{Ticket: b, Signature: macs.(*macPool).sum(nil, b), KeyId: s.keyID}, nil
}

// Unsigned wraps t without a signature: the dispatch of a system run
// --insecure, which hosts without a key accept.
func Unsigned(t *wardv1.DispatchTicket, now time.Time) (*wardv1.Dispatch, error) {
	t.IssuedUnixMs = now.UnixMilli()
	t.ExpiresUnixMs = now.Add(DefaultTicketTTL).UnixMilli()
	b, err := proto.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("auth: ticket: %w", err)
	}
	return &wardv1.Dispatch{Ticket: b}, nil
}

// TicketError is a refused dispatch, with its reason code. JobID and
// Attempt are what the ticket says, once it decoded (under a verified
// signature when the host has a key).
type TicketError struct {
	Code    reason.Code
	JobID   string
	Tenant  string // the ticket's job's tenant, where JobID is set
	Attempt int32
	Detail  string
}

func (e *TicketError) Error() string {
	if e.JobID != "" {
		return fmt.Sprintf("dispatch of job %s refused (%s): %s", e.JobID, e.Code, e.Detail)
	}
	return fmt.Sprintf("dispatch refused (%s): %s", e.Code, e.Detail)
}

// Verifier checks the dispatches a host receives; each host holds one. It
// is safe for concurrent use.
type Verifier struct {
	hostID string
	key    []byte   // nil: unsigned dispatches are accepted (--insecure)
	macs   *macPool // under key
	boot   []byte   // this boot's nonce; nil: no boot is checked

	mu   sync.Mutex
	seen map[attemptKey]int64 // job attempts accepted → their expiry, in ms
	next int64                // when to prune seen, in ms
}

// NewVerifier returns the Verifier of host id with its dispatch key. A nil
// key accepts unsigned dispatches (and still checks address, expiry and
// replay): a system run --insecure. It checks no boot: a host that
// announces none (a test double, a host older than boot nonces); the host
// agent uses NewBootVerifier.
func NewVerifier(hostID string, key []byte) *Verifier {
	return NewBootVerifier(hostID, key, nil)
}

// NewBootVerifier is NewVerifier for one boot of host id, whose nonce
// (NewBootNonce) the host announces in its heartbeats: besides the rest,
// it refuses a ticket whose boot_nonce is not boot, one without any
// included (TicketStaleBoot). A nil boot checks none.
func NewBootVerifier(hostID string, key, boot []byte) *Verifier {
	v := &Verifier{hostID: hostID, key: key, boot: boot, seen: map[attemptKey]int64{}}
	if key != nil {
		v.macs = newMACPool(key)
	}
	return v
}

// attemptKey is a job attempt a Verifier accepted.
type attemptKey struct {
	job     string
	attempt int32
}

// Open checks d and returns its ticket. It refuses, with a *TicketError,
// a dispatch that is unsigned (when the host has a key), whose signature
// does not verify, that is addressed to another host, expired, signed for
// another boot of the host (a Verifier with a boot), or that repeats a job
// attempt it accepted before.
func (v *Verifier) Open(d *wardv1.Dispatch, now time.Time) (*wardv1.DispatchTicket, error) {
	if v.key != nil {
		if len(d.GetSignature()) == 0 {
			return nil, &TicketError{Code: reason.TicketUnsigned, Detail: "the dispatch carries no signature"}
		}
		var buf [sha256.Size]byte
		if !hmac.Equal(v.macs.sum(buf[:0], d.GetTicket()), d.GetSignature()) {
			return nil, &TicketError{Code: reason.TicketForged, Detail: "the signature does not verify under this host's key (forged, altered, or signed for another host; key id " + d.GetKeyId() + ")"}
		}
	}
	t := &wardv1.DispatchTicket{}
	if err := proto.Unmarshal(d.GetTicket(), t); err != nil {
		return nil, &TicketError{Code: reason.TicketForged, Detail: "the ticket does not decode: " + err.Error()}
	}
	id := t.GetJob().GetJobId()
	if t.GetHostId() != v.hostID {
		return nil, &TicketError{Code: reason.TicketMisaddressed, JobID: id, Tenant: t.GetJob().GetTenantId(), Attempt: t.GetJob().GetAttempt(), Detail: fmt.Sprintf("it is for host %q, this is %q", t.GetHostId(), v.hostID)}
	}
	if id == "" {
		return nil, &TicketError{Code: reason.TicketForged, Detail: "the ticket names no job"}
	}
	attempt := t.GetJob().GetAttempt()
	ms := now.UnixMilli()
	if t.GetExpiresUnixMs() <= ms {
		return nil, &TicketError{Code: reason.TicketExpired, JobID: id, Tenant: t.GetJob().GetTenantId(), Attempt: attempt, Detail: fmt.Sprintf("expired %s ago", time.Duration(ms-t.GetExpiresUnixMs())*time.Millisecond)}
	}
	if v.boot != nil && !bytes.Equal(t.GetBootNonce(), v.boot) {
		// Signed before this host restarted (a replay, or a scheduler
		// that had not heard the new boot yet), or by a scheduler that
		// puts no boot in its tickets. The attempts taken before the
		// restart are not in seen: this check is what keeps them from
		// running again.
		detail := fmt.Sprintf("it is for boot %x; this host's boot is %x (it restarted since the ticket was signed)", t.GetBootNonce(), v.boot)
		if len(t.GetBootNonce()) == 0 {
			detail = fmt.Sprintf("it names no boot; this host's boot is %x (its scheduler puts none in its tickets)", v.boot)
		}
		return nil, &TicketError{Code: reason.TicketStaleBoot, JobID: id, Tenant: t.GetJob().GetTenantId(), Attempt: attempt, Detail: detail}
	}
	key := attemptKey{id, attempt}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, dup := v.seen[key]; dup {
		return nil, &TicketError{Code: reason.TicketReplayed, JobID: id, Tenant: t.GetJob().GetTenantId(), Attempt: attempt, Detail: fmt.Sprintf("attempt %d was dispatched here already", attempt)}
	}
	if ms >= v.next {
		// A ticket cannot come back once expired, so neither need its entry.
		for k, exp := range v.seen {
			if exp <= ms {
				delete(v.seen, k)
			}
		}
		v.next = ms + time.Minute.Milliseconds()
	}
	v.seen[key] = t.GetExpiresUnixMs()
	return t, nil
}
