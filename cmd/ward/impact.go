package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/safety"
)

// impactWait bounds how long impact waits for the kernels' answers.
const impactWait = 45 * time.Second

func newPolicyImpactCmd(g *globals) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "impact DIR",
		Short: "Show what a bundle would change before it is pushed: the recent decisions that would flip, by tenant and rule",
		Long: `impact sends the bundle in DIR to every running safety kernel, which
evaluates the inputs of its recent decisions (the newest 256 of each
tenant, kept in memory, never payloads) against the policy in force and
against the bundle, and answers with the decisions that would change.
Nothing is put in force. It prints them grouped by tenant, old and new
decision and reason (the new deny message, or the one that no longer
denies), with how many and some of the jobs; -o json prints every
kernel's answer and the merged flips. ward policy push shows the same
before it pushes.`,
		Example: `  ward policy impact mypolicies/`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := safety.ReadBundleDir(args[0])
			if err != nil {
				return err
			}
			conn, err := g.connect("ward-policy-impact")
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), impactWait)
			defer cancel()
			s, err := safety.Impacts(ctx, conn.NATS(), b, time.Second)
			if err != nil {
				return err
			}
			if !out.table() {
				return out.print(cmd.OutOrStdout(), s)
			}
			return printImpact(cmd.OutOrStdout(), b.Revision(), s)
		},
	}
	out = addOutput(cmd)
	return cmd
}

// printImpact prints an impact summary for a person.
func printImpact(w io.Writer, rev string, s *safety.ImpactSummary) error {
	var failed []string
	for _, k := range s.Kernels {
		if k.GetError() != "" {
			failed = append(failed, k.GetKernelId()+": "+k.GetError())
		}
	}
	inForce := map[string]bool{}
	for _, k := range s.Kernels {
		if k.GetRevision() != "" {
			inForce[k.GetRevision()] = true
		}
	}
	revs := make([]string, 0, len(inForce))
	for r := range inForce {
		revs = append(revs, r)
	}
	fmt.Fprintf(w, "bundle %s against the policy in force (revision %s) on %d kernel(s): %d recent decisions evaluated\n",
		rev, strings.Join(revs, ", "), len(s.Kernels), s.Evaluated)
	for _, f := range failed {
		fmt.Fprintf(w, "refused: %s\n", f)
	}
	if len(failed) > 0 && len(failed) == len(s.Kernels) {
		return exitError{code: 1}
	}
	if len(s.Flips) == 0 {
		fmt.Fprintln(w, "no recent decision would change")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tFROM\tTO\tDECISIONS\tREASON\tTOPICS\tSOME JOBS")
	for _, f := range s.Flips {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", f.GetTenantId(), decisionName(f.GetFrom()), decisionName(f.GetTo()), f.GetCount(),
			dash(f.GetReason()), strings.Join(f.GetTopics(), ","), strings.Join(f.GetJobIds(), ", "))
	}
	return tw.Flush()
}

func decisionName(d safetyv1.Decision) string { return strings.TrimPrefix(d.String(), "DECISION_") }

// confirmPush shows what b would change and, when it would deny work of
// a kind that runs or waits now, asks before the push (yes: do not ask).
// It reports whether to push. A kernel that cannot tell (none answers, an
// older one) does not stop the push: it is said and the push goes on.
func confirmPush(cmd *cobra.Command, g *globals, nc *nats.Conn, b *safety.Bundle, yes bool) (bool, error) {
	return confirmChange(cmd, g, nc, b, yes, pushVerbs)
}

// verbs name a change of the policy in force in confirmChange's question
// and answers: "push it", "pushed", "pushes it".
type verbs struct{ do, done, does string }

var (
	pushVerbs     = verbs{"push it", "pushed", "pushes it"}
	rollbackVerbs = verbs{"roll it back", "rolled back", "rolls it back"}
)

// confirmChange is confirmPush for a change that v names (a push, a
// rollback): the same impact, the same question, the same --yes.
func confirmChange(cmd *cobra.Command, g *globals, nc *nats.Conn, b *safety.Bundle, yes bool, v verbs) (bool, error) {
	out := cmd.OutOrStdout()
	ctx, cancel := context.WithTimeout(cmd.Context(), impactWait)
	defer cancel()
	s, err := safety.Impacts(ctx, nc, b, time.Second)
	if err != nil {
		fmt.Fprintf(out, "impact: not known (%v)\n", err)
		return true, nil
	}
	if err := printImpact(out, b.Revision(), s); err != nil {
		return false, err
	}
	c, err := client.Dial(client.NATSURL(g.natsURL), g.clientOptions())
	if err != nil {
		return false, err
	}
	defer c.Close()
	var active []string
	for _, rec := range c.DeniedInFlight(ctx, s.Flips) {
		active = append(active, rec.GetJobId()+" ("+stateName(rec.GetState())+")")
	}
	if len(active) == 0 || yes {
		return true, nil
	}
	fmt.Fprintf(out, "the bundle would deny work of a kind that runs or waits now: %s\n", strings.Join(active, ", "))
	if fi, err := os.Stdin.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false, fmt.Errorf("not %s: it would deny work that runs or waits now, and there is no terminal to ask; --yes %s", v.done, v.does)
	}
	fmt.Fprintf(out, "%s anyway? [y/N] ", v.do)
	line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
		return true, nil
	}
	fmt.Fprintf(out, "not %s\n", v.done)
	return false, nil
}
