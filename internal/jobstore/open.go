package jobstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultClusterShards is the shard count of a Sharded store on a Redis
// Cluster when the URL does not say (shards=N): enough for the slots of
// 16 masters, few enough that a read across tenants (one call a shard,
// all at once) stays cheap.
const DefaultClusterShards = 16

// Open connects to the Redis store url names and checks that it answers:
//
//	redis://[user:password@]host:port[/db]     one server (rediss:// for TLS)
//	redis+sentinel://[user:password@]host:port?master_name=M[&addr=host2:port]
//	                                           the primary of M, through Sentinel
//	redis+cluster://[user:password@]host:port[?addr=host2:port&addr=...]
//	                                           a Redis Cluster (rediss+cluster:// for TLS)
//
// The query takes go-redis's options (dial_timeout=3s, pool_size=20, ...)
// and shards=N: a cluster's store is Sharded with DefaultClusterShards
// shards unless N says otherwise; shards=N on one server makes it Sharded
// too (the layout a cluster has, for trying it on one server).
//
// log=NAME opens the logged store instead (Logged, experimental; on one
// server, through Sentinel, or on a Cluster, where its keys share the slot
// of {NAME}): the
// state in this process's memory, every change appended to the log NAME
// in Redis (OpenLogged). One process owns a log at a time: another that
// opens it waits as a standby until the owner's lease (lease=5s by
// default) lapses or is given up, then takes it over and fences the
// former owner out. snapshot=N: the owner stores a snapshot of its state
// (and trims the log it holds) after N records at least
// (DefaultSnapshotEvery), and eight for each job the state holds.
// view=1: the owner also keeps the Redis store's keys of its jobs (their
// hashes, events and indexes) under the log's hash tag ({NAME}job:<id>), a moment
// behind its state, for readers of Redis (LoggedOptions.View).
// log=NAME&shards=N splits it into N logs with owners (Owned): every
// process that opens it owns its share of them, and a scheduler sends
// what belongs to another's shards to it.
func Open(rawURL string) (Store, error) { return OpenContext(context.Background(), rawURL) }

// OpenContext is Open; ctx bounds a standby's wait for a log (log=NAME)
// and its replay.
func OpenContext(octx context.Context, rawURL string) (Store, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("jobstore: redis url %q: no scheme (redis://, rediss://, redis+sentinel://, redis+cluster://)", RedactURL(rawURL))
	}
	base, kind, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, fmt.Errorf("jobstore: redis url: scheme %q is not redis, rediss, redis+sentinel or redis+cluster", scheme)
	}
	plainURL, logName, err := cutParam(base+"://"+rest, "log")
	if err != nil {
		return nil, err
	}
	plainURL, leaseTTL, err := cutParam(plainURL, "lease")
	if err != nil {
		return nil, err
	}
	var lease time.Duration
	if leaseTTL != "" {
		if lease, err = time.ParseDuration(leaseTTL); err != nil || lease < 30*time.Millisecond || logName == "" {
			return nil, fmt.Errorf("jobstore: redis url: lease=%q is not a duration of 30ms or more for a log (log=NAME)", leaseTTL)
		}
	}
	plainURL, snapEvery, err := cutParam(plainURL, "snapshot")
	if err != nil {
		return nil, err
	}
	var every int
	if snapEvery != "" {
		if every, err = strconv.Atoi(snapEvery); err != nil || every < 1 || logName == "" {
			return nil, fmt.Errorf("jobstore: redis url: snapshot=%q is not a number of records (1 or more) for a log (log=NAME)", snapEvery)
		}
	}
	plainURL, viewParam, err := cutParam(plainURL, "view")
	if err != nil {
		return nil, err
	}
	var view bool
	if viewParam != "" {
		if view, err = strconv.ParseBool(viewParam); err != nil || logName == "" {
			return nil, fmt.Errorf("jobstore: redis url: view=%q is not 1 or 0 for a log (log=NAME)", viewParam)
		}
	}
	plainURL, shards, err := cutShards(plainURL)
	if err != nil {
		return nil, err
	}
	var c redis.UniversalClient
	switch kind {
	case "":
		opt, err := redis.ParseURL(plainURL)
		if err != nil {
			return nil, fmt.Errorf("jobstore: redis url: %w", err)
		}
		c = redis.NewClient(opt)
	case "sentinel":
		opt, err := redis.ParseFailoverURL(plainURL)
		if err != nil {
			return nil, fmt.Errorf("jobstore: redis sentinel url: %w", err)
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("jobstore: redis sentinel url: master_name= is required")
		}
		c = redis.NewFailoverClient(opt)
	case "cluster":
		opt, err := redis.ParseClusterURL(plainURL)
		if err != nil {
			return nil, fmt.Errorf("jobstore: redis cluster url: %w", err)
		}
		c = redis.NewClusterClient(opt)
		if shards == 0 && logName == "" { // a log's keys share one slot: {NAME}
			shards = DefaultClusterShards
		}
	default:
		return nil, fmt.Errorf("jobstore: redis url: scheme %q is not redis, rediss, redis+sentinel or redis+cluster", scheme)
	}
	pctx, cancel := context.WithTimeout(octx, 5*time.Second)
	defer cancel()
	if err := ping(pctx, c); err != nil {
		return nil, errors.Join(fmt.Errorf("jobstore: redis %s: %w", RedactURL(rawURL), err), c.Close())
	}
	if err := checkLayout(pctx, c, logName, shards); err != nil {
		return nil, errors.Join(fmt.Errorf("jobstore: redis %s: %w", RedactURL(rawURL), err), c.Close())
	}
	if logName != "" && shards > 0 {
		// Shards with owners: this process takes its share of them.
		o, err := OpenOwned(octx, c, logName, shards, LoggedOptions{LeaseTTL: lease, SnapshotEvery: every, View: view})
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		o.ownsClient = true
		return o, nil
	}
	if logName != "" {
		// A standby waits here, for as long as the owner lives.
		l, err := OpenLogged(octx, c, logName, LoggedOptions{LeaseTTL: lease, SnapshotEvery: every, View: view})
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		l.ownsClient = true
		return l, nil
	}
	if shards > 0 {
		return NewSharded(c, shards), nil
	}
	return NewRedis(c), nil
}

