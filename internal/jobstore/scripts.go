package jobstore

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis store's Lua scripts live in lua/*.lua, one a file. Each file
// starts with two comment lines that name its KEYS and its ARGV, in order;
// the Go side fills them through one call type per script (below), whose
// keys and argv methods list them in that same order, so that no caller
// spreads positional values around. TestScriptHeaders checks that the
// headers and the call types agree.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// The scripts, loaded once. redis.Script runs EVALSHA and falls back to
// EVAL (loading the script) when the server does not know it yet.
var (
	createScript      = loadScript("create.lua", "")
	transitionScript  = loadScript("transition.lua", transitionTables())
	listScript        = loadScript("list.lua", "")
	sweepScript       = loadScript("sweep.lua", "")
	queueHeadsScript  = loadScript("queue_heads.lua", "")
	dueDeferredScript = loadScript("due_deferred.lua", "")
	withResultScript  = loadScript("with_result.lua", "")
	dlqScript         = loadScript("dlq.lua", "")
	addDLQScript      = loadScript("add_dlq.lua", dlqPrelude)
	dlqIndexScript    = loadScript("dlq_index.lua", dlqPrelude)
	removeDLQScript   = loadScript("remove_dlq.lua", dlqPrelude)
	lockScript        = loadScript("lock.lua", "")
	unlockScript      = loadScript("unlock.lua", "")
	failureScript     = loadScript("failure.lua", "")
	runCreateScript   = loadScript("run_create.lua", "")
	runAppendScript   = loadScript("run_append.lua", "")
	runClaimScript    = loadScript("run_claim.lua", "")
	runListScript     = loadScript("run_list.lua", "")
	liveAddScript     = loadScript("live_add.lua", "")
)

// loadScript reads lua/<name> and puts prelude before it.
func loadScript(name, prelude string) *redis.Script {
	src, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("jobstore: %v", err)) // embedded: cannot happen
	}
	return redis.NewScript(prelude + string(src))
}

// dlqPrelude is the function the DLQ scripts that keep the tenants'
// indexes share: tenantDLQ(P, entry) is the key of the tenant's index
// (ns.tenantDLQ) that a JSON DLQ entry belongs in, or nil (no entry, no
// tenant, not an entry).
const dlqPrelude = `local function tenantDLQ(P, entry)
  if not entry then return nil end
  local ok, e = pcall(cjson.decode, entry)
  if not ok or type(e) ~= 'table' or type(e.tenant) ~= 'string' or e.tenant == '' then return nil end
  return P .. 'job:tenant:' .. e.tenant .. ':dlq'
end
`

// transitionTables renders the tables transition.lua reads and does not
// define, from the Go ones, so that the state table stays the one source
// of truth: allowed[from][to] (transitions), active[state] (State.Active)
// and terminal[state] (State.Terminal); and briefNames and brief, the
// fields of a Brief reply (briefFields).
func transitionTables() string {
	var b strings.Builder
	b.WriteString("local allowed = {")
	for _, from := range States() {
		if to := transitions(from); len(to) > 0 {
			fmt.Fprintf(&b, "[%q]=%s,", from, luaSet(to))
		}
	}
	b.WriteString("}\n")
	b.WriteString("local active = " + luaSet(slices.DeleteFunc(States(), func(s State) bool { return !s.Active() })) + "\n")
	b.WriteString("local terminal = " + luaSet(slices.DeleteFunc(States(), func(s State) bool { return !s.Terminal() })) + "\n")
	// briefNames (in order) and brief (a set): the fields of a Brief reply.
	b.WriteString("local briefNames = {")
	for _, f := range briefFields {
		fmt.Fprintf(&b, "%q,", f)
	}
	b.WriteString("}\nlocal brief = {")
	for _, f := range briefFields {
		fmt.Fprintf(&b, "[%q]=true,", f)
	}
	b.WriteString("}\n")
	return b.String()
}

// luaSet renders states as a Lua table mapping each to true.
func luaSet(states []State) string {
	var b strings.Builder
	b.WriteString("{")
	for _, s := range states {
		fmt.Fprintf(&b, "[%q]=true,", s)
	}
	b.WriteString("}")
	return b.String()
}

// luaCall is one run of a script: its KEYS and ARGV by name. keys and argv
// list them in the order of the script file's header.
type luaCall interface {
	script() *redis.Script
	keys(n ns) []string
	argv() []any
}

// eval runs c's script on r: the hot path's through the group commit
// (batch.go), the others on a connection of their own. It is generic, not
// a method taking a luaCall, so that c is not boxed into an interface on
// every call.
func eval[C luaCall](ctx context.Context, r *Redis, c C) *redis.Cmd {
	s := c.script()
	if !hotScript(s) {
		return s.Run(ctx, r.c, c.keys(r.ns), c.argv()...)
	}
	return r.scripts.run(ctx, s, c.keys(r.ns), c.argv())
}

