package jobstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// BenchmarkList measures a page of 50 of 100,000 jobs (4 tenants, 10
// topics, a tenth FAILED) on each store: served by an index (every job,
// a tenant's, a state's, a page further on by its cursor) and filtered
// (a topic: up to ListScanBudget entries examined).
func BenchmarkList(b *testing.B) {
	const n = 100_000
	stores := map[string]func(b *testing.B) jobstore.Store{
		"memory": func(*testing.B) jobstore.Store { return jobstore.NewMemory() },
		"redis": func(b *testing.B) jobstore.Store {
			s, err := jobstore.OpenRedis(redistest.Start(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			s := stores[name](b)
			defer s.Close()
			ctx := context.Background()
			t0 := time.Now().Add(-time.Hour)
			errs := make(chan error, 64)
			for w := range 64 {
				go func() {
					for i := w; i < n; i += 64 {
						j := &jobstore.Job{ID: fmt.Sprintf("j%06d", i), Tenant: fmt.Sprintf("t%d", i%4), Topic: fmt.Sprintf("topic.%d", i%10),
							CreatedAt: t0.Add(time.Duration(i) * time.Millisecond / 4)}
						if _, _, err := s.Create(ctx, j, nil); err != nil {
							errs <- err
							return
						}
						if i%10 == 3 {
							if _, err := s.Transition(ctx, j.ID, jobstore.Transition{To: jobstore.Failed}); err != nil {
								errs <- err
								return
							}
						}
					}
					errs <- nil
				}()
			}
			for range 64 {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			second, err := s.List(ctx, jobstore.ListQuery{})
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name string
				q    jobstore.ListQuery
			}{
				{"all", jobstore.ListQuery{}},
				{"all-page2", jobstore.ListQuery{Cursor: second.Next}},
				{"tenant", jobstore.ListQuery{Tenant: "t1"}},
				{"state", jobstore.ListQuery{State: jobstore.Failed}},
				{"topic", jobstore.ListQuery{Topic: "topic.3"}},
				{"tenant-state", jobstore.ListQuery{Tenant: "t2", State: jobstore.Failed}},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := s.List(ctx, c.q); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
