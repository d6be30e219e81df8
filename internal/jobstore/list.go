package jobstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Listing limits (Store.List).
const (
	// DefaultListLimit is a page's size when ListQuery.Limit is 0.
	DefaultListLimit = 50
	// MaxListLimit is the largest page.
	MaxListLimit = 1000
	// ListScanBudget is how many index entries one List call examines at
	// most: a filter the index does not serve (a topic, a tenant with a
	// state, ...) may leave a page short, or empty, with a cursor to go on.
	ListScanBudget = 2000
)

// ErrBadCursor: ListQuery.Cursor is not a cursor List returned for a
// query of the same kind (state or creation order).
var ErrBadCursor = errors.New("jobstore: bad list cursor")

// ErrIdempotencyConflict: the tenant used the job's idempotency key
// already, for another request (another topic or payload). Submit and
// Create return it with the first job's id; nothing is written.
var ErrIdempotencyConflict = errors.New("jobstore: idempotency key used for another request")

// ListQuery selects jobs for List. Empty fields do not filter.
type ListQuery struct {
	// Tenant: that tenant's jobs only ("": every tenant's).
	Tenant string
	// State: jobs in that state only. With a State other than PENDING
	// the page is ordered by when the job entered the state (its state
	// index: for an ended job, when it ended), newest first; otherwise by
	// creation, newest first. (A PENDING job that waits in a queue is in
	// no state index: PENDING is a filter over the creation order.)
	State State
	// Topic: jobs of that topic only (a filter: it scans).
	Topic string
	// Worker: jobs whose last attempt was placed on that worker (host)
	// only (a filter: it scans).
	Worker string
	// Since and Until bound the jobs' creation time: Since <= created <
	// Until. Zero: open.
	Since, Until time.Time
	// Limit is the page's size: DefaultListLimit when 0, MaxListLimit at
	// most.
	Limit int
	// Cursor continues from the page that returned it (ListPage.Next).
	Cursor string
}

// ListPage is one page of List.
type ListPage struct {
	// Jobs, newest first (see ListQuery.State for the order).
	Jobs []*Job
	// Next is the cursor of the next page; "" when there is none. A page
	// may be short, even empty, with a Next: the call examined
	// ListScanBudget index entries without filling it.
	Next string
	// after[i] is the cursor after Jobs[i].
	after []string
}

// After returns the cursor that continues after p.Jobs[i]: for a caller
// that keeps only the first i+1 jobs of the page (a reply that must stay
// under a size).
func (p ListPage) After(i int) string {
	if i < 0 || i >= len(p.after) {
		return p.Next
	}
	if i == len(p.Jobs)-1 {
		return p.Next
	}
	return p.after[i]
}

// listPlan is how List serves a query: which index it reads (in
// descending order), and which filters it checks on each entry.
type listPlan struct {
	mode          string // "c": creation order, or "s:<STATE>": that state's index
	key           string // the Redis index key
	since, until  int64  // creation ms bounds; 0: open (until exclusive)
	sinceStops    bool   // an entry scored under since ends the listing
	untilStarts   bool   // the listing starts under until (creation order)
	tenant, topic string // per-entry filters ("": none)
	worker        string // per-entry filter ("": none)
	state         State  // per-entry filter ("": none)
	checkUntil    bool   // filter created < until per entry (state order)
	checkSince    bool   // filter created >= since per entry (state order)
	limit         int
	cur           *listPos // where the previous page stopped; nil: the top
}

// listPos is a place in an index: entries strictly below (score, id) in
// (score, id) order come next.
type listPos struct {
	score int64
	id    string
}

// filtered reports whether entries need a per-entry check.
func (p *listPlan) filtered() bool {
	return p.tenant != "" || p.state != "" || p.topic != "" || p.worker != "" || p.checkUntil || p.checkSince
}

// planList checks q and decides how to serve it.
func planList(q ListQuery) (*listPlan, error) {
	p := &listPlan{limit: q.Limit, topic: q.Topic, worker: q.Worker}
	switch {
	case q.Limit < 0:
		return nil, fmt.Errorf("jobstore: list: negative limit %d", q.Limit)
	case q.Limit == 0:
		p.limit = DefaultListLimit
	case q.Limit > MaxListLimit:
		p.limit = MaxListLimit
	}
	if q.State != "" && !slices.Contains(States(), q.State) {
		return nil, fmt.Errorf("jobstore: list: unknown state %q", q.State)
	}
	if !q.Since.IsZero() {
		p.since, p.sinceStops = ms(q.Since), true
	}
	if !q.Until.IsZero() {
		p.until = ms(q.Until)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && p.until <= p.since {
		return nil, fmt.Errorf("jobstore: list: until %v is not after since %v", q.Until, q.Since)
	}
	switch {
	case q.State != "" && q.State != Pending:
		// The state's index, by entry time: a job entered its state at or
		// after its creation, so an entry under since ends the listing;
		// until is checked on each entry.
		p.mode, p.key = "s:"+string(q.State), plain.index(q.State)
		p.tenant = q.Tenant
		p.checkUntil, p.checkSince = !q.Until.IsZero(), !q.Since.IsZero()
	case q.Tenant != "":
		p.mode, p.key = "c", plain.tenantJobs(q.Tenant)
		p.tenant, p.state = q.Tenant, q.State // the tenant too: an id made again by another tenant
		p.untilStarts = !q.Until.IsZero()
	default:
		p.mode, p.key = "c", plain.recent()
		p.state = q.State
		p.untilStarts = !q.Until.IsZero()
	}
	if q.Cursor != "" {
		pos, err := decodeCursor(q.Cursor, p.mode)
		if err != nil {
			return nil, err
		}
		p.cur = pos
	}
	return p, nil
}

// cursor encodes a position of a listing in mode.
func cursor(mode string, pos listPos) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1|" + mode + "|" + strconv.FormatInt(pos.score, 10) + "|" + pos.id))
}