// Kind names the kind of store s is, for a status: "memory", "redis",
// "redis-sharded"; "" for another Store.
func Kind(s Store) string {
	switch s.(type) {
	case *Memory:
		return "memory"
	case *Redis:
		return "redis"
	case *Sharded:
		return "redis-sharded"
	case *Logged:
		return "redis-logged"
	case *Owned:
		return "redis-logged-shards"
	}
	return ""
}

// ping checks that the server answers; on a cluster, every master, and
// that all slots are served.
func ping(ctx context.Context, c redis.UniversalClient) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c.Ping(ctx).Err()
	}
	info, err := cc.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("cluster state is not ok (CLUSTER INFO: %q)", strings.TrimSpace(strings.SplitN(info, "\n", 2)[0]))
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
}

// cutParam takes name=value out of u's query, and returns u without it
// and the value ("" when absent).
func cutParam(u, name string) (string, string, error) {
	pre, query, ok := strings.Cut(u, "?")
	if !ok {
		return u, "", nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", "", fmt.Errorf("jobstore: redis url query: %w", err)
	}
	v := q.Get(name)
	if v == "" {
		return u, "", nil
	}
	q.Del(name)
	if len(q) == 0 {
		return pre, v, nil
	}
	return pre + "?" + q.Encode(), v, nil
}

