package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/testing/natstest"
)

// open returns JetStream on a fresh server, with the stream when ensure.
func open(t *testing.T, ensure bool) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(natstest.StartJetStream(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if ensure {
		if err := Ensure(context.Background(), js); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

func record(t *testing.T, js jetstream.JetStream, es ...Entry) {
	t.Helper()
	for _, e := range es {
		if err := Record(context.Background(), js, e); err != nil {
			t.Fatalf("Record %+v: %v", e, err)
		}
	}
}

// targets lists the entries' targets, in order.
func targets(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Target)
	}
	return strings.Join(s, ",")
}

func TestAuditRecordAndList(t *testing.T) {
	js := open(t, true)
	ctx := context.Background()
	record(t, js,
		Entry{Actor: "admin", Action: PolicyPush, Target: "r1", Detail: map[string]string{"revision": "abc"}},
		Entry{Actor: "admin:alice", Action: ModuleDeploy, Target: "echo", Detail: map[string]string{"version": "1.0.0"}},
		Entry{Actor: "admin:bob", Action: TenantRevoke, Target: "acme"},
	)
	since := time.Now()
	record(t, js,
		Entry{Actor: "admin:alice", Action: ModuleRollback, Target: "echo"},
		Entry{Actor: "scheduler", Action: SchedulerMode, Target: "DRAINING"},
		Entry{Actor: "admin:alice", Action: ModuleDeploy, Target: "chat"},
	)

	all, err := List(ctx, js, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := targets(all), "chat,DRAINING,echo,acme,echo,r1"; got != want {
		t.Fatalf("List: %s, want %s (newest first)", got, want)
	}
	for i, e := range all {
		if e.Seq != uint64(len(all)-i) || e.At.IsZero() || e.At.Location() != time.UTC {
			t.Errorf("entry %d: seq %d, at %v", i, e.Seq, e.At)
		}
	}
	if e := all[len(all)-1]; e.Actor != "admin" || e.Action != PolicyPush || e.Detail["revision"] != "abc" {
		t.Errorf("oldest entry: %+v", e)
	}

	for _, tc := range []struct {
		name string
		f    Filter
		want string
	}{
		{"action", Filter{Action: ModuleDeploy}, "chat,echo"},
		{"actor", Filter{Actor: "admin:alice"}, "chat,echo,echo"},
		{"action and actor", Filter{Action: ModuleRollback, Actor: "admin:alice"}, "echo"},
		{"limit", Filter{Limit: 2}, "chat,DRAINING"},
		{"actor and limit", Filter{Actor: "admin:alice", Limit: 2}, "chat,echo"},
		{"since", Filter{Since: since}, "chat,DRAINING,echo"},
		{"since and action", Filter{Since: since, Action: ModuleDeploy}, "chat"},
		{"no match", Filter{Actor: "nobody"}, ""},
		{"no match for action", Filter{Action: HostAdd}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := List(ctx, js, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if targets(got) != tc.want {
				t.Errorf("List(%+v): %s, want %s", tc.f, targets(got), tc.want)
			}
		})
	}
}

// TestAuditListPages lists across several pages of the backward walk,
// with a filter that matches one record in three.
func TestAuditListPages(t *testing.T) {
	js := open(t, true)
	var want []string
	for i := range 40 {
		e := Entry{Actor: "admin", Action: []string{HostAdd, TenantAdd, DLQRetry}[i%3], Target: fmt.Sprint(i)}
		record(t, js, e)
		if e.Action == TenantAdd {
			want = append(want, e.Target)
		}
	}
	slices.Reverse(want)
	got, err := List(context.Background(), js, Filter{Action: TenantAdd, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if targets(got) != strings.Join(want[:10], ",") {
		t.Errorf("List: %s, want %s", targets(got), strings.Join(want[:10], ","))
	}
	got, err = List(context.Background(), js, Filter{Actor: "admin", Limit: 3})
	if err != nil || targets(got) != "39,38,37" {
		t.Errorf("List: %s, %v; want 39,38,37", targets(got), err)
	}
}

func TestAuditScanLimit(t *testing.T) {
	js := open(t, true)
	for i := range 12 {
		record(t, js, Entry{Actor: "admin", Action: HostAdd, Target: fmt.Sprint(i)})
	}
	defer func(n uint64) { maxScan = n }(maxScan)
	maxScan = 5
	got, err := List(context.Background(), js, Filter{Actor: "admin", Limit: 100})
	if !errors.Is(err, ErrScanLimit) || targets(got) != "11,10,9,8,7" {
		t.Errorf("List past the scan limit: %s, %v; want 11,10,9,8,7 and ErrScanLimit", targets(got), err)
	}
	got, err = List(context.Background(), js, Filter{Actor: "admin", Limit: 3})
	if err != nil || targets(got) != "11,10,9" {
		t.Errorf("List within the scan limit: %s, %v", targets(got), err)
	}
}

// TestAuditDeleteRefused: JetStream refuses to delete or purge a record,
// and to lift the stream's refusal.
func TestAuditDeleteRefused(t *testing.T) {
	js := open(t, true)
	ctx := context.Background()
	record(t, js, Entry{Actor: "admin:mallory", Action: PolicyPush, Target: "allow-everything"})
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	// The server's error codes: message delete not permitted, stream
	// purge not permitted, stream configuration update invalid.
	const deleteDenied, purgeDenied, badUpdate = 10057, 10110, 10052
	lifted := s.CachedInfo().Config
	lifted.DenyDelete, lifted.DenyPurge = false, false
	_, errLift := js.UpdateStream(ctx, lifted)
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"DeleteMsg", s.DeleteMsg(ctx, 1), deleteDenied},
		{"SecureDeleteMsg", s.SecureDeleteMsg(ctx, 1), deleteDenied},
		{"Purge", s.Purge(ctx), purgeDenied},
		{"Purge of the subject", s.Purge(ctx, jetstream.WithPurgeSubject(Subject(PolicyPush))), purgeDenied},
		{"UpdateStream lifting DenyDelete", errLift, badUpdate},
	} {
		// Not errors.As: DeleteMsg reports the API error as text.
		if tc.err == nil || !strings.Contains(tc.err.Error(), fmt.Sprintf("err_code=%d ", tc.code)) {
			t.Errorf("%s: %v, want the server's error %d", tc.name, tc.err, tc.code)
		}
	}
	// Ensure again (a redeploy) keeps the record and the refusal.
	if err := EnsureConfig(ctx, js, Config{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Config; !c.DenyDelete || !c.DenyPurge || c.MaxAge != time.Hour || c.Storage != jetstream.FileStorage || c.MaxMsgSize <= 0 {
		t.Errorf("stream config after EnsureConfig: %+v", c)
	}
	got, err := List(ctx, js, Filter{})
	if err != nil || targets(got) != "allow-everything" {
		t.Errorf("after the refused deletes: %s, %v", targets(got), err)
	}
}

func TestAuditInvalidRefused(t *testing.T) {
	js := open(t, true)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		e    Entry
		want error
	}{
		{"unknown action", Entry{Actor: "admin", Action: "module.nuke"}, ErrUnknownAction},
		{"subject wildcard", Entry{Actor: "admin", Action: "module.>"}, ErrUnknownAction},
		{"no action", Entry{Actor: "admin"}, ErrUnknownAction},
		{"no actor", Entry{Action: HostAdd}, ErrInvalid},
		{"too large", Entry{Actor: "admin", Action: HostAdd, Detail: map[string]string{"x": strings.Repeat("x", MaxEntrySize)}}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Record(ctx, js, tc.e); !errors.Is(err, tc.want) {
				t.Errorf("Record: %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := List(ctx, js, Filter{Action: "module.nuke"}); !errors.Is(err, ErrUnknownAction) {
		t.Errorf("List of an unknown action: %v", err)
	}
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 0 {
		t.Errorf("%d records stored", n)
	}
}

func TestAuditRecordDedup(t *testing.T) {
	js := open(t, true)
	e := Entry{At: time.Now(), Actor: "admin", Action: DLQRetry, Target: "job-1"}
	record(t, js, e, e) // a retry of the same entry
	e.Target = "job-2"
	record(t, js, e)
	got, err := List(context.Background(), js, Filter{})
	if err != nil || targets(got) != "job-2,job-1" {
		t.Errorf("List: %s, %v; want job-2,job-1", targets(got), err)
	}
}

func TestAuditNoLog(t *testing.T) {
	js := open(t, false)
	if _, err := List(context.Background(), js, Filter{}); !errors.Is(err, ErrNoLog) {
		t.Errorf("List without the stream: %v, want ErrNoLog", err)
	}
	if err := Record(context.Background(), js, Entry{Actor: "admin", Action: HostAdd}); err == nil {
		t.Error("Record without the stream succeeded")
	}
}
