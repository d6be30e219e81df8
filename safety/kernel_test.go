package safety

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/policies"
)

func newDefaultKernel(tb testing.TB) *Kernel {
	tb.Helper()
	k, err := New(policies.FS)
	if err != nil {
		tb.Fatalf("New(policies.FS): %v", err)
	}
	return k
}

func echoJob() *safetyv1.CheckRequest {
	return &safetyv1.CheckRequest{
		JobId:       "01J0000000000000000000000",
		Topic:       "job.echo",
		TenantId:    "acme",
		Labels:      map[string]string{"team": "core"},
		Requires:    []string{"wasm"},
		Priority:    5,
		PayloadSize: 1024,
		Module: &safetyv1.ModuleRequest{
			Name:      "echo",
			Digest:    "sha256:00",
			Requested: &wardv1.Grants{HttpHosts: []string{"example.com"}},
		},
		Pool: "default",
	}
}

func TestKernelDefaultBundle(t *testing.T) {
	k := newDefaultKernel(t)
	tests := []struct {
		name    string
		edit    func(*safetyv1.CheckRequest)
		want    safetyv1.Decision
		reasons []string
	}{
		{
			name: "job.echo for acme allowed",
			edit: func(*safetyv1.CheckRequest) {},
			want: safetyv1.Decision_DECISION_ALLOW,
		},
		{
			name: "empty request denied",
			edit: func(r *safetyv1.CheckRequest) { proto.Reset(r) },
			want: safetyv1.Decision_DECISION_DENY,
			reasons: []string{
				"tenant_id is required",
				`topic "" is outside job.*`,
			},
		},
		{
			name:    "sys.destroy forbidden",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "sys.destroy" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{"topic sys.destroy is forbidden"},
		},
		{
			name:    "topic outside job.*",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "sys.job.submit" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{`topic "sys.job.submit" is outside job.*`},
		},
		{
			name:    "bare job. prefix",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "job." },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{`topic "job." is outside job.*`},
		},
		{
			name:    "empty tenant",
			edit:    func(r *safetyv1.CheckRequest) { r.TenantId = "" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{"tenant_id is required"},
		},
		{
			name: "every deny reported, sorted",
			edit: func(r *safetyv1.CheckRequest) {
				r.Topic = "sys.destroy"
				r.TenantId = ""
			},
			want: safetyv1.Decision_DECISION_DENY,
			reasons: []string{
				"tenant_id is required",
				"topic sys.destroy is forbidden",
			},
		},
		{
			name: "module absent",
			edit: func(r *safetyv1.CheckRequest) { r.Module = nil },
			want: safetyv1.Decision_DECISION_ALLOW,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := echoJob()
			tt.edit(req)
			resp, err := k.Check(context.Background(), req)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if resp.GetDecision() != tt.want {
				t.Errorf("decision = %v, want %v (reasons %q)", resp.GetDecision(), tt.want, resp.GetReasons())
			}
			if !slices.Equal(resp.GetReasons(), tt.reasons) {
				t.Errorf("reasons = %q, want %q", resp.GetReasons(), tt.reasons)
			}
			if resp.GetConstraints() != nil {
				t.Errorf("constraints = %v, want none", resp.GetConstraints())
			}
			if got := resp.GetPolicyRevision(); got != k.Revision() || len(got) != 12 {
				t.Errorf("policy_revision = %q, want %q (12 hex digits)", got, k.Revision())
			}
			if _, err := uuid.Parse(resp.GetDecisionId()); err != nil {
				t.Errorf("decision_id %q: %v", resp.GetDecisionId(), err)
			}
		})
	}
}

func TestKernelDecisionIDsUnique(t *testing.T) {
	k := newDefaultKernel(t)
	seen := map[string]bool{}
	for range 100 {
		resp, err := k.Check(context.Background(), echoJob())
		if err != nil {
			t.Fatal(err)
		}
		if seen[resp.GetDecisionId()] {
			t.Fatalf("decision_id %s repeated", resp.GetDecisionId())
		}
		seen[resp.GetDecisionId()] = true
	}
}

// bundle returns the default policy with extra files.
func bundle(t *testing.T, extra map[string]string) fstest.MapFS {
	t.Helper()
	src, err := policies.FS.ReadFile("ward.rego")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"ward.rego": {Data: src}}
	for name, data := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

