package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/safety"
)

// The policy history is read from the policy bucket, and a rollback
// writes it, which only an admin's credential may (auth/perms.go): both
// are admin commands, as push is (adminCommands, in main.go).
func newPolicyHistoryCmd(g *globals) *cobra.Command {
	var (
		bucket string
		o      *output
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the pushes the policy bucket keeps, newest first, and which one is in force",
		Long: `history lists the entries the policy bucket keeps of the bundle the
kernels watch (the last 16 pushes and rollbacks, deletions included),
newest first: the bucket revision (what ward policy rollback takes), the
bundle's revision, when it was stored, who pushed it (as the entry says:
nothing authenticates it; the signature says who made the bundle), the key
its signature names (not verified here: kernels with --policy-pubkey
verify), its files and test files, and which one is in force. A rollback
says which revision it put back.`,
		Example: `  ward policy history
  ward policy history -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := g.connect("ward-policy-history")
			if err != nil {
				return err
			}
			defer conn.Close()
			h, err := safety.History(cmd.Context(), conn.NATS(), bucket)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !o.table() {
				return o.print(out, h)
			}
			return printHistory(out, bucket, h)
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", safety.DefaultBucket, "NATS KV bucket the kernels watch")
	o = addOutput(cmd)
	return cmd
}

// printHistory prints the policy history for a person.
func printHistory(w io.Writer, bucket string, h []safety.PolicyRevision) error {
	if len(h) == 0 {
		fmt.Fprintf(w, "no bundle was pushed to %s: the kernels enforce the policy they were started with\n", bucket)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KV\tREVISION\tPUSHED (UTC)\tBY\tSIGNATURE\tFILES\tNOTE")
	for _, r := range h {
		at := time.UnixMilli(r.PushedAtUnixMs).UTC().Format(time.DateTime)
		var notes []string
		if r.InForce {
			notes = append(notes, "in force")
		}
		if r.RollbackOf != 0 {
			notes = append(notes, fmt.Sprintf("rollback to #%d", r.RollbackOf))
		}
		switch {
		case r.Deleted:
			fmt.Fprintf(tw, "#%d\t-\t%s\t-\t-\t-\tdeleted (the kernels kept the policy they had)\n", r.KVRevision, at)
			continue
		case r.Error != "":
			notes = append(notes, "not a bundle a kernel loads: "+firstLine(r.Error))
		}
		sig := "unsigned"
		switch {
		case r.KeyID != "":
			sig = "key " + r.KeyID
		case r.Signed:
			sig = "signed (key not named)"
		}
		files := strconv.Itoa(r.Files)
		switch {
		case r.TestFiles == 1:
			files += " (1 test)"
		case r.TestFiles > 1:
			files += fmt.Sprintf(" (%d tests)", r.TestFiles)
		}
		fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.KVRevision, dash(r.Revision), at, dash(r.PushedBy), sig, files,
			dash(strings.Join(notes, "; ")))
	}
	return tw.Flush()
}

func newPolicyRollbackCmd(g *globals) *cobra.Command {
	var (
		bucket string
		yes    bool
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollback REV",
		Short: "Put an earlier pushed bundle back in force, by its bucket revision (ward policy history)",
		Long: `rollback puts back in force the bundle of bucket revision REV, one that
ward policy history lists: it writes that entry's stored bundle again as
the bucket's newest value, which every kernel watching picks up as it
picks up a push. The bundle is not signed again and its files are those
of REV, signature included: a kernel with --policy-pubkey accepts it if it
accepted it then. The new entry says it is a rollback to REV and who made
it (` + "`ward policy history`" + `, and the kernels' policy.apply audit records).

Before it writes, it shows what the bundle would change of the kernels'
recent decisions, as push does, and asks when it would deny work of a
kind that runs or waits now (--yes does not; without a terminal it does
not roll back). It then waits until every kernel that answers enforces
the bundle (or refused it). A revision the bucket no longer keeps, or a
deletion, is refused; the bundle in force already changes nothing.`,
		Example: `  ward policy history
  ward policy rollback 3`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("rollback needs the bucket revision to go back to: ward policy rollback REV (ward policy history lists them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rev, err := strconv.ParseUint(strings.TrimPrefix(args[0], "#"), 10, 64)
			if err != nil || rev == 0 {
				return fmt.Errorf("%q is not a bucket revision: ward policy history lists them (the KV column)", args[0])
			}
			conn, err := g.connect("ward-policy-rollback")
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, nc, out := cmd.Context(), conn.NATS(), cmd.OutOrStdout()
			b, pr, err := safety.HistoryBundle(ctx, nc, bucket, rev)
			if err != nil {
				return err
			}
			if !pr.InForce {
				if !pr.Signed {
					fmt.Fprintf(out, "the bundle of #%d is unsigned: kernels run with --policy-pubkey will refuse it\n", rev)
				}
				ok, err := confirmChange(cmd, g, nc, b, yes, rollbackVerbs)
				if err != nil {
					return err
				}
				if !ok {
					return exitError{code: 1}
				}
			}
			res, err := safety.Rollback(ctx, nc, bucket, rev, safety.RollbackOptions{By: g.actor() + " (" + pusher() + ")"})
			if err != nil {
				return err
			}
			signed := "unsigned"
			switch {
			case res.KeyID != "":
				signed = "signed with key " + res.KeyID
			case res.Signed:
				signed = "signed"
			}
			if res.Unchanged {
				fmt.Fprintf(out, "revision %s (#%d, %s) is in force already: nothing was written\n", res.Revision, rev, signed)
			} else {
				fmt.Fprintf(out, "rolled back to #%d: revision %s (%s) is bucket revision %d of %s\n",
					rev, res.Revision, signed, res.KVRevision, res.Bucket)
			}
			return waitRollout(ctx, out, nc, res.Revision, res.KVRevision, wait)
		},
	}
	f := cmd.Flags()
	f.StringVar(&bucket, "bucket", safety.DefaultBucket, "NATS KV bucket the kernels watch")
	f.DurationVar(&wait, "wait", 30*time.Second, "wait this long for every kernel to enforce the revision (exit 1 if one did not, or refused it); 0 does not wait")
	f.BoolVar(&yes, "yes", false, "roll back without asking, even when the bundle would deny work that runs or waits now")
	return cmd
}
