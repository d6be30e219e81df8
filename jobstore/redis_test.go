package jobstore_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/testing/redistest"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/jobstore/storetest"
)

// TestRedis runs the suite on one server, flushed before each subtest.
func TestRedis(t *testing.T) {
	url := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		s, err := jobstore.OpenRedis(url)
		if err != nil {
			t.Fatal(err)
		}
		flush(t, url)
		return s
	})
}

func flush(t testing.TB, url string) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
}

func TestOpenRedisErrors(t *testing.T) {
	if _, err := jobstore.OpenRedis("http://localhost:6379"); err == nil {
		t.Error("OpenRedis accepted an http URL")
	}
	// A port nobody listens on: take a free one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := jobstore.OpenRedis("redis://" + addr); err == nil {
		t.Errorf("OpenRedis of %s (nothing listening) succeeded", addr)
	}
}

// BenchmarkRedisCreateTransition measures a job's common life: a create and
// four transitions to SUCCEEDED, five round trips.
func BenchmarkRedisCreateTransition(b *testing.B) {
	url := redistest.Start(b)
	s, err := jobstore.OpenRedis(url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	payload := []byte(`{"prompt":"hello"}`)
	steps := []jobstore.Transition{
		{To: jobstore.Scheduled, Pool: "gpu"},
		{To: jobstore.Dispatched, WorkerID: "w1"},
		{To: jobstore.Running},
		{To: jobstore.Succeeded, ResultPtr: jobstore.ResultPtr("x")},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("bench-%d", i)
		i++
		j := &jobstore.Job{ID: id, Topic: "inference", Tenant: "acme", Labels: map[string]string{"team": "ml"}}
		if _, _, err := s.Create(ctx, j, payload); err != nil {
			b.Fatal(err)
		}
		for _, st := range steps {
			if _, err := s.Transition(ctx, id, st); err != nil {
				b.Fatal(err)
			}
		}
	}
}