func TestKernelConstraints(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  *wardv1.Constraints
	}{
		{
			name: "tenant constraints from data.yaml",
			files: map[string]string{"data.yaml": `
tenants:
  acme:
    constraints:
      max_concurrent_jobs: 4
      max_retries: 3
      deadline_ms: 60000
      grants:
        http_hosts: [api.acme.io]
        read_only_dirs: [/data]
        env_keys: [TZ]
        memory_limit_bytes: 67108864
        time_limit_ms: 5000
`},
			want: &wardv1.Constraints{
				MaxConcurrentJobs: 4,
				MaxRetries:        3,
				DeadlineMs:        60000,
				Grants: &wardv1.Grants{
					HttpHosts:        []string{"api.acme.io"},
					ReadOnlyDirs:     []string{"/data"},
					EnvKeys:          []string{"TZ"},
					MemoryLimitBytes: 64 << 20,
					TimeLimitMs:      5000,
				},
			},
		},
		{
			name:  "zero value is still a constraint",
			files: map[string]string{"data.json": `{"tenants": {"acme": {"constraints": {"max_retries": 0}}}}`},
			want:  &wardv1.Constraints{},
		},
		{
			name:  "other tenant's constraints not applied",
			files: map[string]string{"data.json": `{"tenants": {"globex": {"constraints": {"max_retries": 1}}}}`},
		},
		{
			name: "rule extends constraints",
			files: map[string]string{"extra.rego": `package ward.safety

constraints.deadline_ms := 1000 if input.priority > 3
`},
			want: &wardv1.Constraints{DeadlineMs: 1000},
		},
		{
			name: "policy without constraints rule",
			files: map[string]string{"ward.rego": `package ward.safety

deny contains "no" if input.topic == "job.no"
`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := New(bundle(t, tt.files))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			resp, err := k.Check(context.Background(), echoJob())
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			want := safetyv1.Decision_DECISION_ALLOW
			if tt.want != nil {
				want = safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS
			}
			if resp.GetDecision() != want {
				t.Errorf("decision = %v, want %v", resp.GetDecision(), want)
			}
			if !proto.Equal(resp.GetConstraints(), tt.want) {
				t.Errorf("constraints = %v, want %v", resp.GetConstraints(), tt.want)
			}
		})
	}
}

func TestKernelMalformedConstraints(t *testing.T) {
	for _, c := range []string{
		`{"max_retry": 1}`,
		`{"max_retries": "3"}`,
		`{"max_retries": 1.5}`,
		`{"max_retries": -1}`,
		`{"max_concurrent_jobs": 4294967296}`,
		`{"grants": {"http_hosts": "a"}}`,
		`{"grants": {"http_hosts": [1]}}`,
		`{"grants": {"bogus": []}}`,
		`{"grants": []}`,
	} {
		t.Run(c, func(t *testing.T) {
			k, err := New(bundle(t, map[string]string{
				"data.json": `{"tenants": {"acme": {"constraints": ` + c + `}}}`,
			}))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			resp, err := k.Check(context.Background(), echoJob())
			if !errors.Is(err, errConstraints) {
				t.Fatalf("Check = %v, %v; want an error wrapping %v", resp, err, errConstraints)
			}
		})
	}
}

