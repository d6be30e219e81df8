package jobstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"
)

// WriteView writes l's view now (LoggedOptions.View), as its loop does.
func WriteView(ctx context.Context, l *Logged) error { return l.view.write(ctx) }

// ViewStore is a Redis store that reads log name's view: the Redis
// store's keys under its namespace (for reads only).
func ViewStore(c redis.UniversalClient, name string) Store {
	return &Redis{c: c, ns: viewKeys(name), scripts: newBatcher(c)}
}

// SameView writes l's view, then reports where it differs from l's
// state: every job's hash, events and index entries, read from Redis as
// they are, and no key of a job the state does not hold.
func SameView(ctx context.Context, l *Logged) error {
	if err := WriteView(ctx, l); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	c, k, m := l.c, l.view.keys, l.Memory
	m.mu.Lock()
	want := struct {
		jobs    map[string]map[string]string
		events  map[string][]Event
		index   map[State]zset
		recent  zset
		tenants map[string]zset
	}{jobs: map[string]map[string]string{}, events: map[string][]Event{}, index: map[State]zset{}, recent: zset{}, tenants: map[string]zset{}}
	for id, mj := range m.jobs {
		p, err := mj.pairs(nil)
		if err != nil {
			m.mu.Unlock()
			return err
		}
		if mj.locked {
			p = append(p, fLocked, "1")
		}
		h := map[string]string{}
		for i := 0; i < len(p); i += 2 {
			h[p[i]] = p[i+1]
		}
		want.jobs[id] = h
		want.events[id] = append([]Event(nil), m.events[id]...)
	}
	for s, z := range m.index {
		if len(z) > 0 {
			want.index[s] = maps.Clone(z)
		}
	}
	for _, e := range m.created.e {
		want.recent[e.id] = float64(e.score)
	}
	for t, x := range m.tenantJobs {
		z := zset{}
		for _, e := range x.e {
			z[e.id] = float64(e.score)
		}
		if len(z) > 0 {
			want.tenants[t] = z
		}
	}
	m.mu.Unlock()

	zsetOf := func(key string) (zset, error) {
		zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		z := zset{}
		for _, e := range zs {
			z[e.Member.(string)] = e.Score
		}
		return z, err
	}
	opts := []cmp.Option{cmpopts.EquateEmpty(), cmp.Exporter(func(reflect.Type) bool { return true })}
	for id, h := range want.jobs {
		got, err := c.HGetAll(ctx, k.job(id)).Result()
		if err != nil {
			return err
		}
		if d := cmp.Diff(h, got, opts...); d != "" {
			return fmt.Errorf("job %s's hash differs (-state +view):\n%s", id, d)
		}
		raw, err := c.LRange(ctx, k.events(id), 0, -1).Result()
		if err != nil {
			return err
		}
		evs := make([]Event, len(raw))
		for i, r := range raw {
			if err := json.Unmarshal([]byte(r), &evs[i]); err != nil {
				return fmt.Errorf("job %s's event %d: %w", id, i, err)
			}
		}
		if d := cmp.Diff(want.events[id], evs, opts...); d != "" {
			return fmt.Errorf("job %s's events differ (-state +view):\n%s", id, d)
		}
	}
	for _, s := range States() {
		got, err := zsetOf(k.index(s))
		if err != nil {
			return err
		}
		if d := cmp.Diff(want.index[s], got, opts...); d != "" {
			return fmt.Errorf("the %s index differs (-state +view):\n%s", s, d)
		}
	}
	got, err := zsetOf(k.recent())
	if err != nil {
		return err
	}
	if d := cmp.Diff(want.recent, got, opts...); d != "" {
		return fmt.Errorf("job:recent differs (-state +view):\n%s", d)
	}
	tenantKeys, err := c.Keys(ctx, string(k)+"job:tenant:*").Result()
	if err != nil {
		return err
	}
	gotTenants := map[string]zset{}
	for _, key := range tenantKeys {
		z, err := zsetOf(key)
		if err != nil {
			return err
		}
		t := key[len(string(k)+"job:tenant:") : len(key)-len(":all")]
		gotTenants[t] = z
	}
	if d := cmp.Diff(want.tenants, gotTenants, opts...); d != "" {
		return fmt.Errorf("the tenant indexes differ (-state +view):\n%s", d)
	}
	hashes, err := c.Keys(ctx, string(k)+"job:*").Result()
	if err != nil {
		return err
	}
	for _, key := range hashes {
		typ, err := c.Type(ctx, key).Result()
		if err != nil {
			return err
		}
		if id := key[len(string(k)+"job:"):]; typ == "hash" && want.jobs[id] == nil {
			return fmt.Errorf("the view holds job %s, which the state does not", id)
		}
		if id, ok := strings.CutPrefix(key, string(k)+"job:events:"); ok && want.jobs[id] == nil {
			return fmt.Errorf("the view holds the events of job %s, which the state does not", id)
		}
	}
	return nil
}
