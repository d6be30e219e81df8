package auth_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
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

// TestTicketsOpenOnlyForTheirBoot: a ticket carries the boot of the host
// it was signed for (the nonce the host announced), and the Verifier of
// another boot of that host refuses it, as does one whose ticket names no
// boot: a host restarted within a ticket's life does not run it again,
// although the attempts it took before the restart are forgotten.
func TestTicketsOpenOnlyForTheirBoot(t *testing.T) {
	now := time.Now()
	s := auth.NewSigner(secret, time.Minute)
	key := auth.HostKey(secret, "h1")
	bootA, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	bootB, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	if len(bootA) != auth.BootNonceSize || bytes.Equal(bootA, bootB) {
		t.Fatalf("boot nonces %x and %x", bootA, bootB)
	}
	forBoot := func(job string, boot []byte) *wardv1.Dispatch {
		tk := ticket("h1", job, 1)
		tk.BootNonce = boot
		d, err := s.Sign(tk, now)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Signed for boot A: the host restarted, and boot B refuses it.
	dA := forBoot("j1", bootA)
	afterRestart := auth.NewBootVerifier("h1", key, bootB)
	_, err = afterRestart.Open(dA, now)
	refusedWith(t, "signed for the earlier boot", err, reason.TicketStaleBoot)
	var te *auth.TicketError
	if errors.As(err, &te) && (te.JobID != "j1" || te.Attempt != 1) {
		t.Errorf("the refusal names job %q attempt %d, want j1 attempt 1", te.JobID, te.Attempt)
	}
	// Boot A itself accepts it, once.
	beforeRestart := auth.NewBootVerifier("h1", key, bootA)
	if _, err := beforeRestart.Open(dA, now); err != nil {
		t.Errorf("boot A refused its own ticket: %v", err)
	}
	_, err = beforeRestart.Open(dA, now)
	refusedWith(t, "replayed within boot A", err, reason.TicketReplayed)

	// The same attempt signed for boot B runs there: the refusal of the
	// stale ticket did not take the attempt.
	if _, err := afterRestart.Open(forBoot("j1", bootB), now); err != nil {
		t.Errorf("boot B refused a ticket for boot B: %v", err)
	}

	// A ticket that names no boot (a scheduler that puts none in).
	_, err = afterRestart.Open(forBoot("j2", nil), now)
	refusedWith(t, "no boot", err, reason.TicketStaleBoot)

	// The boot is under the signature: changed after signing, the ticket
	// is altered.
	d := forBoot("j3", bootA)
	var tk wardv1.DispatchTicket
	if err := proto.Unmarshal(d.Ticket, &tk); err != nil {
		t.Fatal(err)
	}
	tk.BootNonce = bootB
	if d.Ticket, err = proto.Marshal(&tk); err != nil {
		t.Fatal(err)
	}
	_, err = afterRestart.Open(d, now)
	refusedWith(t, "boot rewritten", err, reason.TicketForged)

	// An expired ticket of another boot is refused as expired.
	_, err = afterRestart.Open(forBoot("j4", bootA), now.Add(2*time.Minute))
	refusedWith(t, "expired, earlier boot", err, reason.TicketExpired)

	// A Verifier with no boot (a host that announces none) checks none.
	if _, err := auth.NewVerifier("h1", key).Open(forBoot("j5", bootA), now); err != nil {
		t.Errorf("a Verifier without a boot refused a ticket with one: %v", err)
	}
}

// BenchmarkTicket is the hot-path cost of signed dispatch: the scheduler
// signs, the host verifies (ns/op is both, for one job).
func BenchmarkTicket(b *testing.B) {
	s := auth.NewSigner(secret, time.Minute)
	boot, err := auth.NewBootNonce()
	if err != nil {
		b.Fatal(err)
	}
	v := auth.NewBootVerifier("h1", auth.HostKey(secret, "h1"), boot)
	tk := ticket("h1", "01JBZ7Q8V3W9X0Y1Z2A3B4C5D6", 1)
	tk.BootNonce = boot
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
