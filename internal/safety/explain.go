package safety

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// ruleTracer records the rules whose bodies held during one evaluation:
// OPA emits an Exit event for each, while the rule's bindings are still in
// place to plug its head with.
type ruleTracer struct {
	fired []*safetyv1.FiredRule
	seen  map[string]bool
}

func (t *ruleTracer) Enabled() bool { return true }

func (t *ruleTracer) Config() topdown.TraceConfig { return topdown.TraceConfig{} }

func (t *ruleTracer) TraceEvent(ev topdown.Event) {
	if ev.Op != topdown.ExitOp {
		return
	}
	rule, ok := ev.Node.(*ast.Rule)
	if !ok || rule.Module == nil || rule.Module.Package.Path.HasPrefix(kernelPackageRef) {
		return
	}
	name := ev.Plug(ast.NewTerm(rule.Ref())).String()
	if len(rule.Head.Args) > 0 {
		args := make([]string, len(rule.Head.Args))
		for i, a := range rule.Head.Args {
			args[i] = termJSON(ev.Plug(a))
		}
		name += "(" + joinArgs(args) + ")"
	}
	var value string
	switch {
	case rule.Head.RuleKind() == ast.MultiValue:
		value = termJSON(ev.Plug(rule.Head.Key))
	case rule.Head.Value != nil:
		value = termJSON(ev.Plug(rule.Head.Value))
	}
	loc := ""
	if l := rule.Location; l != nil {
		loc = fmt.Sprintf("%s:%d", l.File, l.Row)
	}
	id := name + "\x00" + loc + "\x00" + value
	if t.seen[id] {
		return
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[id] = true
	t.fired = append(t.fired, &safetyv1.FiredRule{Rule: name, Location: loc, Value: value})
}

// kernelPackageRef is data.ward.kernel, whose rules Explain leaves out.
var kernelPackageRef = ast.MustParseRef("data." + kernelPackage)

// termJSON renders a term as JSON where it can, else as Rego.
func termJSON(t *ast.Term) string {
	if t == nil {
		return ""
	}
	if x, err := ast.JSON(t.Value); err == nil {
		if bs, err := json.Marshal(x); err == nil {
			return string(bs)
		}
	}
	return t.String()
}

func joinArgs(args []string) string {
	out := ""
	for i, a := range args {
		if i > 0 {
			out += ", "
		}
		out += a
	}
	return out
}
