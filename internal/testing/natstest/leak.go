package natstest

import "go.uber.org/goleak"

// IgnoreJetStreamPublisher is the goleak option for the one goroutine of
// nats.go's JetStream that can outlive its connection: the publisher's
// reconnect watcher (resetPendingAcksOnReconnect), started by the first
// asynchronous publish (an object store's Put), waits for a status change
// that a connection closed at that moment never sends. It is the
// library's, holds nothing of Ward's, and ends with the process.
var IgnoreJetStreamPublisher = goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")