// cutShards takes shards=N out of u's query (go-redis refuses options it
// does not know).
func cutShards(u string) (string, int, error) {
	pre, query, ok := strings.Cut(u, "?")
	if !ok {
		return u, 0, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", 0, fmt.Errorf("jobstore: redis url query: %w", err)
	}
	v := q.Get("shards")
	if v == "" {
		return u, 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > slots {
		return "", 0, fmt.Errorf("jobstore: redis url: shards=%q is not a count from 1 to %d", v, slots)
	}
	q.Del("shards")
	if len(q) == 0 {
		return pre, n, nil
	}
	return pre + "?" + q.Encode(), n, nil
}

// ErrLayout is the error of a store opened in another layout than the
// one its keys were written in (checkLayout).
var ErrLayout = errors.New("the job store's keys were written in another layout")

// checkLayout records, on a store's first open, the layout its keys are
// written in (a log named log, or none; its shard count, 0 for none) and
// refuses any other on every later open. A tenant's jobs are in the shard
// its name hashes to modulo the count, and a log's shards are logs of
// their own: a replica that counted otherwise would look for them where
// they are not, and the jobs in flight would be served by nobody. The
// record is one key: ward:log:{NAME}:layout for a log, ward:layout
// otherwise, written with SET NX (which the scheduler's Redis user may
// run). An operator who means to start again in another layout, with no
// job left to end in the old one, deletes it (docs/OPERATIONS.md).
//
// Logs and the Redis store keep their jobs under keys of their own, so
// that a move from one to the other on the same Redis would leave the
// old one's jobs unserved with no error: the first open of a log refuses
// while ward:layout is there, and the first open of the Redis store while
// a log is (every log's open records its name and layout in the hash
// ward:logs, HSETNX). Logs of other names live side by side.
func checkLayout(ctx context.Context, c redis.UniversalClient, log string, shards int) error {
	key, want := "ward:layout", "shards="+strconv.Itoa(shards)
	if log != "" {
		key = "ward:log:{" + log + "}:layout"
	}
	for range 2 { // twice at most: another process may record it meanwhile
		have, err := c.Get(ctx, key).Result()
		switch {
		case err == nil && have != want:
			return fmt.Errorf("%w: %s is %q, this process asks for %q (shards=N in the URL, 0 for none): the shard count cannot change while jobs are in the store; to start afresh in a new layout once none is left to end, delete %s", ErrLayout, key, have, want, key)
		case err == nil:
			return recordLog(ctx, c, log, want)
		case !errors.Is(err, redis.Nil):
			return fmt.Errorf("reading the store's layout: %w", err)
		}
		// This layout's first open: not over the other kind's jobs.
		if err := otherKind(ctx, c, log); err != nil {
			return err
		}
		set, err := c.SetArgs(ctx, key, want, redis.SetArgs{Mode: "NX"}).Result()
		if err == nil && set == "OK" {
			return recordLog(ctx, c, log, want)
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("recording the store's layout: %w", err)
		}
	}
	return fmt.Errorf("recording the store's layout: %s changes under this process", key)
}

// logsKey is the hash of the logs a Redis holds: a log's name, its layout.
const logsKey = "ward:logs"

// recordLog records log (none: the Redis store) in logsKey, for the Redis
// store's first open to find (logs made before the hash existed are
// recorded at their next open).
func recordLog(ctx context.Context, c redis.UniversalClient, log, layout string) error {
	if log == "" {
		return nil
	}
	if err := c.HSetNX(ctx, logsKey, log, layout).Err(); err != nil {
		return fmt.Errorf("recording the log in %s: %w", logsKey, err)
	}
	return nil
}

// otherKind refuses a log's first open over the Redis store's jobs, and
// the Redis store's over a log's.
func otherKind(ctx context.Context, c redis.UniversalClient, log string) error {
	const how = "once none is left to end, delete %s; or give this store a Redis database of its own (/N in the URL)"
	if log != "" {
		have, err := c.Get(ctx, "ward:layout").Result()
		switch {
		case err == nil:
			return fmt.Errorf("%w: this Redis holds the Redis store's jobs (ward:layout is %q), which the log %q would leave unserved; "+how, ErrLayout, have, log, "ward:layout")
		case !errors.Is(err, redis.Nil):
			return fmt.Errorf("reading the store's layout: %w", err)
		}
		return nil
	}
	logs, err := c.HGetAll(ctx, logsKey).Result()
	if err != nil {
		return fmt.Errorf("reading %s: %w", logsKey, err)
	}
	if len(logs) > 0 {
		names := slices.Sorted(maps.Keys(logs))
		return fmt.Errorf("%w: this Redis holds the logs %s (%s), whose jobs the Redis store would leave unserved; "+how, ErrLayout, strings.Join(names, ", "), logsKey, logsKey)
	}
	return nil
}

// RedactURL hides a password in a URL, for messages and logs.
func RedactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		return scheme + "://***@" + rest[at+1:]
	}
	return u
}
