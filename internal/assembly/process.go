package assembly

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/jobstore"
)

// EmbeddedNATS is a NATS server with JetStream on, run inside the process
// (`ward dev`), its store in a temporary directory or in a data directory
// kept across runs (StartNATSIn).
type EmbeddedNATS struct {
	*server.Server
	dir  string
	temp bool // dir is removed on Shutdown
}

// StartNATS runs an embedded NATS server on host:port (port -1: a random
// one) and waits until it takes connections. With keys, it trusts Ward's
// operator and accounts (auth.ServerKeys) and every client needs a
// credential; without, anyone may connect (--insecure).
func StartNATS(host string, port int, keys *auth.ServerKeys) (*EmbeddedNATS, error) {
	return StartNATSIn(host, port, keys, "")
}

// StartNATSIn is StartNATS with JetStream's store in dataDir, kept across
// runs: the KV and object buckets (modules, policy bundles, API keys,
// audit records, results stored by pointer) are there again at the next
// start. An empty dataDir is a temporary directory, removed on Shutdown.
func StartNATSIn(host string, port int, keys *auth.ServerKeys, dataDir string) (*EmbeddedNATS, error) {
	if port > 0 {
		// A port in use would leave the server waiting for it: say so now.
		l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		if err := l.Close(); err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
	}
	dir, temp := dataDir, dataDir == ""
	if temp {
		var err error
		if dir, err = os.MkdirTemp("", "ward-dev-jetstream-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats: data dir: %w", err)
	}
	cleanup := func() error {
		if temp {
			return os.RemoveAll(dir)
		}
		return nil
	}
	opts := &server.Options{Host: host, Port: port, JetStream: true, StoreDir: dir, NoSigs: true, ServerName: "ward-dev"}
	if keys != nil {
		if err := keys.Apply(opts); err != nil {
			return nil, errors.Join(err, cleanup())
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("nats: %w", err), cleanup())
	}
	go ns.Start()
	e := &EmbeddedNATS{Server: ns, dir: dir, temp: temp}
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, errors.Join(fmt.Errorf("nats: not ready on %s:%d (is the port taken?)", host, port), e.Shutdown())
	}
	return e, nil
}

// Shutdown stops the server and removes its store, unless it is a data
// directory (StartNATSIn). Its error is the store's removal's: a
// temporary directory left behind.
func (e *EmbeddedNATS) Shutdown() error {
	e.Server.Shutdown()
	e.WaitForShutdown()
	if e.temp {
		if err := os.RemoveAll(e.dir); err != nil {
			return fmt.Errorf("nats: remove the temporary store: %w", err)
		}
	}
	return nil
}

// ServeMetrics serves Prometheus metrics on addr's /metrics and returns the
// address it listens on and a function that stops it. An empty addr
// serves nothing.
func ServeMetrics(addr string, log *slog.Logger) (string, func(), error) {
	if addr == "" {
		return "", func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "err", err)
		}
	}()
	return lis.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// OpenStore opens the Redis job store at url, or, when url is empty and
// memory is set, the in-memory one. It returns the store and a name for
// it that is safe to print (a password in url hidden).
//
// A logged store (log=NAME in url) whose log another process owns waits
// for it, as a standby, until ctx ends.
func OpenStore(ctx context.Context, url string, memory bool) (jobstore.Store, string, error) {
	if url == "" {
		if !memory {
			return nil, "", errors.New("REDIS_URL (or --redis) is required: separate processes share jobs through Redis")
		}
		return jobstore.NewMemory(), "memory", nil
	}
	s, err := jobstore.OpenContext(ctx, url)
	if err != nil {
		return nil, "", err
	}
	return s, jobstore.RedactURL(url), nil
}

// WaitStopped waits until ctx ends, or until s refuses changes for good,
// and returns why then (nil when ctx ended). Only the logged store
// (jobstore.Logged) does that, fenced by a newer owner or out of its
// lease; its process must stop (a process manager restarts it as a
// standby): its memory may hold changes no log has.
func WaitStopped(ctx context.Context, s jobstore.Store) error {
	l, ok := s.(interface {
		Lost() <-chan struct{}
		Err() error
	})
	if !ok {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-l.Lost():
		return fmt.Errorf("job store: %w", l.Err())
	}
}

// DefaultRetention is how long an ended job is kept in the store by
// default (`--retention`).
const DefaultRetention = 24 * time.Hour

// SetRetention makes s keep ended jobs for d, then drop them (0: keep them
// for ever); see jobstore.Store.Sweep, which the reconciler runs.
func SetRetention(s jobstore.Store, d time.Duration) {
	if r, ok := s.(interface{ SetRetention(time.Duration) }); ok {
		r.SetRetention(d)
	}
}

// DefaultMaxEndedJobs and DefaultMaxEndedBytes bound what the in-memory
// job store (`ward dev` without Redis) keeps of the jobs that ended
// (`--max-ended-jobs`, `--max-ended-bytes`), beside the retention: an
// ended job takes some kilobytes of the process's memory (its record,
// events, input and result), and a day's retention of a benchmark's jobs
// would take gigabytes. 20,000 small jobs are about 70 MiB by the store's
// estimate; the byte bound holds when their inputs or results are large.
const (
	DefaultMaxEndedJobs  = 20000
	DefaultMaxEndedBytes = 128 << 20
)

// SetBound makes s, when it is the in-memory store, keep at most what b
// says of the jobs that ended, dropping the oldest-ended first
// (jobstore.Bound). It reports false for a store that keeps them outside
// the process (Redis, for the retention), which it leaves as it is.
func SetBound(s jobstore.Store, b jobstore.Bound) bool {
	m, ok := s.(interface{ SetBound(jobstore.Bound) })
	if ok {
		m.SetBound(b)
	}
	return ok
}
