package apijson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/apijson"
)

func TestJobRecord(t *testing.T) {
	rec := &wardv1.JobRecord{
		JobId: "j1", Topic: "job.echo", State: wardv1.JobState_JOB_STATE_SUCCEEDED,
		CreatedAtUnixMs: 1764000000123, Attempt: 2,
		Labels: map[string]string{"team": "a"},
		Result: []byte(`{"answer": 42}`),
		Events: []*wardv1.JobEvent{{JobId: "j1", State: wardv1.JobState_JOB_STATE_PENDING, AtUnixMs: 5}},
		Safety: &wardv1.SafetyRecord{Decision: "ALLOW", Reasons: []string{"r"}},
	}
	b, err := json.Marshal(apijson.Of(rec))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["state"] != "SUCCEEDED" {
		t.Errorf("state = %v, want SUCCEEDED (%s)", got["state"], b)
	}
	if got["created_at_unix_ms"] != float64(1764000000123) {
		t.Errorf("created_at_unix_ms = %#v, want a number (%s)", got["created_at_unix_ms"], b)
	}
	if r, ok := got["result"].(map[string]any); !ok || r["answer"] != float64(42) {
		t.Errorf("result = %#v, want the JSON object it holds (%s)", got["result"], b)
	}
	if ev := got["events"].([]any)[0].(map[string]any); ev["state"] != "PENDING" {
		t.Errorf("event = %v", ev)
	}
	if _, ok := got["worker_id"]; ok {
		t.Errorf("an empty field is written: %s", b)
	}
	if got["labels"].(map[string]any)["team"] != "a" || got["safety"].(map[string]any)["decision"] != "ALLOW" {
		t.Errorf("labels or safety lost: %s", b)
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		in      []byte
		key     string
		wantSub string
	}{
		{[]byte(`[1,2]`), "result", `[1,2]`},
		{[]byte("hello"), "result_text", `"hello"`},
		{[]byte{0xff, 0x00, 0x01}, "result_base64", `"/wAB"`},
	} {
		rec := &wardv1.JobRecord{Result: c.in}
		b, _ := json.Marshal(apijson.Of(rec))
		if !strings.Contains(string(b), `"`+c.key+`":`+c.wantSub) {
			t.Errorf("%q: %s, want %s: %s", c.in, b, c.key, c.wantSub)
		}
	}
}

func TestEnumValue(t *testing.T) {
	ed := wardv1.JobState(0).Descriptor()
	for _, s := range []string{"failed", "FAILED", "JOB_STATE_FAILED"} {
		if n, ok := apijson.EnumValue(ed, s); !ok || wardv1.JobState(n) != wardv1.JobState_JOB_STATE_FAILED {
			t.Errorf("EnumValue(%q) = %v %v", s, n, ok)
		}
	}
	if _, ok := apijson.EnumValue(ed, "BOGUS"); ok {
		t.Error("an unknown name is a value")
	}
}

func TestPlainYAML(t *testing.T) {
	p, err := apijson.Plain(apijson.Of(&wardv1.JobRecord{JobId: "j", CreatedAtUnixMs: 1764000000123, Result: []byte(`{"a":[1.5]}`)}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"created_at_unix_ms: 1764000000123", "job_id: j", "- 1.5"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("yaml lacks %q:\n%s", want, b)
		}
	}
}
