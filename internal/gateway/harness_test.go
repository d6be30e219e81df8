package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/gateway"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

func TestMain(m *testing.M) {
	// Every part, the gateway's event streams included, ends its
	// goroutines (nats.go's own JetStream publisher watcher aside: see
	// natstest).
	goleak.VerifyTestMain(m, natstest.IgnoreJetStreamPublisher)
}

// system is a whole Ward (the parts of ward dev, auth on, a memory job
// store, the echo module) with a gateway in front, and API keys for:
// tenant acme (submit and read), acme read-only, tenant other, an admin.
type system struct {
	URL    string
	GW     *gateway.Server
	Node   *assembly.Node
	Client *client.Client // an admin's
	Keys   *apikey.Store
	Reg    *modreg.Registry
	JS     jetstream.JetStream
	Metric *prometheus.Registry

	Admin, Acme, AcmeRO, Other string
	AcmeID                     string
}

type sysOptions struct {
	rate    float64
	burst   int
	maxBody int64
	// authFailureRate and authFailureBurst throttle failed
	// authentication (gateway.Config's); 0: the defaults.
	authFailureRate  float64
	authFailureBurst int
	// node, when set, changes the system's options (modules, probes).
	node func(*assembly.Options)
}

func start(t testing.TB, so sysOptions) *system {
	t.Helper()
	sec := natstest.StartSecure(t)
	creds, err := assembly.IssueDevCreds(sec.Auth, t.TempDir(), "gw-host")
	if err != nil {
		t.Fatal(err)
	}
	// One machine runs everything, the tests of other packages too: its
	// CPU load is theirs, so placement ignores it, as in ward dev.
	settings := config.DefaultScheduler()
	settings.Placement.CPUThreshold = 100
	o := assembly.Options{
		NATSURL: sec.URL, Store: jobstore.NewMemory(), Creds: &creds,
		ModuleRegistry: true,
		Scheduler:      assembly.SchedulerConfig{Config: &config.Bundle{Scheduler: settings}},
		Host: assembly.HostConfig{ID: "gw-host",
			Modules:           map[string][]byte{"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")},
			CacheDir:          wasmtest.CacheDir(t),
			HeartbeatInterval: 100 * time.Millisecond,
			Capabilities:      []string{"gpu"},
		},
	}
	if so.node != nil {
		so.node(&o)
	}
	n, err := assembly.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	c, err := client.Dial(sec.URL, client.Options{Creds: creds.Admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	js, err := jetstream.New(c.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := audit.Ensure(ctx, js); err != nil { // ward dev makes the audit log
		t.Fatal(err)
	}
	keys, err := apikey.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	reg, err := modreg.Open(ctx, c.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	s := &system{Node: n, Client: c, Keys: keys, Reg: reg, JS: js, Metric: prometheus.NewRegistry()}
	add := func(tenant string, scopes ...apikey.Scope) (string, string) {
		k, rec, err := keys.Add(ctx, apikey.Spec{Tenant: tenant, Name: tenant + "-test", Scopes: scopes, CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return k, rec.ID
	}
	s.Acme, s.AcmeID = add("acme", apikey.ScopeRead, apikey.ScopeSubmit)
	s.AcmeRO, _ = add("acme", apikey.ScopeRead)
	s.Other, _ = add("other", apikey.ScopeRead, apikey.ScopeSubmit)
	s.Admin, _ = add("default", apikey.ScopeAdmin)
	gw, err := gateway.New(gateway.Config{
		Client: c, Auth: gateway.APIKeys(keys), Keys: keys,
		Admin: gateway.AdminParts{Registry: reg, JS: js},
		Rate:  so.rate, Burst: so.burst, MaxBody: so.maxBody,
		AuthFailureRate: so.authFailureRate, AuthFailureBurst: so.authFailureBurst,
		Metrics: s.Metric, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	s.GW = gw
	hs := httptest.NewServer(gw)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	// The host is live before a test submits.
	deadline := time.Now().Add(30 * time.Second)
	for {
		hbs, _ := c.Workers(ctx, 200*time.Millisecond)
		if len(hbs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no host came up")
		}
	}
	return s
}

// call makes a request with key (none when empty) and returns the status
// and the body.
func (s *system) call(t testing.TB, key, method, path string, body any, hdr ...string) (int, []byte) {
	t.Helper()
	resp := s.do(t, key, method, path, body, hdr...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (s *system) do(t testing.TB, key, method, path string, body any, hdr ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// object decodes a JSON object.
func object(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

// errCode is an error body's code.
func errCode(t testing.TB, b []byte) string {
	t.Helper()
	e, _ := object(t, b)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("not an error body: %s", b)
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("an error without a message: %s", b)
	}
	code, _ := e["code"].(string)
	return code
}

// waitJob polls the job through the API until it ends, and returns it.
func (s *system) waitJob(t testing.TB, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, b := s.call(t, key, "GET", "/v1/jobs/"+id, nil)
		if st == http.StatusOK {
			j := object(t, b)
			switch j["state"] {
			case "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "DENIED":
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not end: %d %s", id, st, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// adminClientStub is an admin's client with no connection: enough to
// build a gateway whose routes are listed, not served.
func adminClientStub(t testing.TB) *client.Client {
	return client.New(nil, client.Options{Admin: true})
}

// apikeySpec is a tenant's submit-and-read key.
func apikeySpec(tenant string) apikey.Spec {
	return apikey.Spec{Tenant: tenant, Scopes: []apikey.Scope{apikey.ScopeRead, apikey.ScopeSubmit}, CreatedBy: "test"}
}
