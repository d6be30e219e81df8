package jobstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestRedisLogField: a job that ended with a log holds it in its hash
// (fields log and log_truncated); one that ended with none holds neither.
func TestRedisLogField(t *testing.T) {
	url := redistest.Start(t)
	s, err := jobstore.OpenRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	// quiet runs the hot path, which ends it with no log; loud ends with one.
	if err := hotPath(ctx, s, "quiet"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, &jobstore.Job{ID: "loud", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "loud", jobstore.Transition{To: jobstore.Failed, Reason: "exit", Log: []byte("boom\n"), LogTruncated: true, Brief: true}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"quiet": "", "loud": "boom\n"} {
		h, err := c.HGetAll(ctx, "job:"+id).Result()
		if err != nil {
			t.Fatal(err)
		}
		log, has := h["log"]
		_, trunc := h["log_truncated"]
		if has != (want != "") || log != want || trunc != (want != "") {
			t.Errorf("job %s: hash field log %q (present %v), log_truncated present %v; want %q", id, log, has, trunc, want)
		}
	}
}
