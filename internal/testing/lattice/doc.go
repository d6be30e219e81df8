// Package lattice runs Ward as a production lattice of separate OS
// processes on one machine — a three-server NATS cluster with JetStream
// replicated three ways (the nats-server binary built from the module
// go.mod pins), redis-server with AOF on, two schedulers, two safety
// kernels, four hosts (one GPU-tagged beside a stand-in Ollama, one
// reaching NATS only through proxies that can cut it off) and the
// gateway, all with credentials on — puts a steady mixed load through it
// (some of it cancelled at once), injects faults one at a time, and after
// each checks the invariants: jobs submitted = jobs ended (none lost, none
// stuck), no job run more often than its retry policy allows, one
// terminal state and a complete, ordered, chained event log per job, and
// the seconds until throughput is back to 90%.
//
// After every fault, and at the end, the history checker
// (internal/testing/history) reads the submitters' log of acknowledged
// submits, the hosts' logs (at DEBUG: every (job, attempt) accepted,
// every result answered) and the store's records: every acknowledged job
// ends within its timeouts plus its faults' recovery, no (job, attempt)
// runs twice, nothing runs after its job was cancelled, an attempt above
// 1 follows a recorded fault, timeout or failure, no late result ends a
// newer attempt, every event chain verifies; at the end the store's
// tenant and worker counts and the hosts' active jobs are back to zero.
//
// The faults include parts left alive: a host SIGSTOPped past its
// running timeout and heartbeat TTL, then continued; a host cut off NATS
// (cutProxy) and healed; a scheduler killed between a dispatch's store
// write and its publish, by a failpoint compiled only into the lattice's
// ward binary (internal/failpoint, build tag failpoints).
//
// Its test is behind the build tag lattice: `make lattice-test`; HOG=1
// runs a busy loop on every core beside it.
package lattice
