package bus

import "testing"

// TestResultAckSeq: a scheduler answers a result by its number in a batch
// only when its reply subject is the numbered one of the host the
// result's subject names; any other (a request's inbox, another host's
// numbered subject, a number that is not one) is answered as it is.
func TestResultAckSeq(t *testing.T) {
	if got := ResultAckSubject("h1", 42); got != "_INBOX.h.h1.ack.42" {
		t.Errorf("ResultAckSubject = %q", got)
	}
	for _, tc := range []struct {
		worker, reply string
		seq           uint64
		ok            bool
	}{
		{"h1", ResultAckSubject("h1", 1764400000000000001), 1764400000000000001, true},
		{"h1", "_INBOX.h.h1.ack.7", 7, true},
		{"h1", ResultAckSubject("h2", 7), 0, false},    // another host's
		{"h1", ResultAckSubject("h11", 7), 0, false},   // a host whose name begins like it
		{"h11", ResultAckSubject("h1", 7), 0, false},   // and the other way round
		{"h1", "_INBOX.h.h1.Zq8nDkE3Xy1.42", 0, false}, // a request's inbox
		{"h1", "_INBOX.h.h1.ack.x", 0, false},          // not a number
		{"h1", "_INBOX.h.h1.ack.7.8", 0, false},        // one token more
		{"h1", "_INBOX.h.h1.acks", 0, false},           // the batches' subject
		{"h1", "_INBOX.t.h1.ack.7", 0, false},          // a tenant's inbox
		{"h1", "_INBOX.h.ack.7", 0, false},             // no host's inbox at all
		{"h1", "sys.job.result.h1", 0, false},
	} {
		seq, ok := ResultAckSeq(tc.worker, tc.reply)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("ResultAckSeq(%q, %q) = %d, %v; want %d, %v", tc.worker, tc.reply, seq, ok, tc.seq, tc.ok)
		}
	}
}

// TestReportReplyAllowed: a scheduler answers a host's report in that
// host's inbox, or in one nobody owns (an --insecure host's), and never
// in another host's or a tenant's: a host could otherwise have another
// host told that its result was taken.
func TestReportReplyAllowed(t *testing.T) {
	for _, tc := range []struct {
		worker, reply string
		ok            bool
	}{
		{"h1", ResultAckSubject("h1", 7), true},
		{"h1", "_INBOX.h.h1.Zq8nDkE3Xy1.42", true},
		{"h1", "_INBOX.Zq8nDkE3Xy1.42", true}, // an insecure host's
		{"h1", ResultAckSubject("h2", 7), false},
		{"h1", ResultAckSubject("h11", 7), false},
		{"h1", "_INBOX.h.h1", false},
		{"h1", "_INBOX.t.acme.Zq8nDkE3Xy1.1", false},
		{"h1", ResultAcksSubject("h2"), false},
	} {
		if got := ReportReplyAllowed(tc.worker, tc.reply); got != tc.ok {
			t.Errorf("ReportReplyAllowed(%q, %q) = %v, want %v", tc.worker, tc.reply, got, tc.ok)
		}
	}
}
