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
	return newKernel(tb, policies.FS, Config{})
}

func newKernel(tb testing.TB, fsys fs.FS, cfg Config) *Kernel {
	tb.Helper()
	k := NewKernel(cfg)
	if err := load(k, fsys); err != nil {
		tb.Fatalf("load: %v", err)
	}
	return k
}

// load reads the bundle in fsys and puts it in force on k (LoadBundle).
func load(k *Kernel, fsys fs.FS) error {
	b, err := ReadBundle(fsys)
	if err != nil {
		return err
	}
	return k.LoadBundle(context.Background(), b, "")
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
		Pool: "echo",
	}
}

// bundle returns the default bundle (policy and data, no tests) with extra
// files added or replaced; an empty extra file removes that file.
func bundle(tb testing.TB, extra map[string]string) fstest.MapFS {
	tb.Helper()
	fsys := fstest.MapFS{}
	for _, name := range []string{"ward.rego", "data.yaml"} {
		src, err := policies.FS.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: src}
	}
	for name, data := range extra {
		if data == "" {
			delete(fsys, name)
			continue
		}
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

func TestKernelDefaultBundle(t *testing.T) {
	k := newDefaultKernel(t)
	tests := []struct {
		name    string
		edit    func(*safetyv1.CheckRequest)
		want    safetyv1.Decision
		reasons []string
		cons    *wardv1.Constraints
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
				`topic "" is malformed: want dot-separated tokens, such as job.echo`,
			},
		},
		{
			name:    "sys.destroy forbidden",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "sys.destroy" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{"topic sys.destroy is forbidden"},
		},
		{
			name:    "topic outside the allow-list",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "sys.job.submit" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{`topic sys.job.submit is not allowed for tenant "acme"`},
		},
		{
			name:    "bare job. prefix",
			edit:    func(r *safetyv1.CheckRequest) { r.Topic = "job." },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{`topic "job." is malformed: want dot-separated tokens, such as job.echo`},
		},
		{
			name:    "empty tenant",
			edit:    func(r *safetyv1.CheckRequest) { r.TenantId = "" },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{"tenant_id is required"},
		},
		{
			name:    "payload over the cap",
			edit:    func(r *safetyv1.CheckRequest) { r.PayloadSize = 1<<20 + 1 },
			want:    safetyv1.Decision_DECISION_DENY,
			reasons: []string{"payload of 1048577 bytes is over the 1048576-byte cap for topic job.echo"},
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
		{
			name: "tenant limits",
			edit: func(r *safetyv1.CheckRequest) { r.TenantId = "globex" },
			want: safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS,
			cons: &wardv1.Constraints{MaxConcurrentJobs: 4, MaxRetries: 2, DeadlineMs: 60000},
		},
		{
			name: "chat-advanced granted the Ollama service only, no address",
			edit: func(r *safetyv1.CheckRequest) {
				r.Topic = "job.chat.advanced"
				r.Module = &safetyv1.ModuleRequest{Name: "chat-advanced", Requested: &wardv1.Grants{
					HttpHosts: []string{"evil.example:443", "localhost:11434"}, Services: []string{"ollama", "postgres"}, MemoryLimitBytes: 1 << 40}}
			},
			want: safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS,
			cons: &wardv1.Constraints{Grants: &wardv1.Grants{Services: []string{"ollama"}, MemoryLimitBytes: 512 << 20}},
		},
		{
			name: "chat-advanced without a known manifest",
			edit: func(r *safetyv1.CheckRequest) {
				r.Topic = "job.chat.advanced"
				r.Module = &safetyv1.ModuleRequest{Name: "chat-advanced"}
			},
			want: safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS,
			cons: &wardv1.Constraints{Grants: &wardv1.Grants{Services: []string{"ollama"}, EnvKeys: []string{"OLLAMA_MODEL"}}},
		},
		{
			name: "repo module granted read-only dirs under the root",
			edit: func(r *safetyv1.CheckRequest) {
				r.Topic = "job.repo.lint"
				r.Module = &safetyv1.ModuleRequest{Name: "repo-lint", Requested: &wardv1.Grants{
					ReadOnlyDirs: []string{"/srv/ward/repos/acme", "/etc", "/srv/ward/repos/../../etc"}}}
			},
			want: safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS,
			cons: &wardv1.Constraints{Grants: &wardv1.Grants{ReadOnlyDirs: []string{"/srv/ward/repos/acme"}}},
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
			if !proto.Equal(resp.GetConstraints(), tt.cons) {
				t.Errorf("constraints = %v, want %v", resp.GetConstraints(), tt.cons)
			}
			if got := resp.GetPolicyRevision(); got != k.Revision() || len(got) != 12 {
				t.Errorf("policy_revision = %q, want %q (12 hex digits)", got, k.Revision())
			}
			if _, err := uuid.Parse(resp.GetDecisionId()); err != nil {
				t.Errorf("decision_id %q: %v", resp.GetDecisionId(), err)
			}
			if d := resp.GetInputDigest(); !strings.HasPrefix(d, "sha256:") || len(d) != 7+64 {
				t.Errorf("input_digest %q", d)
			}
			if resp.GetEvalNs() <= 0 {
				t.Errorf("eval_ns %d", resp.GetEvalNs())
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

func TestKernelInputDigest(t *testing.T) {
	k := newDefaultKernel(t)
	digest := func(r *safetyv1.CheckRequest) string {
		t.Helper()
		resp, err := k.Check(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetInputDigest()
	}
	a := echoJob()
	a.Labels = map[string]string{"a": "1", "b": "2", "c": "3"}
	b := echoJob()
	b.Labels = map[string]string{"c": "3", "b": "2", "a": "1"}
	if digest(a) != digest(b) {
		t.Error("equal requests, different digests")
	}
	for name, edit := range map[string]func(*safetyv1.CheckRequest){
		"job id":      func(r *safetyv1.CheckRequest) { r.JobId = "other" },
		"label value": func(r *safetyv1.CheckRequest) { r.Labels["a"] = "2" },
		"label moved": func(r *safetyv1.CheckRequest) { r.Labels = map[string]string{"a": "12", "b": "", "c": "3"} },
		"requires":    func(r *safetyv1.CheckRequest) { r.Requires = []string{"wa", "sm"} },
		"module":      func(r *safetyv1.CheckRequest) { r.Module.Requested.EnvKeys = []string{"X"} },
	} {
		c := proto.Clone(a).(*safetyv1.CheckRequest)
		edit(c)
		if digest(c) == digest(a) {
			t.Errorf("%s changed, digest did not", name)
		}
	}
}

// TestKernelConstraintsConversion: every constraints key the kernel knows
// comes out of the policy into the proto.
func TestKernelConstraintsConversion(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  *wardv1.Constraints
	}{
		{
			name: "every key",
			files: map[string]string{"ward.rego": `package ward.safety

constraints := {
	"max_concurrent_jobs": 4, "max_retries": 3, "deadline_ms": 60000,
	"grants": {
		"http_hosts": ["api.acme.io"], "read_only_dirs": {"/data", "/a"}, "env_keys": ["TZ"],
		"memory_limit_bytes": 67108864, "time_limit_ms": 5000,
	},
}
`},
			want: &wardv1.Constraints{
				MaxConcurrentJobs: 4,
				MaxRetries:        3,
				DeadlineMs:        60000,
				Grants: &wardv1.Grants{
					HttpHosts:        []string{"api.acme.io"},
					ReadOnlyDirs:     []string{"/a", "/data"},
					EnvKeys:          []string{"TZ"},
					MemoryLimitBytes: 64 << 20,
					TimeLimitMs:      5000,
				},
			},
		},
		{
			name:  "zero value is still a constraint",
			files: map[string]string{"ward.rego": "package ward.safety\n\nconstraints.max_retries := 0\n"},
			want:  &wardv1.Constraints{},
		},
		{
			name: "tenant limits from data.json",
			files: map[string]string{
				"data.yaml": "",
				"data.json": `{"defaults": {"allowed_topics": ["job.**"], "constraints": {}, "max_payload_bytes": 10000, "topic_max_payload_bytes": {}},
					"tenants": {"acme": {"constraints": {"max_retries": 1}}}, "modules": {}}`,
			},
			want: &wardv1.Constraints{MaxRetries: 1},
		},
		{
			name: "rule extends constraints",
			files: map[string]string{"extra.rego": `package ward.safety

constraints.deadline_ms := 1000 if input.priority > 3
`},
			want: &wardv1.Constraints{DeadlineMs: 1000},
		},
		{
			name:  "policy without constraints rule",
			files: map[string]string{"ward.rego": "package ward.safety\n\ndeny contains \"no\" if input.topic == \"job.no\"\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKernel(t, bundle(t, tt.files), Config{})
			resp, err := k.Check(context.Background(), echoJob())
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			want := safetyv1.Decision_DECISION_ALLOW
			if tt.want != nil {
				want = safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS
			}
			if resp.GetDecision() != want {
				t.Errorf("decision = %v, want %v (%q)", resp.GetDecision(), want, resp.GetReasons())
			}
			if !proto.Equal(resp.GetConstraints(), tt.want) {
				t.Errorf("constraints = %v, want %v", resp.GetConstraints(), tt.want)
			}
		})
	}
}

func TestKernelNonStringDenyMessage(t *testing.T) {
	k := newKernel(t, bundle(t, map[string]string{"ward.rego": "package ward.safety\n\ndeny contains {\"code\": 7}\n"}), Config{})
	resp, err := k.Check(context.Background(), echoJob())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"code":7}`}; !slices.Equal(resp.GetReasons(), want) {
		t.Errorf("reasons = %q, want %q", resp.GetReasons(), want)
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
		`{1: 2}`,
	} {
		t.Run(c, func(t *testing.T) {
			k := newKernel(t, bundle(t, map[string]string{
				"ward.rego": "package ward.safety\n\nconstraints := " + c + "\n",
			}), Config{})
			resp, err := k.Check(context.Background(), echoJob())
			if !errors.Is(err, errConstraints) {
				t.Fatalf("Check = %v, %v; want an error wrapping %v", resp, err, errConstraints)
			}
		})
	}
}

func TestKernelRevision(t *testing.T) {
	a := newKernel(t, bundle(t, nil), Config{})
	b := newKernel(t, bundle(t, nil), Config{})
	if a.Revision() != b.Revision() {
		t.Errorf("same bundle, revisions %s and %s", a.Revision(), b.Revision())
	}
	c := newKernel(t, bundle(t, map[string]string{"extra.rego": "package ward.safety\n\nx := 1\n"}), Config{})
	if c.Revision() == a.Revision() {
		t.Errorf("policy file added, revision still %s", a.Revision())
	}
	// Unit tests do not change what the kernel evaluates.
	d := newKernel(t, bundle(t, map[string]string{"ward_test.rego": "package ward.safety_test\n\ntest_ok if true\n"}), Config{})
	if d.Revision() != a.Revision() {
		t.Errorf("test file added, revision %s, want %s", d.Revision(), a.Revision())
	}
}

func TestKernelLoadKeepsOldBundleOnError(t *testing.T) {
	k := newDefaultKernel(t)
	rev := k.Revision()
	broken := map[string]struct {
		fsys fs.FS
		want error
	}{
		"syntax error":       {fstest.MapFS{"ward.rego": {Data: []byte("package ward.safety\n\ndeny contains msg if {\n")}}, ErrInvalidBundle},
		"rego v0 syntax":     {fstest.MapFS{"ward.rego": {Data: []byte("package ward.safety\n\ndeny[msg] { msg := \"x\" }\n")}}, ErrInvalidBundle},
		"compile error":      {fstest.MapFS{"ward.rego": {Data: []byte("package ward.safety\n\ndeny contains msg if msg := undefined_function(1)\n")}}, ErrInvalidBundle},
		"no ward.safety":     {fstest.MapFS{"other.rego": {Data: []byte("package other\n\nx := 1\n")}}, ErrInvalidBundle},
		"empty bundle":       {fstest.MapFS{}, ErrInvalidBundle},
		"reserved package":   {bundle(t, map[string]string{"k.rego": "package ward.kernel\n\nx := 1\n"}), ErrInvalidBundle},
		"bad data":           {bundle(t, map[string]string{"data.yaml": "a: [\n"}), ErrInvalidBundle},
		"two data files":     {bundle(t, map[string]string{"data.json": "{}"}), ErrInvalidBundle},
		"data not an object": {bundle(t, map[string]string{"data.yaml": "", "data.json": "[1]"}), ErrInvalidBundle},
		"test does not compile": {bundle(t, map[string]string{"x_test.rego": "package ward.safety_test\n\ntest_x if nope(1)\n"}),
			ErrInvalidBundle},
		"test fails": {bundle(t, map[string]string{"x_test.rego": "package ward.safety_test\n\ntest_x if data.ward.safety.deny == {\"x\"}\n"}),
			ErrTestsFailed},
	}
	for name, tc := range broken {
		t.Run(name, func(t *testing.T) {
			err := load(k, tc.fsys)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, want %v", err, tc.want)
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

func TestTestsFailedErrorListsTests(t *testing.T) {
	b, err := ReadBundle(bundle(t, map[string]string{"x_test.rego": `package ward.safety_test

test_pass if true

test_fail if false
`}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(context.Background(), b)
	var tf *TestsFailedError
	if !errors.As(err, &tf) {
		t.Fatalf("Prepare = %v, want a *TestsFailedError", err)
	}
	if tf.Total != 2 || len(tf.Failed) != 1 || tf.Failed[0].Name != "data.ward.safety_test.test_fail" ||
		tf.Failed[0].Location != "x_test.rego:5" {
		t.Errorf("TestsFailedError = %+v", tf)
	}
	if !strings.Contains(err.Error(), "FAIL data.ward.safety_test.test_fail (x_test.rego:5)") {
		t.Errorf("error text %q", err)
	}
}

// TestTestBundle: TestBundle refuses a policy that does not compile as a
// kernel compiles it, even when its tests would run, and reports failed
// tests as results, with coverage when asked.
func TestTestBundle(t *testing.T) {
	ctx := context.Background()
	broken, err := ReadBundle(bundle(t, map[string]string{"x.rego": "package ward.safety\n\ndeny contains 1 if input.x == data.nope[_]\n\ndeny contains msg if {\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := TestBundle(ctx, broken, false); !errors.Is(err, ErrInvalidBundle) {
		t.Errorf("TestBundle(syntax error) = %v, want ErrInvalidBundle", err)
	}
	b, err := ReadBundle(bundle(t, map[string]string{"x_test.rego": "package ward.safety_test\n\ntest_fail if false\n"}))
	if err != nil {
		t.Fatal(err)
	}
	results, cov, err := TestBundle(ctx, b, true)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range results {
		if r.Failed() {
			failed++
			if r.Name != "data.ward.safety_test.test_fail" {
				t.Errorf("failed: %s", r)
			}
		}
	}
	if failed != 1 || cov == nil {
		t.Fatalf("%d failed, coverage %+v; want 1 failed, and coverage", failed, cov)
	}
	if _, ok := cov.Files["ward.rego"]; !ok {
		t.Errorf("coverage of %v, want ward.rego's", cov.Files)
	}
	if _, cov, _ := TestBundle(ctx, b, false); cov != nil {
		t.Error("coverage without asking for it")
	}
}

func TestKernelZeroValue(t *testing.T) {
	var k Kernel
	if _, err := k.Check(context.Background(), echoJob()); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("Check on a zero Kernel = %v, want ErrNoPolicy", err)
	}
	if _, err := k.Explain(context.Background(), echoJob()); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("Explain on a zero Kernel = %v, want ErrNoPolicy", err)
	}
	if k.Revision() != "" {
		t.Errorf("Revision of a zero Kernel = %q, want empty", k.Revision())
	}
	if err := load(&k, policies.FS); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Check(context.Background(), echoJob()); err != nil {
		t.Errorf("Check after Load: %v", err)
	}
}

var denyAll = fstest.MapFS{"p.rego": {Data: []byte("package ward.safety\n\ndeny contains \"closed\" if true\n")}}

func TestKernelLoadSwaps(t *testing.T) {
	k := newDefaultKernel(t)
	old := k.Revision()
	if err := load(k, denyAll); err != nil {
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
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				req := echoJob()
				req.PayloadSize = int64(i*1000 + j%7) // some hits, some misses
				resp, err := k.Check(context.Background(), req)
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
			fsys = denyAll
		}
		if err := load(k, fsys); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestKernelDirectory(t *testing.T) {
	k := newKernel(t, bundle(t, nil), Config{})
	b, err := ReadBundleDir("../../policies")
	if err != nil {
		t.Fatal(err)
	}
	if b.Revision() != k.Revision() {
		t.Errorf("directory and embedded bundle revisions differ: %s, %s", b.Revision(), k.Revision())
	}
	if _, err := ReadBundleDir(t.TempDir() + "/missing"); err == nil {
		t.Error("ReadBundleDir(missing) succeeded")
	}
}

func TestReadBundleSkipsDotFiles(t *testing.T) {
	fsys := bundle(t, map[string]string{
		".#ward.rego":           "garbage",
		".git/x.rego":           "garbage",
		"README.md":             "not a bundle file",
		"lib/helpers.rego":      "package ward.safety\n\nhelper := 1\n",
		"lib/helpers_test.rego": "package ward.safety_test\n\ntest_helper if data.ward.safety.helper == 1\n",
	})
	b, err := ReadBundle(fsys)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for name := range b.Files {
			if !yield(name) {
				return
			}
		}
	})
	want := []string{"data.yaml", "lib/helpers.rego", "lib/helpers_test.rego", "ward.rego"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	p, err := Prepare(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tests() != 1 {
		t.Errorf("tests run: %d, want 1", p.Tests())
	}
}

func TestBundleProtoRoundTrip(t *testing.T) {
	b, err := ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	got, err := BundleFromProto(b.Proto())
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision() != b.Revision() || len(got.Files) != len(b.Files) {
		t.Errorf("round trip: %s (%d files), want %s (%d)", got.Revision(), len(got.Files), b.Revision(), len(b.Files))
	}
	for name, pb := range map[string]*safetyv1.PolicyBundle{
		"path escapes":   {Files: map[string][]byte{"../x.rego": nil}},
		"absolute path":  {Files: map[string][]byte{"/x.rego": nil}},
		"not rego":       {Files: map[string][]byte{"x.sh": nil}},
		"wrong revision": {Files: map[string][]byte{"x.rego": nil}, Revision: "000000000000"},
	} {
		if _, err := BundleFromProto(pb); err == nil {
			t.Errorf("%s: BundleFromProto succeeded", name)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("job.echo", "acme", "team", "core", int64(0), int32(0), "echo", "localhost:11434")
	f.Add("sys.destroy", "", "", "", int64(-1), int32(-1), "", "")
	f.Add("\xff\xfe", "\xc3", "\x80", "v\x00", int64(math.MaxInt64), int32(math.MaxInt32), "chat-advanced", "\xff")
	f.Add("job.\xff", "a\u2028", "", "", int64(math.MinInt64), int32(math.MinInt32), "repo-lint", "/srv/ward/repos/\x00")
	f.Add("job.echo", "globex", "🦀", "\u202e", int64(1<<20+1), int32(3), "repo-*", "/srv/ward/repos/a/../b")
	cached := newDefaultKernel(f)
	// The reference: no cache, and data read from the store as written.
	uncached := NewKernel(Config{CacheSize: -1})
	b, err := ReadBundle(policies.FS)
	if err != nil {
		f.Fatal(err)
	}
	plain, err := compile(b, false)
	if err != nil {
		f.Fatal(err)
	}
	uncached.install(plain, "test")
	f.Fuzz(func(t *testing.T, topic, tenant, key, value string, size int64, prio int32, module, grant string) {
		req := &safetyv1.CheckRequest{
			Topic:       topic,
			TenantId:    tenant,
			Labels:      map[string]string{key: value, value: key},
			Requires:    []string{key, value},
			Priority:    prio,
			PayloadSize: size,
			Module: &safetyv1.ModuleRequest{
				Name: module,
				Requested: &wardv1.Grants{HttpHosts: []string{grant, key}, ReadOnlyDirs: []string{grant},
					EnvKeys: []string{value}, MemoryLimitBytes: size, TimeLimitMs: int64(prio)},
			},
			Pool: key,
		}
		resp, err := cached.Check(context.Background(), req)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if resp.GetDecision() == safetyv1.Decision_DECISION_UNSPECIFIED {
			t.Fatalf("no decision")
		}
		if (resp.GetDecision() == safetyv1.Decision_DECISION_DENY) != (len(resp.GetReasons()) > 0) {
			t.Fatalf("decision %v with reasons %q", resp.GetDecision(), resp.GetReasons())
		}
		// The response must survive the wire: proto strings are UTF-8.
		if _, err := proto.Marshal(resp); err != nil {
			t.Fatalf("marshal response: %v", err)
		}
		// A cached decision is the decision: ask again (now a hit) and ask
		// a kernel without a cache or inlined data.
		again, err := cached.Check(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := uncached.Check(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range []*safetyv1.CheckResponse{again, fresh} {
			if other.GetDecision() != resp.GetDecision() || !slices.Equal(other.GetReasons(), resp.GetReasons()) ||
				!proto.Equal(other.GetConstraints(), resp.GetConstraints()) || other.GetInputDigest() != resp.GetInputDigest() {
				t.Fatalf("decisions differ:\n%v\n%v", resp, other)
			}
		}
		if !again.GetCached() {
			t.Fatal("second Check of the same input missed the cache")
		}
	})
}

// TestInlineData: data inlined into the compiled policy decides as data read
// from the store, and a policy that overrides data with `with` is left as
// written.
func TestInlineData(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"default": nil,
		"with data": {"w.rego": `package ward.safety

deny contains "no" if {
	not topic_ok with data.defaults.allowed_topics as ["job.none"]
	input.tenant_id == "initech"
}

topic_ok if data.defaults.allowed_topics[_] == input.topic
`},
		"data under a package root": {"data.yaml": "", "data.json": `{"defaults": {"allowed_topics": ["job.**"], "constraints": {}, "max_payload_bytes": 10000, "topic_max_payload_bytes": {}},
			"tenants": {}, "modules": {}, "ward": {"safety": {"x": 1}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := ReadBundle(bundle(t, files))
			if err != nil {
				t.Fatal(err)
			}
			inlined, err := compile(b, true)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := compile(b, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, tenant := range []string{"acme", "globex", "initech", ""} {
				for _, topic := range []string{"job.echo", "job.none", "sys.destroy", "job.repo.scan"} {
					req := echoJob()
					req.TenantId, req.Topic, req.PayloadSize = tenant, topic, 70000
					a, err := inlined.eval(context.Background(), req, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					b, err := plain.eval(context.Background(), req, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					if a.kind != b.kind || !slices.Equal(a.reasons, b.reasons) || !proto.Equal(a.constraints, b.constraints) {
						t.Errorf("%s %s: inlined %v %q, as written %v %q", tenant, topic, a.kind, a.reasons, b.kind, b.reasons)
					}
				}
			}
		})
	}
}
