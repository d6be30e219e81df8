package modreg

import (
	"context"
	"crypto/ed25519"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/internal/testing/natstest"
)

func open(t *testing.T) *Registry {
	t.Helper()
	nc, err := nats.Connect(natstest.StartJetStream(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r, err := Open(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeployRollbackRemove(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	v1 := []byte("\x00asm v1")
	v2 := []byte("\x00asm v2")
	route := Route{Topic: "job.hello", Pool: "hello"}

	a, err := r.Deploy(ctx, Version{Name: "hello", Version: "1.0.0", Route: route}, v1)
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != "1.0.0" || a.Digest != Digest(v1) || a.Route.Topic != route.Topic || a.Route.Pool != route.Pool || len(a.History) != 0 {
		t.Fatalf("after v1: %+v", a)
	}
	a, err = r.Deploy(ctx, Version{Name: "hello", Version: "2.0.0", Route: route}, v2)
	if err != nil {
		t.Fatal(err)
	}
	if a.Version != "2.0.0" || len(a.History) != 1 || a.History[0] != "1.0.0" {
		t.Fatalf("after v2: %+v", a)
	}
	// A version is immutable.
	if _, err := r.Deploy(ctx, Version{Name: "hello", Version: "1.0.0"}, v2); !errors.Is(err, ErrVersionExists) {
		t.Fatalf("redeploy 1.0.0 with other bytes: %v", err)
	}
	b, err := r.Blob(ctx, a.Digest)
	if err != nil || string(b) != string(v2) {
		t.Fatalf("blob %q %v", b, err)
	}

	a, err = r.Rollback(ctx, "hello")
	if err != nil || a.Version != "1.0.0" || a.Digest != Digest(v1) || len(a.History) != 0 {
		t.Fatalf("rollback: %+v %v", a, err)
	}
	if _, err := r.Rollback(ctx, "hello"); !errors.Is(err, ErrNoPrevious) {
		t.Fatalf("second rollback: %v", err)
	}

	a, err = r.Remove(ctx, "hello")
	if err != nil || !a.Retired || a.Version != "" {
		t.Fatalf("remove: %+v %v", a, err)
	}
	a, err = r.Rollback(ctx, "hello") // un-retire
	if err != nil || a.Retired || a.Version != "1.0.0" {
		t.Fatalf("rollback after remove: %+v %v", a, err)
	}
	if _, err := r.Remove(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("remove unknown: %v", err)
	}

	if err := r.ReportRefusal(ctx, Event{Name: "hello", Version: "2.0.0", Digest: Digest(v2), Host: "h1", Error: "does not compile"}); err != nil {
		t.Fatal(err)
	}
	mods, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 1 || mods[0].Name != "hello" || len(mods[0].Versions) != 2 || mods[0].Active.Version != "1.0.0" ||
		len(mods[0].Events) != 1 || mods[0].Events[0].Host != "h1" {
		t.Fatalf("list: %+v", mods)
	}
}

func TestBadNames(t *testing.T) {
	r := open(t)
	for _, v := range []Version{{Name: "Hello", Version: "1"}, {Name: "a.b", Version: "1"}, {Name: "ok", Version: "1 0"}, {Name: "ok", Version: ""}} {
		if _, err := r.Deploy(context.Background(), v, []byte("x")); !errors.Is(err, ErrBadName) {
			t.Errorf("%+v: %v", v, err)
		}
	}
}

func TestBlobIsCheckedAgainstItsDigest(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	a, err := r.Deploy(ctx, Version{Name: "m", Version: "1"}, []byte("good"))
	if err != nil {
		t.Fatal(err)
	}
	// Tamper: replace the object's bytes under the same name.
	if _, err := r.obs.PutBytes(ctx, objectName(a.Digest), []byte("evil")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Blob(ctx, a.Digest); !errors.Is(err, ErrDigest) {
		t.Fatalf("tampered blob: %v", err)
	}
	if _, err := r.Blob(ctx, Digest([]byte("never uploaded"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
}

// TestConcurrentDeploysKeepHistory: deploys racing each other all land in
// the history; none is lost to a read-then-write race.
func TestConcurrentDeploysKeepHistory(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Deploy(ctx, Version{Name: "m", Version: string(rune('a' + i))}, []byte{byte(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mods, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(mods[0].Active.History) + 1; got != 8 {
		t.Fatalf("history + active = %d versions, want 8: %+v", got, mods[0].Active)
	}
}

func TestSignVerify(t *testing.T) {
	privPEM, pubPEM, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPEM, _ := GenerateKey()
	other, _ := ParsePublicKey(otherPEM)

	d := Digest([]byte("module"))
	sig := Sign(priv, d)
	if err := Verify([]ed25519.PublicKey{other, pub}, d, sig); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		keys   []ed25519.PublicKey
		digest string
		sig    []byte
	}{
		"unsigned":      {[]ed25519.PublicKey{pub}, d, nil},
		"untrusted key": {[]ed25519.PublicKey{other}, d, sig},
		"other module":  {[]ed25519.PublicKey{pub}, Digest([]byte("tampered")), sig},
	} {
		if err := Verify(tc.keys, tc.digest, tc.sig); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParsePrivateKey(pubPEM); err == nil {
		t.Error("a public key parsed as private")
	}
}

// TestFollow follows the registry both ways: with a KV watch (the control
// plane's) and with direct gets (FollowDirect, a host's, which may create
// no consumer).
func TestFollow(t *testing.T) {
	for _, how := range []string{"watch", "direct"} {
		t.Run(how, func(t *testing.T) { testFollow(t, how == "direct") })
	}
}

func testFollow(t *testing.T, direct bool) {
	r := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := r.Deploy(ctx, Version{Name: "hello", Version: "1", Route: Route{Topic: "job.hello"}}, []byte("\x00asm 1")); err != nil {
		t.Fatal(err)
	}
	states := make(chan *State, 16)
	follow := r.Follow
	if direct {
		follow = r.FollowDirect
	}
	done, err := follow(ctx, func(s *State) { states <- s })
	if err != nil {
		t.Fatal(err)
	}
	next := func(ok func(*State) bool) *State {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case s := <-states:
				if ok(s) {
					return s
				}
			case <-deadline:
				t.Fatal("no such state")
			}
		}
	}
	s := next(func(*State) bool { return true }) // the state at start
	if a := s.Actives["hello"]; a == nil || a.Version != "1" || a.Route.Topic != "job.hello" {
		t.Fatalf("initial state: %+v", s.Actives)
	}
	a2, err := r.Deploy(ctx, Version{Name: "hello", Version: "2", Signature: []byte("sig")}, []byte("\x00asm 2"))
	if err != nil {
		t.Fatal(err)
	}
	s = next(func(s *State) bool { return s.Actives["hello"].Version == "2" })
	if !s.Actives["hello"].Signed {
		t.Errorf("v2 carries a signature, Active.Signed = false")
	}
	if err := r.ReportRefusal(ctx, Event{Name: "hello", Version: "2", Digest: a2.Digest, Host: "h1", Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	s = next(func(s *State) bool { return s.Refused["hello"]["h1"].Digest != "" })
	if e := s.Refused["hello"]["h1"]; e.Digest != a2.Digest || e.Version != "2" || e.Error != "bad" {
		t.Errorf("refused = %v", s.Refused)
	}
	// A deleted key leaves the state.
	if err := r.RemoveVersion(ctx, "hello", "1"); err != nil {
		t.Fatal(err)
	}
	next(func(s *State) bool { _, ok := s.Versions["hello"]["1"]; return !ok && s.Versions["hello"]["2"] != nil })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not stop")
	}
}
