package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
)

// TestPublish: Publish sends a message with no reply subject, and
// PublishRequest one with the reply subject given; a publish nobody
// subscribes to with a reply subject is answered there by the server,
// no responders (IsNoResponders).
func TestPublish(t *testing.T) {
	c, err := bus.Connect(natstest.Start(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan *nats.Msg, 4)
	sub, err := c.NATS().ChanSubscribe("t.events", got)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	answers := make(chan *nats.Msg, 4)
	asub, err := c.NATS().ChanSubscribe("t.answers", answers)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = asub.Unsubscribe() }()
	for _, reply := range []string{"", "t.answers"} {
		if err := c.PublishRequest("t.events", reply, &wardv1.ResultAcks{Seqs: []uint64{7}}); err != nil {
			t.Fatalf("reply %q: %v", reply, err)
		}
	}
	if err := c.Publish("t.events", &wardv1.ResultAcks{Seqs: []uint64{8}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		reply string
		seq   uint64
	}{{"", 7}, {"t.answers", 7}, {"", 8}} {
		select {
		case m := <-got:
			var r wardv1.ResultAcks
			if err := proto.Unmarshal(m.Data, &r); err != nil || m.Reply != want.reply || len(r.GetSeqs()) != 1 || r.GetSeqs()[0] != want.seq {
				t.Errorf("message %d: reply %q, %v (%v); want reply %q, seq %d", i, m.Reply, r.GetSeqs(), err, want.reply, want.seq)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not delivered", i)
		}
	}
	if err := c.PublishRequest("t.nobody", "t.answers", &wardv1.ResultAcks{}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-answers:
		if !bus.IsNoResponders(m) {
			t.Errorf("the server's answer to a publish nobody takes: %q %v", m.Data, m.Header)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a publish nobody takes")
	}
}