func TestKernelRevision(t *testing.T) {
	a, err := New(bundle(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(bundle(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Revision() != b.Revision() {
		t.Errorf("same bundle, revisions %s and %s", a.Revision(), b.Revision())
	}
	c, err := New(bundle(t, map[string]string{"data.json": `{}`}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision() == a.Revision() {
		t.Errorf("data file added, revision still %s", a.Revision())
	}
	// Unit tests do not change what the kernel evaluates.
	d, err := New(bundle(t, map[string]string{"ward_test.rego": "package ward.safety_test\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if d.Revision() != a.Revision() {
		t.Errorf("test file added, revision %s, want %s", d.Revision(), a.Revision())
	}
}

func TestKernelLoadKeepsOldBundleOnError(t *testing.T) {
	k := newDefaultKernel(t)
	rev := k.Revision()
	broken := map[string]fstest.MapFS{
		"syntax error":       {"ward.rego": {Data: []byte("package ward.safety\n\ndeny contains msg if {\n")}},
		"rego v0 syntax":     {"ward.rego": {Data: []byte("package ward.safety\n\ndeny[msg] { msg := \"x\" }\n")}},
		"compile error":      {"ward.rego": {Data: []byte("package ward.safety\n\ndeny contains msg if msg := undefined_function(1)\n")}},
		"no ward.safety":     {"other.rego": {Data: []byte("package other\n\nx := 1\n")}},
		"empty bundle":       {},
		"reserved package":   bundle(t, map[string]string{"k.rego": "package ward.kernel\n\nx := 1\n"}),
		"bad data":           bundle(t, map[string]string{"data.json": "{"}),
		"two data files":     bundle(t, map[string]string{"data.json": "{}", "data.yaml": "a: 1\n"}),
		"data not an object": bundle(t, map[string]string{"data.json": "[1]"}),
	}
	for name, fsys := range broken {
		t.Run(name, func(t *testing.T) {
			err := k.Load(fsys)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), "safety: ") {
				t.Errorf("error %q lacks the safety: prefix", err)
			}
			if got := k.Revision(); got != rev {
				t.Errorf("revision = %s, want %s kept", got, rev)
			}
			resp, err := k.Check(context.Background(), echoJob())
			if err != nil || resp.GetDecision() != safetyv1.Decision_DECISION_ALLOW || resp.GetPolicyRevision() != rev {
				t.Errorf("Check after failed Load = %v, %v; want ALLOW under %s", resp, err, rev)
			}
		})
	}
}

func TestKernelZeroValue(t *testing.T) {
	var k Kernel
	if _, err := k.Check(context.Background(), echoJob()); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("Check on a zero Kernel = %v, want ErrNoPolicy", err)
	}
	if k.Revision() != "" {
		t.Errorf("Revision of a zero Kernel = %q, want empty", k.Revision())
	}
	if err := k.Load(policies.FS); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Check(context.Background(), echoJob()); err != nil {
		t.Errorf("Check after Load: %v", err)
	}
}

func TestKernelLoadSwaps(t *testing.T) {
	k := newDefaultKernel(t)
	old := k.Revision()
	err := k.Load(fstest.MapFS{"p.rego": {Data: []byte("package ward.safety\n\ndeny contains \"closed\" if true\n")}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := k.Check(context.Background(), echoJob())
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != safetyv1.Decision_DECISION_DENY || resp.GetPolicyRevision() == old {
		t.Errorf("after Load: %v under %s, want DENY under a new revision", resp.GetDecision(), resp.GetPolicyRevision())
	}
}

// TestKernelLoadWhileChecking hammers Check from several goroutines while
// the bundle is swapped; run with -race.
func TestKernelLoadWhileChecking(t *testing.T) {
	k := newDefaultKernel(t)
	deny := fstest.MapFS{"p.rego": {Data: []byte("package ward.safety\n\ndeny contains \"closed\" if true\n")}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				resp, err := k.Check(context.Background(), echoJob())
				if err != nil {
					t.Error(err)
					return
				}
				if resp.GetDecision() == safetyv1.Decision_DECISION_UNSPECIFIED {
					t.Error("no decision")
				}
			}
		})
	}
	for i := range 10 {
		var fsys fs.FS = policies.FS
		if i%2 == 0 {
			fsys = deny
		}
		if err := k.Load(fsys); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestKernelDirectory(t *testing.T) {
	k, err := NewFromDir("../policies")
	if err != nil {
		t.Fatal(err)
	}
	if k.Revision() != newDefaultKernel(t).Revision() {
		t.Errorf("directory and embedded bundle revisions differ: %s, %s", k.Revision(), newDefaultKernel(t).Revision())
	}
	if _, err := NewFromDir(t.TempDir() + "/missing"); err == nil {
		t.Error("NewFromDir(missing) succeeded")
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("job.echo", "acme", "team", "core", int64(0), int32(0))
	f.Add("sys.destroy", "", "", "", int64(-1), int32(-1))
	f.Add("\xff\xfe", "\xc3", "\x80", "v\x00", int64(math.MaxInt64), int32(math.MaxInt32))
	f.Add("job.\xff", "a\u2028", "", "", int64(math.MinInt64), int32(math.MinInt32))
	k := newDefaultKernel(f)
	f.Fuzz(func(t *testing.T, topic, tenant, key, value string, size int64, prio int32) {
		req := &safetyv1.CheckRequest{
			Topic:       topic,
			TenantId:    tenant,
			Labels:      map[string]string{key: value},
			Requires:    []string{key, value},
			Priority:    prio,
			PayloadSize: size,
			Module: &safetyv1.ModuleRequest{
				Name:      value,
				Requested: &wardv1.Grants{HttpHosts: []string{key}, MemoryLimitBytes: size},
			},
			Pool: key,
		}
		resp, err := k.Check(context.Background(), req)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		switch resp.GetDecision() {
		case safetyv1.Decision_DECISION_ALLOW, safetyv1.Decision_DECISION_DENY:
		default:
			t.Fatalf("decision %v", resp.GetDecision())
		}
		if (resp.GetDecision() == safetyv1.Decision_DECISION_DENY) != (len(resp.GetReasons()) > 0) {
			t.Fatalf("decision %v with reasons %q", resp.GetDecision(), resp.GetReasons())
		}
		// The response must survive the wire: proto strings are UTF-8.
		if _, err := proto.Marshal(resp); err != nil {
			t.Fatalf("marshal response: %v", err)
		}
	})
}

func BenchmarkKernelCheck(b *testing.B) {
	k := newDefaultKernel(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		req  *safetyv1.CheckRequest
	}{
		{"allow", echoJob()},
		{"deny", &safetyv1.CheckRequest{Topic: "sys.destroy"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Check(ctx, bc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