// cursorMode is the mode of the listing a cursor was made for.
func cursorMode(c string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 4 || parts[0] != "v1" {
		return "", false
	}
	return parts[1], true
}

// Cursors returns the cursor at each of the page's jobs (the listing goes
// on after it), for MergePages.
func (p ListPage) Cursors() []string { return p.after }

// decodeCursor reads a cursor made for a listing in mode.
func decodeCursor(c, mode string) (*listPos, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not base64url", ErrBadCursor, c)
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 4 || parts[0] != "v1" || parts[3] == "" {
		return nil, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	if parts[1] != mode {
		return nil, fmt.Errorf("%w: %q is a cursor of another listing (a state filter orders by another time)", ErrBadCursor, c)
	}
	score, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return &listPos{score: score, id: parts[3]}, nil
}

// matches reports whether a job's hash h passes p's per-entry filters.
func (p *listPlan) matches(j *Job) bool {
	if p.tenant != "" && j.Tenant != p.tenant {
		return false
	}
	if p.state != "" && j.State != p.state {
		return false
	}
	if p.topic != "" && j.Topic != p.topic {
		return false
	}
	if p.worker != "" && j.WorkerID != p.worker {
		return false
	}
	if p.checkUntil || p.checkSince {
		created := ms(j.CreatedAt)
		if p.checkUntil && created >= p.until {
			return false
		}
		if p.checkSince && created < p.since {
			return false
		}
	}
	return true
}

// idemDigest identifies the request a job with an idempotency key was
// created from: its topic and its payload (by its digest, or the pointer
// of a context stored elsewhere), so that a key used again for another
// request is a conflict, not a duplicate. Hex SHA-256.
func idemDigest(n *Job, payload []byte) string {
	ident := n.PayloadDigest
	if ident == "" {
		if strings.HasPrefix(n.ContextPtr, externalPtrScheme) {
			ident = n.ContextPtr
		} else {
			sum := sha256.Sum256(payload)
			ident = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	h := sha256.New()
	h.Write([]byte(n.Topic))
	h.Write([]byte{0})
	h.Write([]byte(ident))
	return hex.EncodeToString(h.Sum(nil))
}

// idemValue is what job:idem:<tenant>:<key> holds: the request's digest
// and the first job's id ("<digest>:<id>"; an id has no ':').
func idemValue(digest, id string) string { return digest + ":" + id }

// parseIdem reads idemValue; a bare id (stored before digests were) has no
// digest.
func parseIdem(v string) (digest, id string) {
	if d, rest, ok := strings.Cut(v, ":"); ok {
		return d, rest
	}
	return "", v
}

// ordIndex is the memory store's ordered index of jobs by a score
// (creation ms), ascending by (score, id) as a Redis zset orders them.
// Creation times mostly grow, so an insert is mostly an append; removals
// (Sweep) are made in one pass for many ids.
type ordIndex struct {
	e []listPos
}

func posLess(a, b listPos) int {
	if a.score != b.score {
		if a.score < b.score {
			return -1
		}
		return 1
	}
	return strings.Compare(a.id, b.id)
}

// add inserts (score, id), which the index does not hold.
func (x *ordIndex) add(score int64, id string) {
	p := listPos{score, id}
	if n := len(x.e); n == 0 || posLess(x.e[n-1], p) < 0 {
		x.e = append(x.e, p)
		return
	}
	i, _ := slices.BinarySearchFunc(x.e, p, posLess)
	x.e = slices.Insert(x.e, i, p)
}

// remove drops the entries whose id is in gone, in one pass, which ends
// once it has dropped n (how many of gone's ids x holds, or more): the
// rest is moved down at once, not looked up. The ids the store evicts and
// retention drops ended first, and were mostly created first: at the
// index's front, so a batch of them costs about its own size, not the
// index's.
func (x *ordIndex) remove(gone map[string]bool, n int) {
	w := 0
	for i, p := range x.e {
		if n <= 0 {
			w += copy(x.e[w:], x.e[i:])
			break
		}
		if gone[p.id] {
			n--
			continue
		}
		x.e[w] = p
		w++
	}
	clear(x.e[w:]) // no strings held past the end
	x.e = x.e[:w]
}

// below returns the index of the first entry at or above pos: the entries
// before it are those under pos.
func (x *ordIndex) below(pos listPos) int {
	i, _ := slices.BinarySearchFunc(x.e, pos, posLess)
	return i
}
