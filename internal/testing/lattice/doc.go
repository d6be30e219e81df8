// Package lattice runs Ward as a production lattice of separate OS
// processes on one machine — a three-server NATS cluster with JetStream
// replicated three ways (the nats-server binary built from the module
// go.mod pins), redis-server with AOF on, two schedulers, two safety
// kernels, four hosts (one GPU-tagged beside a stand-in Ollama) and the
// gateway, all with credentials on — puts a steady mixed load through it,
// injects faults one at a time, and after each checks the invariants:
// jobs submitted = jobs ended (none lost, none stuck), no job run more
// often than its retry policy allows, one terminal state and a complete,
// ordered, chained event log per job, and the seconds until throughput is
// back to 90%.
//
// Its test is behind the build tag lattice: `make lattice-test`.
package lattice