// hotScript reports whether s runs for every job (its creation, its moves):
// those share round trips. The others (listings, sweeps, the DLQ, leases,
// workflow runs) are rarer and may take long; one of them should not hold
// up the jobs' moves queued behind it.
func hotScript(s *redis.Script) bool {
	return s == createScript || s == transitionScript
}

// optMS is t in Unix milliseconds, or "" when t is zero.
func optMS(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(ms(t), 10)
}

// anys appends the strings of p to args, as pointers: go-redis writes a
// *string as the string, and a pointer goes into an interface without an
// allocation, where a string takes one. p must stay as it is until the
// command has been sent (eval waits for its answer).
func anys(args []any, p []string) []any {
	for i := range p {
		args = append(args, &p[i])
	}
	return args
}

// argBuf holds the values of a call's arguments, so that argv can hand
// them to go-redis by pointer (see anys): the hot path's calls take no
// allocation an argument. Its arrays fit transition.lua's arguments.
type argBuf struct {
	s      [17]string
	n      [8]int64
	f      [2]float64
	ns, nn int
	nf     int
}

func (b *argBuf) str(v string) any  { b.s[b.ns] = v; b.ns++; return &b.s[b.ns-1] }
func (b *argBuf) num(v int64) any   { b.n[b.nn] = v; b.nn++; return &b.n[b.nn-1] }
func (b *argBuf) flt(v float64) any { b.f[b.nf] = v; b.nf++; return &b.f[b.nf-1] }

// createCall runs create.lua for job n (as newJob returned it) behind g.
type createCall struct {
	n      *Job
	guard  Guard
	event  []byte   // the creation event's JSON
	canon  string   // its canonical encoding (chain.go)
	data   []byte   // the context blob
	fields []string // n's hash, from jobFields
	digest string   // idemDigest, with an idempotency key
	args   argBuf   // argv's values
}

func (createCall) script() *redis.Script { return createScript }

func (c createCall) keys(n ns) []string {
	idem, rate := string(n), string(n) // none: the namespace alone (create.lua)
	if c.n.IdempotencyKey != "" {
		idem = n.idem(c.n.Tenant, c.n.IdempotencyKey)
	}
	if c.guard.Rate > 0 {
		rate = n.rate(c.n.Tenant)
	}
	tenant := string(n)
	if c.n.Tenant != "" {
		tenant = n.tenantJobs(c.n.Tenant)
	}
	k := []string{n.job(c.n.ID), n.ctx(c.n.ID), n.index(Pending), n.recent(), n.events(c.n.ID), idem, rate, n.deadlines(), tenant}
	for _, pool := range c.guard.Queues {
		k = append(k, n.queue(pool))
	}
	return k
}

func (c *createCall) argv() []any {
	g, v := c.guard, &c.args
	*v = argBuf{}
	a := make([]any, 0, 11+len(c.fields))
	a = append(a, v.str(c.n.ID), v.num(ms(c.n.CreatedAt)), c.data, c.event, v.str(c.digest), v.flt(g.Rate), v.flt(burst(g)),
		v.num(int64(g.QueueCap)), v.str(optMS(c.n.Deadline)), v.num(int64(len(g.Queues))), v.str(c.canon))
	return anys(a, c.fields)
}

// transitionCall runs transition.lua: job id moves as t says.
type transitionCall struct {
	id        string
	t         Transition
	when      time.Time     // t.At, or now
	event     []byte        // the move's event JSON
	via       []byte        // the event JSON of t.Via, nil without
	canon     string        // the move's event's canonical encoding (chain.go)
	viaCanon  string        // t.Via's event's, "" without
	fields    []string      // the hash fields t sets, from transitionFields
	retention time.Duration // how long an ended job is kept; 0: for ever
	args      argBuf        // argv's values
}

func (transitionCall) script() *redis.Script { return transitionScript }

func (c transitionCall) keys(n ns) []string { return []string{n.job(c.id), n.events(c.id)} }

