package jobstore

// ns is a key namespace of the Redis store: "" on a single server (the
// keys as listed on Redis), or a hash tag "{...}" that every key of one
// shard of a sharded store starts with (sharded.go), so that every key a
// script touches is in one Redis Cluster slot. The scripts read it off
// their first key (lua: P) and put it before every key they derive.
type ns string

// plain is the namespace of a single server, and the memory store's.
const plain ns = ""

func (n ns) job(id string) string           { return string(n) + "job:" + id }
func (n ns) index(s State) string           { return string(n) + "job:index:" + string(s) }
func (n ns) events(id string) string        { return string(n) + "job:events:" + id }
func (n ns) idem(tenant, key string) string { return string(n) + "job:idem:" + idemKey(tenant, key) }
func (n ns) lock(id string) string          { return string(n) + "job:lock:" + id }
func (n ns) active(tenant string) string    { return string(n) + "job:tenant:" + tenant + ":active" }
func (n ns) rate(tenant string) string      { return string(n) + "job:rate:" + tenant }
func (n ns) lease(name string) string       { return string(n) + "job:lease:" + name }
func (n ns) failures(worker string) string  { return string(n) + "job:wfail:" + worker }
func (n ns) dlqEntry(id string) string      { return string(n) + "job:dlq:" + id }
func (n ns) ctx(id string) string           { return string(n) + "ctx:" + id }
func (n ns) res(id string) string           { return string(n) + "res:" + id }
func (n ns) queue(pool string) string       { return string(n) + "job:queue:" + pool }

// tenantJobs is the tenant's creation index: every job of the tenant by
// creation ms (job:tenant:<tenant>:active is its active set).
func (n ns) tenantJobs(tenant string) string { return string(n) + "job:tenant:" + tenant + ":all" }

// tenantDLQ is the tenant's part of the DLQ: its dead-lettered ids by
// dead-letter ms (add_dlq.lua, remove_dlq.lua).
func (n ns) tenantDLQ(tenant string) string { return string(n) + "job:tenant:" + tenant + ":dlq" }

// dlqIndexed is how far dlq_index.lua went putting the entries made
// before tenantDLQ existed in it.
func (n ns) dlqIndexed() string { return string(n) + "job:dlq:indexed" }

func (n ns) recent() string     { return string(n) + "job:recent" }
func (n ns) dlq() string        { return string(n) + "job:dlq" }
func (n ns) deferred() string   { return string(n) + "job:deferred" }
func (n ns) deadlines() string  { return string(n) + "job:deadlines" }
func (n ns) mode() string       { return string(n) + "job:mode" }
func (n ns) quarantine() string { return string(n) + "job:quarantine" }
func (n ns) ended() string      { return string(n) + "job:ended" }

func (n ns) run(id string) string           { return string(n) + "run:id:" + id }
func (n ns) runEvents(id string) string     { return string(n) + "run:log:" + id }
func (n ns) runTenant(tenant string) string { return string(n) + "run:tenant:" + tenant }
func (n ns) runIndex() string               { return string(n) + "run:index" }
func (n ns) runActive() string              { return string(n) + "run:active" }
func (n ns) runEnded() string               { return string(n) + "run:ended" }
