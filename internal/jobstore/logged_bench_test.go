package jobstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// BenchmarkLife: a job's life in the store, as the scheduler lives it
// (submit, dispatch through SCHEDULED, RUNNING, the end with its result),
// from 64 goroutines at once, on the memory store, the Redis store and the
// logged store:
//
//	go test -run '^$' -bench Life -benchtime 20000x ./internal/jobstore
func BenchmarkLife(b *testing.B) {
	url := redistest.Start(b)
	c := redisClient(b, url)
	for _, kind := range []string{"memory", "redis", "logged"} {
		b.Run(kind, func(b *testing.B) {
			flush(b, url)
			ctx := context.Background()
			var s jobstore.Store
			switch kind {
			case "memory":
				s = jobstore.NewMemory()
			case "redis":
				s = jobstore.NewRedis(c)
			case "logged":
				l, err := jobstore.OpenLogged(ctx, c, "bench", jobstore.LoggedOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				s = l
			}
			var n atomic.Int64
			payload := make([]byte, 64)
			b.SetParallelism(32) // 64 on two cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("b%d", n.Add(1))
					if _, err := s.Submit(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: "acme"}, payload, jobstore.Guard{Queues: []string{"echo"}}); err != nil {
						b.Fatal(err)
					}
					for _, t := range []jobstore.Transition{
						{To: jobstore.Dispatched, Via: jobstore.Scheduled, Pool: "echo", WorkerID: "h1", Attempt: 1, TenantLimit: 1000, Brief: true},
						{To: jobstore.Running, IfWorker: "h1", IfAttempt: 1, Brief: true},
						{To: jobstore.Succeeded, IfWorker: "h1", IfAttempt: 1, StoreResult: true, Result: payload, Brief: true},
					} {
						if _, err := s.Transition(ctx, id, t); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}