func (c *transitionCall) argv() []any {
	t := c.t
	var lockOwner string
	var lockTTL int64
	if t.Lock != nil {
		lockOwner, lockTTL = t.Lock.Owner, t.Lock.TTL.Milliseconds()
	}
	var waitPool, waitUntil, hasWait, waitScore string
	var waitCap int
	if w := t.Wait; w != nil {
		hasWait, waitPool, waitScore, waitCap, waitUntil = "1", w.Pool, strconv.FormatFloat(w.Score, 'f', -1, 64), w.Cap, optMS(w.Until)
	} else {
		waitScore = "0"
	}
	briefArg := ""
	if t.Brief {
		briefArg = "1"
	}
	storeResult := ""
	if t.StoreResult {
		storeResult = "1"
	}
	v := &c.args
	*v = argBuf{}
	a := make([]any, 0, 27+len(c.fields))
	a = append(a, v.str(c.id), v.str(string(t.To)), v.str(string(t.From)), v.num(ms(c.when)), c.event, v.str(t.IfWorker),
		v.num(int64(t.TenantLimit)), v.num(int64(t.WorkerLimit)), v.str(lockOwner), v.num(lockTTL), v.str(waitPool), v.str(waitScore),
		v.str(waitUntil), v.num(int64(waitCap)), v.str(hasWait), v.str(t.WorkerID), v.str(optMS(t.Deadline)),
		v.num(int64(max(t.IfAttempt, 0))), v.str(t.IfTenant), v.num(c.retention.Milliseconds()), v.str(string(t.Via)), c.via,
		v.str(briefArg), v.str(c.viaCanon), v.str(c.canon), v.str(storeResult), t.Result)
	return anys(a, c.fields)
}

// listCall runs list.lua: a page of List as p plans it.
type listCall struct{ p *listPlan }

