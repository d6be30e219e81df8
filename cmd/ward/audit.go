package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/audit"
)

func newAuditCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The audit log of admin actions: who did what, to what, and when"}
	var f audit.Filter
	var since time.Duration
	var out *output
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List recorded admin actions, newest first",
		Example: `  ward audit ls --since 24h
  ward audit ls --action module.deploy --actor admin:alice -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Action != "" {
				if err := audit.CheckAction(f.Action); err != nil {
					return err
				}
			}
			if since < 0 {
				return fmt.Errorf("--since %v: want a positive duration", since)
			}
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			conn, err := g.connect("ward-audit")
			if err != nil {
				return err
			}
			defer conn.Close()
			js, err := jetstream.New(conn.NATS())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			entries, err := audit.List(ctx, js, f)
			partial := errors.Is(err, audit.ErrScanLimit)
			if err != nil && !partial {
				return err
			}
			if err := printAudit(cmd, entries, out); err != nil {
				return err
			}
			if partial {
				fmt.Fprintln(cmd.ErrOrStderr(), "ward: stopped before the oldest records: narrow the list with --since, --action or --actor")
			}
			return nil
		},
	}
	ls.Flags().StringVar(&f.Action, "action", "", "only this action: "+strings.Join(audit.Actions(), ", "))
	ls.Flags().StringVar(&f.Actor, "actor", "", `only this credential ("admin", "admin:alice")`)
	ls.Flags().DurationVar(&since, "since", 0, "only what was recorded in the last DURATION (24h)")
	ls.Flags().IntVar(&f.Limit, "limit", audit.DefaultLimit, fmt.Sprintf("how many (at most %d)", audit.MaxLimit))
	out = addOutput(ls)
	cmd.AddCommand(ls)
	return cmd
}

func printAudit(cmd *cobra.Command, entries []audit.Entry, o *output) error {
	out := cmd.OutOrStdout()
	if !o.table() {
		if entries == nil {
			entries = []audit.Entry{}
		}
		return o.print(out, entries)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tACTOR\tACTION\tTARGET\tDETAIL")
	for _, e := range entries {
		var detail []string
		for _, k := range slices.Sorted(maps.Keys(e.Detail)) {
			detail = append(detail, auditField(k)+"="+auditField(e.Detail[k]))
		}
		target := "-"
		if e.Target != "" {
			target = auditField(e.Target)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime),
			auditField(e.Actor), auditField(e.Action), target, strings.Join(detail, " "))
	}
	return tw.Flush()
}

// auditField quotes s when it holds a space, a quote or a control
// character, so that a recorded value cannot break the table's columns.
func auditField(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' }) {
		return s
	}
	return strconv.Quote(s)
}
