package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
)

// TestSubmitRetries: a submission nobody could take (no scheduler
// answers for a moment, then one answers store_error) is sent again, the
// same request with the same job id, until a scheduler takes it; within
// Options.SubmitRetry only, and never with SubmitRetry below 0. A refusal
// for another reason is not sent again.
func TestSubmitRetries(t *testing.T) {
	sec := natstest.StartSecure(t)
	c, err := client.Dial(sec.URL, client.Options{Creds: sec.Creds(auth.Tenant, "acme")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sched, err := bus.Connect(sec.URL, "fake-scheduler", mustOptions(t, sec.Creds(auth.Scheduler, "s1"))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Close)

	// The scheduler comes up 300 ms after the submission, and its store
	// fails the first request it takes.
	var (
		mu   sync.Mutex
		seen []string
	)
	answers := []*wardv1.SubmitReply{{Reason: string(reason.StoreError), Message: "job store unavailable"}}
	up := make(chan struct{})
	go func() {
		defer close(up)
		time.Sleep(300 * time.Millisecond)
		_, err := sched.NATS().Subscribe(bus.TenantSubject(bus.SubjectSubmit, "acme"), func(m *nats.Msg) {
			req := &wardv1.JobRequest{}
			if err := proto.Unmarshal(m.Data, req); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen = append(seen, req.GetJobId())
			reply := &wardv1.SubmitReply{JobId: req.GetJobId(), Accepted: true}
			if len(answers) > 0 {
				reply, answers = answers[0], answers[1:]
			}
			mu.Unlock()
			if err := sched.Reply(m, reply); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Error(err)
		}
		if err := sched.Flush(); err != nil {
			t.Error(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := c.Submit(ctx, &wardv1.JobRequest{JobId: "j1", Topic: "job.echo"})
	<-up
	if err != nil || !reply.GetAccepted() {
		t.Fatalf("a submission while no scheduler answered, then one whose store failed: %v %v, want it accepted on a later try", reply, err)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0] != "j1" || seen[1] != "j1" {
		t.Errorf("the scheduler took %v, want j1 twice (store_error, then accepted)", seen)
	}
	answers = append(answers, &wardv1.SubmitReply{Reason: string(reason.RateLimited), Message: "slow down"})
	seen = nil
	mu.Unlock()

	// Another refusal is the answer: sent once.
	if _, err := c.Submit(ctx, &wardv1.JobRequest{JobId: "j2", Topic: "job.echo"}); !errors.Is(err, client.ErrRefused) {
		t.Errorf("a rate-limited submission: %v, want ErrRefused", err)
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Errorf("a rate-limited submission was sent %d times, want once", len(seen))
	}
	mu.Unlock()

	// A store that keeps failing: sent again within SubmitRetry, then its
	// answer is the refusal; never again with SubmitRetry below 0.
	var asked int
	if _, err := sched.NATS().Subscribe(bus.TenantSubject(bus.SubjectSubmit, "globex"), func(m *nats.Msg) {
		mu.Lock()
		asked++
		mu.Unlock()
		if err := sched.Reply(m, &wardv1.SubmitReply{Reason: string(reason.StoreError), Message: "job store unavailable"}); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := sched.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		retry time.Duration
		more  bool // asked more than once
	}{{300 * time.Millisecond, true}, {-1, false}} {
		c2, err := client.Dial(sec.URL, client.Options{Creds: sec.Creds(auth.Tenant, "globex"), SubmitRetry: tc.retry})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		asked = 0
		mu.Unlock()
		reply, err := c2.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo"})
		c2.Close()
		mu.Lock()
		n := asked
		mu.Unlock()
		if !errors.Is(err, client.ErrRefused) || reply.GetReason() != string(reason.StoreError) {
			t.Errorf("SubmitRetry %v, a store that keeps failing: %v %v, want store_error", tc.retry, reply, err)
		}
		if (n > 1) != tc.more || n == 0 {
			t.Errorf("SubmitRetry %v: the submission was sent %d times", tc.retry, n)
		}
	}
}

// mustOptions are the NATS options of the credential creds.
func mustOptions(t *testing.T, creds string) []nats.Option {
	t.Helper()
	o, err := auth.Options(creds)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
