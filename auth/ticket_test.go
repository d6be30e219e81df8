package auth_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/auth"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func ticket(host, job string, attempt int32) *wardv1.DispatchTicket {
	return &wardv1.DispatchTicket{HostId: host, Module: "echo", ModuleDigest: "sha256:ab", DecisionId: "d1", PolicyRevision: "r1",
		Job: &wardv1.JobRequest{JobId: job, Attempt: attempt, TenantId: "acme", Topic: "job.echo",
			Constraints: &wardv1.Constraints{Grants: &wardv1.Grants{HttpHosts: []string{"ollama"}, MemoryLimitBytes: 64 << 20}}}}
}

func refusedWith(t *testing.T, what string, err error, code reason.Code) {
	t.Helper()
	var te *auth.TicketError
	if !errors.As(err, &te) || te.Code != code {
		t.Errorf("%s: got %v, want %s", what, err, code)
	}
}

func TestTicketsOpenOnlyForTheirHostOnce(t *testing.T) {
	now := time.Now()
	s := auth.NewSigner(secret, time.Minute)
	h1 := auth.NewVerifier("h1", auth.HostKey(secret, "h1"))

	d, err := s.Sign(ticket("h1", "j1", 1), now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h1.Open(d, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetJob().GetJobId() != "j1" || got.GetJob().GetConstraints().GetGrants().GetMemoryLimitBytes() != 64<<20 {
		t.Fatalf("opened %v", got)
	}
	_, err = h1.Open(d, now)
	refusedWith(t, "replayed", err, reason.TicketReplayed)

	// The next attempt of the same job is a new ticket.
	d2, _ := s.Sign(ticket("h1", "j1", 2), now)
	if _, err := h1.Open(d2, now); err != nil {
		t.Errorf("attempt 2: %v", err)
	}

	// Altered after signing: more memory than granted.
	d3, _ := s.Sign(ticket("h1", "j3", 1), now)
	var tk wardv1.DispatchTicket
	_ = proto.Unmarshal(d3.Ticket, &tk)
	tk.Job.Constraints.Grants.MemoryLimitBytes = 4 << 30
	d3.Ticket, _ = proto.Marshal(&tk)
	_, err = h1.Open(d3, now)
	refusedWith(t, "altered", err, reason.TicketForged)

	// Signed for h2, sent to h1: h1's key does not verify it.
	d4, _ := s.Sign(ticket("h2", "j4", 1), now)
	_, err = h1.Open(d4, now)
	refusedWith(t, "other host's", err, reason.TicketForged)

	// Minted by a host with its own key for another host.
	h2key := auth.HostKey(secret, "h2")
	forger := auth.NewSigner(h2key, time.Minute) // a compromised h2 has only its key
	d5, _ := forger.Sign(ticket("h1", "j5", 1), now)
	_, err = h1.Open(d5, now)
	refusedWith(t, "minted by another host", err, reason.TicketForged)

	// Unsigned.
	d6, _ := auth.Unsigned(ticket("h1", "j6", 1), now)
	_, err = h1.Open(d6, now)
	refusedWith(t, "unsigned", err, reason.TicketUnsigned)

	// Expired.
	d7, _ := s.Sign(ticket("h1", "j7", 1), now)
	_, err = h1.Open(d7, now.Add(2*time.Minute))
	refusedWith(t, "expired", err, reason.TicketExpired)

	// A ticket for h2, opened by h2's verifier with the right key, is
	// still refused by h1 for its address, even with an insecure h1.
	insecure := auth.NewVerifier("h1", nil)
	d8, _ := auth.Unsigned(ticket("h2", "j8", 1), now)
	_, err = insecure.Open(d8, now)
	refusedWith(t, "misaddressed", err, reason.TicketMisaddressed)
	d9, _ := auth.Unsigned(ticket("h1", "j9", 1), now)
	if _, err := insecure.Open(d9, now); err != nil {
		t.Errorf("insecure host refused an unsigned ticket: %v", err)
	}
}

// BenchmarkTicket is the hot-path cost of signed dispatch: the scheduler
// signs, the host verifies (ns/op is both, for one job).
func BenchmarkTicket(b *testing.B) {
	s := auth.NewSigner(secret, time.Minute)
	v := auth.NewVerifier("h1", auth.HostKey(secret, "h1"))
	tk := ticket("h1", "01JBZ7Q8V3W9X0Y1Z2A3B4C5D6", 1)
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tk.Job.Attempt = int32(i + 1)
		d, err := s.Sign(tk, now)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Open(d, now); err != nil {
			b.Fatal(err)
		}
	}
}
