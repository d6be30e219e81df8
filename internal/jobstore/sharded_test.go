package jobstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestShardedOneServer runs the suite on the sharded layout (4 shards)
// on one server: the scripts with their keys under hash tags, the
// directory, and the reads merged across shards.
func TestShardedOneServer(t *testing.T) {
	url := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		flush(t, url)
		s, err := jobstore.Open(url + "?shards=4")
		if err != nil {
			t.Fatal(err)
		}
		if n := s.(*jobstore.Sharded).Shards(); n != 4 {
			t.Fatalf("Open(shards=4) gave %d shards", n)
		}
		return s
	})
}

// TestCluster runs the suite on a Redis Cluster of three masters
// (redis-cli --cluster create): every script's keys must be in one slot
// (else the server answers CROSSSLOT), and the shards spread over the
// masters.
func TestCluster(t *testing.T) {
	url := redistest.StartCluster(t, 3)
	opt, err := redis.ParseClusterURL("redis" + url[len("redis+cluster"):])
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClusterClient(opt)
	defer admin.Close()
	ctx := context.Background()
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.FlushDB(ctx).Err()
		}); err != nil {
			t.Fatalf("FLUSHDB: %v", err)
		}
		s, err := jobstore.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	// Every master holds keys of some shard: the tags are spread.
	s, err := jobstore.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 64 {
		tenant := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, _, err := s.Create(ctx, &jobstore.Job{ID: "spread-" + tenant, Topic: "t", Tenant: tenant}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if err == nil && n == 0 {
			t.Errorf("master %s holds no key after 64 tenants' jobs", m.Options().Addr)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
