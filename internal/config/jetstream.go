package config

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// jetStreamReplicas is how many copies of each stream and bucket Ward
// creates (SetJetStreamReplicas).
var jetStreamReplicas atomic.Int32

// JetStreamReplicas is how many copies of each JetStream stream and
// bucket Ward creates (the module registry, the policy, API key and
// tenants' object buckets, the audit log): 1, unless the process was told
// more ($WARD_JS_REPLICAS, SetJetStreamReplicas). In a NATS cluster of
// three, 3 keeps them through the loss of one server. It applies to what
// is created; an existing bucket keeps its replicas.
func JetStreamReplicas() int {
	if n := jetStreamReplicas.Load(); n > 0 {
		return int(n)
	}
	if v := os.Getenv("WARD_JS_REPLICAS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 5 {
			return n
		}
	}
	return 1
}

// SetJetStreamReplicas sets JetStreamReplicas for the process (1 to 5).
func SetJetStreamReplicas(n int) error {
	if n < 1 || n > 5 {
		return fmt.Errorf("jetstream replicas %d: want 1 to 5 (JetStream's limit)", n)
	}
	jetStreamReplicas.Store(int32(n))
	return nil
}