func (listCall) script() *redis.Script { return listScript }
func (c listCall) keys(n ns) []string {
	if c.p == nil {
		return []string{string(n)}
	}
	return []string{string(n) + c.p.key}
}
func (c listCall) argv() []any {
	p := c.p
	if p == nil {
		p = &listPlan{}
	}
	curScore, curID := "", ""
	if p.cur != nil {
		curScore, curID = strconv.FormatInt(p.cur.score, 10), p.cur.id
	}
	opt := func(on bool, v int64) string {
		if !on {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	return []any{p.limit, ListScanBudget, curScore, curID, opt(p.untilStarts, p.until), opt(p.sinceStops, p.since),
		p.tenant, string(p.state), p.topic, opt(p.checkUntil, p.until), opt(p.checkSince, p.since), p.worker}
}

// sweepCall runs sweep.lua: up to limit jobs whose retention passed leave
// the creation indexes.
type sweepCall struct {
	limit int
}

func (sweepCall) script() *redis.Script { return sweepScript }
func (c sweepCall) keys(n ns) []string  { return []string{n.ended(), n.recent()} }
func (c sweepCall) argv() []any         { return []any{c.limit} }

// queueHeadsCall runs queue_heads.lua on pool's queue.
type queueHeadsCall struct {
	pool  string
	limit int
}

func (queueHeadsCall) script() *redis.Script { return queueHeadsScript }
func (c queueHeadsCall) keys(n ns) []string  { return []string{n.queue(c.pool)} }
func (c queueHeadsCall) argv() []any         { return []any{c.limit} }

// dueDeferredCall runs due_deferred.lua.
type dueDeferredCall struct {
	now   time.Time
	limit int
}

func (dueDeferredCall) script() *redis.Script { return dueDeferredScript }
func (c dueDeferredCall) keys(n ns) []string  { return []string{n.deferred()} }
func (c dueDeferredCall) argv() []any         { return []any{ms(c.now), c.limit} }

// withResultCall runs with_result.lua on state's index.
type withResultCall struct {
	state  State
	before time.Time
	limit  int
}

func (withResultCall) script() *redis.Script { return withResultScript }
func (c withResultCall) keys(n ns) []string  { return []string{n.index(c.state)} }
func (c withResultCall) argv() []any         { return []any{ms(c.before), c.limit} }

// dlqCall runs dlq.lua: the DLQ's newest entries, or the tenant's.
type dlqCall struct {
	tenant string // "": every tenant's
	limit  int
}

func (dlqCall) script() *redis.Script { return dlqScript }
func (c dlqCall) keys(n ns) []string {
	if c.tenant != "" {
		return []string{n.tenantDLQ(c.tenant)}
	}
	return []string{n.dlq()}
}
func (c dlqCall) argv() []any { return []any{c.limit} }

// addDLQCall runs add_dlq.lua: entry is e as JSON.
type addDLQCall struct {
	e     DLQEntry
	entry []byte
}

func (addDLQCall) script() *redis.Script { return addDLQScript }
func (c addDLQCall) keys(n ns) []string  { return []string{n.dlq(), n.dlqEntry(c.e.JobID)} }
func (c addDLQCall) argv() []any         { return []any{c.e.JobID, ms(c.e.At), c.entry} }

// dlqIndexCall runs dlq_index.lua: the next batch entries into their
// tenants' indexes.
type dlqIndexCall struct {
	batch int
}

func (dlqIndexCall) script() *redis.Script { return dlqIndexScript }
func (c dlqIndexCall) keys(n ns) []string  { return []string{n.dlq(), n.dlqIndexed()} }
func (c dlqIndexCall) argv() []any         { return []any{c.batch} }

// removeDLQCall runs remove_dlq.lua for job id.
type removeDLQCall struct {
	id        string
	retention time.Duration // how long an ended job is kept; 0: for ever
}

func (removeDLQCall) script() *redis.Script { return removeDLQScript }
func (c removeDLQCall) keys(n ns) []string  { return []string{n.dlq(), n.ended()} }
func (c removeDLQCall) argv() []any         { return []any{c.id, c.retention.Milliseconds()} }

// lockCall runs lock.lua: owner takes or extends the lock key for ttl.
type lockCall struct {
	key, owner string
	ttl        time.Duration
}

func (lockCall) script() *redis.Script { return lockScript }
func (c lockCall) keys(n ns) []string  { return []string{c.key} }
func (c lockCall) argv() []any         { return []any{c.owner, c.ttl.Milliseconds()} }

// unlockCall runs unlock.lua: owner gives the lock key up.
type unlockCall struct {
	key, owner string
}

func (unlockCall) script() *redis.Script { return unlockScript }
func (c unlockCall) keys(n ns) []string  { return []string{c.key} }
func (c unlockCall) argv() []any         { return []any{c.owner} }

// failureCall runs failure.lua: worker failed at now.
type failureCall struct {
	worker           string
	now              time.Time
	window, cooldown time.Duration
	threshold        int
}

func (failureCall) script() *redis.Script { return failureScript }
func (c failureCall) keys(n ns) []string  { return []string{n.failures(c.worker), n.quarantine()} }
func (c failureCall) argv() []any {
	return []any{c.worker, ms(c.now), c.window.Milliseconds(), c.threshold, c.cooldown.Milliseconds()}
}

// runCreateCall runs run_create.lua for run n (its defaults filled, as
// CreateRun does) at now.
type runCreateCall struct {
	n         *Run
	events    [][]byte
	fields    []string // n's hash, from runFields
	now       time.Time
	retention time.Duration // how long an ended run is kept; 0: for ever
}

func (runCreateCall) script() *redis.Script { return runCreateScript }

func (c runCreateCall) keys(n ns) []string {
	tenant := string(n)
	if c.n.Tenant != "" {
		tenant = n.runTenant(c.n.Tenant)
	}
	return []string{n.run(c.n.ID), n.runEvents(c.n.ID), n.runIndex(), tenant, n.runActive(), n.runEnded()}
}

func (c runCreateCall) argv() []any {
	n := c.n
	a := make([]any, 0, 8+len(c.events)+len(c.fields))
	a = append(a, n.ID, n.Tenant, n.State, ms(n.CreatedAt), claimScore(n.OwnedUntil), c.retention.Milliseconds(),
		ms(c.now), len(c.events))
	for _, e := range c.events {
		a = append(a, e)
	}
	return anys(a, c.fields)
}

// runAppendCall runs run_append.lua: owner appends events to run id's
// log after its first after ones.
type runAppendCall struct {
	id, owner     string
	after         int
	events        [][]byte
	state, reason string
	now           time.Time
	retention     time.Duration // how long an ended run is kept; 0: for ever
}

func (runAppendCall) script() *redis.Script { return runAppendScript }

func (c runAppendCall) keys(n ns) []string {
	return []string{n.run(c.id), n.runEvents(c.id), n.runActive(), n.runEnded()}
}

func (c runAppendCall) argv() []any {
	a := make([]any, 0, 7+len(c.events))
	a = append(a, c.id, c.owner, c.after, c.state, c.reason, ms(c.now), c.retention.Milliseconds())
	for _, e := range c.events {
		a = append(a, e)
	}
	return a
}

// runClaimCall runs run_claim.lua: owner claims run id until until.
type runClaimCall struct {
	id, owner  string
	until, now time.Time
}

func (runClaimCall) script() *redis.Script { return runClaimScript }
func (c runClaimCall) keys(n ns) []string  { return []string{n.run(c.id), n.runActive()} }
func (c runClaimCall) argv() []any {
	return []any{c.id, c.owner, optMS(c.until), claimScore(c.until), ms(c.now)}
}

// runListCall runs run_list.lua on tenant's index (every tenant's when
// tenant is empty).
type runListCall struct {
	tenant string
	limit  int
}

func (runListCall) script() *redis.Script { return runListScript }

func (c runListCall) keys(n ns) []string {
	if c.tenant == "" {
		return []string{n.runIndex()}
	}
	return []string{n.runTenant(c.tenant)}
}

func (c runListCall) argv() []any { return []any{c.limit, c.tenant} }
