package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/apijson"
)

// TestOutput: -o json prints the API's view of a record (short enum
// names, numbers as numbers, a JSON result as JSON), -o yaml the same
// values, a list is an array, and an unknown format names the three.
func TestOutput(t *testing.T) {
	rec := &wardv1.JobRecord{JobId: "j1", State: wardv1.JobState_JOB_STATE_SUCCEEDED, CreatedAtUnixMs: 1700000000000,
		Result: []byte(`{"hello":"world"}`)}
	var b bytes.Buffer
	if err := printAs(&b, outJSON, apijson.List([]*wardv1.JobRecord{rec})); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(got) != 1 || got[0]["state"] != "SUCCEEDED" || got[0]["created_at_unix_ms"] != float64(1700000000000) ||
		got[0]["result"].(map[string]any)["hello"] != "world" {
		t.Errorf("-o json: %s", b.String())
	}
	b.Reset()
	if err := printAs(&b, outYAML, apijson.Of(rec)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state: SUCCEEDED\n", "created_at_unix_ms: 1700000000000\n", "result:\n  hello: world\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("-o yaml lacks %q:\n%s", want, b.String())
		}
	}

	for _, tc := range []struct {
		args []string
		want string // the format, or the error
	}{
		{nil, outTable},
		{[]string{"-o", "json"}, outJSON},
		{[]string{"--output", "yaml"}, outYAML},
		{[]string{"--json"}, outJSON},
		{[]string{"-o", "xml"}, `-o "xml": unknown output format; want table, json or yaml`},
		{[]string{"--json", "-o", "yaml"}, "--json and -o yaml: choose one"},
	} {
		var format string
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		o := addOutput(cmd)
		o.addJSONAlias(cmd)
		cmd.RunE = func(*cobra.Command, []string) error { format = o.format; return nil }
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		switch {
		case err != nil && err.Error() != tc.want:
			t.Errorf("%v: %v, want %s", tc.args, err, tc.want)
		case err == nil && format != tc.want:
			t.Errorf("%v: format %q, want %s", tc.args, format, tc.want)
		}
	}
}

// TestMessages: a job's end does not repeat its reason code, and a bad
// --env names --env.
func TestMessages(t *testing.T) {
	ev := &wardv1.JobEvent{State: wardv1.JobState_JOB_STATE_TIMEOUT, Reason: "timeout", Message: "timeout: run stopped at its time limit of 1s",
		WorkerId: "h1"}
	if got, want := endLine("j1", ev), "job j1 ended TIMEOUT: timeout: run stopped at its time limit of 1s"; got != want {
		t.Errorf("endLine = %q, want %q", got, want)
	}
	if got, want := eventDetail(ev), "worker=h1  reason=timeout  run stopped at its time limit of 1s"; got != want {
		t.Errorf("eventDetail = %q, want %q", got, want)
	}
	ev = &wardv1.JobEvent{State: wardv1.JobState_JOB_STATE_DENIED, Reason: "safety_denied", Message: "topic sys.destroy is forbidden"}
	if got, want := endLine("j2", ev), "job j2 ended DENIED: safety_denied: topic sys.destroy is forbidden"; got != want {
		t.Errorf("endLine = %q, want %q", got, want)
	}
	if got := withReason("cancelled", "cancelled"); got != "cancelled" {
		t.Errorf("withReason(cancelled, cancelled) = %q", got)
	}
	if got := withReason("", "m"); got != "m" {
		t.Errorf("withReason('', m) = %q", got)
	}

	root := newRoot()
	root.SetArgs([]string{"submit", "--topic", "job.echo", "--env", "NOEQ", "--nats", "nats://127.0.0.1:1"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil || err.Error() != `--env "NOEQ": want KEY=VALUE` {
		t.Errorf("submit --env NOEQ: %v", err)
	}
	root = newRoot()
	root.SetArgs([]string{"submit", "--topic", "job.echo", "--label", "x", "--nats", "nats://127.0.0.1:1"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.HasPrefix(err.Error(), `--label "x"`) {
		t.Errorf("submit --label x: %v", err)
	}
}
