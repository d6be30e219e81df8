package safety

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

func TestExplain(t *testing.T) {
	k := newDefaultKernel(t)
	req := echoJob()
	req.Topic = "sys.destroy"
	resp, err := k.Explain(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res := resp.GetResult(); res.GetDecision() != safetyv1.Decision_DECISION_DENY ||
		!slices.Equal(res.GetReasons(), []string{"topic sys.destroy is forbidden"}) || res.GetCached() {
		t.Errorf("result %v", res)
	}
	var deny *safetyv1.FiredRule
	for _, f := range resp.GetFired() {
		if f.GetRule() == "data.ward.safety.deny" {
			deny = f
		}
		if f.GetLocation() == "" || f.GetRule() == "" {
			t.Errorf("fired rule without name or location: %v", f)
		}
	}
	if deny == nil || deny.GetValue() != `"topic sys.destroy is forbidden"` || !strings.HasPrefix(deny.GetLocation(), "ward.rego:") {
		t.Errorf("deny rule %v; fired: %v", deny, resp.GetFired())
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(resp.GetInput()), &in); err != nil || in["topic"] != "sys.destroy" || in["job_id"] == nil {
		t.Errorf("input %s: %v", resp.GetInput(), err)
	}
}

func TestExplainConstraints(t *testing.T) {
	k := newDefaultKernel(t)
	req := echoJob()
	req.Topic = "job.chat.advanced"
	req.Module = &safetyv1.ModuleRequest{Name: "chat-advanced", Requested: &wardv1.Grants{Services: []string{"ollama"}}}
	resp, err := k.Explain(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &wardv1.Constraints{Grants: &wardv1.Grants{Services: []string{"ollama"}}}
	if !proto.Equal(resp.GetResult().GetConstraints(), want) {
		t.Errorf("constraints %v", resp.GetResult().GetConstraints())
	}
	var rules []string
	for _, f := range resp.GetFired() {
		rules = append(rules, f.GetRule()+" = "+f.GetValue())
	}
	for _, w := range []string{
		`data.ward.safety.grants.services = ["ollama"]`,
		`data.ward.safety.constraints.grants = {"services":["ollama"]}`,
		`data.ward.safety.topic_allowed = true`,
	} {
		if !slices.Contains(rules, w) {
			t.Errorf("fired rules lack %s:\n%q", w, rules)
		}
	}
}

func TestDecisionLog(t *testing.T) {
	var logs []*safetyv1.DecisionLog
	k := newKernel(t, bundle(t, nil), Config{ID: "k1", Log: func(l *safetyv1.DecisionLog) { logs = append(logs, l) }})
	req := echoJob()
	req.Topic = "sys.destroy"
	for range 2 {
		if _, err := k.Check(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.Explain(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 {
		t.Fatalf("%d logs, want 2 (Explain is not logged)", len(logs))
	}
	l := logs[1]
	if l.GetJobId() != req.JobId || l.GetTenantId() != "acme" || l.GetTopic() != "sys.destroy" ||
		l.GetDecision() != safetyv1.Decision_DECISION_DENY || !slices.Equal(l.GetReasons(), []string{"topic sys.destroy is forbidden"}) ||
		l.GetPolicyRevision() != k.Revision() || l.GetKernelId() != "k1" || !l.GetCached() || l.GetInputDigest() == "" ||
		l.GetDecisionId() == logs[0].GetDecisionId() || l.GetAtUnixMs() == 0 || l.GetEvalNs() <= 0 {
		t.Errorf("log %v", l)
	}
}
