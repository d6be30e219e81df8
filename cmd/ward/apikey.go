package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
)

// newAuthKeyCmd is `ward auth key`: the HTTP gateway's API keys, in the
// bucket apikey.Bucket, over NATS with the admin credential.
func newAuthKeyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Add, list and revoke the HTTP gateway's API keys (admin)",
		Long: `key manages the API keys the HTTP gateway (ward gateway) takes as
"Authorization: Bearer <key>". A key is ward_<id>_<secret>: the id is the
part you recognise and name it by, the secret is shown once, when it is
added, and only its SHA-256 is stored, in the JetStream KV bucket ` + apikey.Bucket + `.
Every gateway replica watches the bucket: a revoked key is refused at once.

Scopes: read (get and list the tenant's jobs), submit (submit and cancel
them), admin (everything, for every tenant). These commands connect to NATS
with the admin credential (--creds, else ward dev's).`,
	}
	cmd.AddCommand(newAuthKeyAddCmd(g), newAuthKeyLsCmd(g), newAuthKeyRevokeCmd(g))
	return cmd
}

// openKeys opens the key store over an admin connection, and returns it
// with what closes it and the connection.
func (g *globals) openKeys(ctx context.Context) (*apikey.Store, func(), error) {
	s, _, done, err := g.openKeysJS(ctx)
	return s, done, err
}

// openKeysJS is openKeys, with the connection's JetStream (for the audit
// log).
func (g *globals) openKeysJS(ctx context.Context) (*apikey.Store, jetstream.JetStream, func(), error) {
	if f := g.credsFile(); f != "" {
		id, _, err := auth.ReadIdentity(f)
		if err != nil {
			return nil, nil, nil, err
		}
		if id.Role != auth.Admin {
			return nil, nil, nil, fmt.Errorf("API keys need an admin credential: %s is %s:%s's (--creds)", f, id.Role, id.Name)
		}
	}
	conn, err := g.connect("ward-auth-key")
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(conn.NATS())
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	s, err := apikey.Open(ctx, js)
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	return s, js, func() { _ = s.Close(); conn.Close() }, nil
}

func newAuthKeyAddCmd(g *globals) *cobra.Command {
	var (
		spec            apikey.Spec
		scopes          []string
		readOnly, admin bool
		expires         time.Duration
		output          string
	)
	cmd := &cobra.Command{
		Use:   "add --tenant TENANT",
		Short: "Add an API key and print it, once: only its hash is kept",
		Example: `  ward auth key add --tenant acme --name ci            # read and submit
  ward auth key add --tenant acme --read-only --expires 720h
  ward auth key add --tenant ops --admin --name oncall`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: want text or json", output)
			}
			var err error
			switch {
			case readOnly:
				spec.Scopes = []apikey.Scope{apikey.ScopeRead}
			case admin:
				spec.Scopes = []apikey.Scope{apikey.ScopeAdmin}
			default:
				if spec.Scopes, err = apikey.ParseScopes(strings.Join(scopes, ",")); err != nil {
					return err
				}
			}
			if expires < 0 {
				return fmt.Errorf("--expires %v: want a positive duration", expires)
			}
			if expires > 0 {
				spec.ExpiresAt = time.Now().Add(expires)
			}
			spec.CreatedBy = g.actor()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, done, err := g.openKeys(ctx)
			if err != nil {
				return err
			}
			defer done()
			key, rec, err := s.Add(ctx, spec)
			if err != nil {
				return err
			}
			detail := map[string]string{"tenant": rec.Tenant, "scopes": scopeString(rec.Scopes)}
			if rec.Name != "" {
				detail["name"] = rec.Name
			}
			if !rec.ExpiresAt.IsZero() {
				detail["expires_at"] = rec.ExpiresAt.Format(time.RFC3339)
			}
			g.audit(audit.APIKeyAdd, rec.Prefix(), detail)
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				return enc.Encode(struct {
					Key string `json:"key"`
					apikey.Record
				}{key, rec})
			}
			fmt.Fprintln(out, key)
			fmt.Fprintf(cmd.ErrOrStderr(), "key %s for tenant %s, scopes %s, expires %s\n"+
				"it is shown this once and cannot be shown again (only its hash is kept): store it now\n",
				rec.Prefix(), rec.Tenant, scopeString(rec.Scopes), orNever(rec.ExpiresAt))
			return nil
		},
	}
	cmd.Flags().StringVar(&spec.Tenant, "tenant", "", "tenant the key acts for (required; an admin key's too)")
	cmd.Flags().StringVar(&spec.Name, "name", "", "what the key is for")
	cmd.Flags().StringSliceVar(&scopes, "scope", []string{string(apikey.ScopeRead), string(apikey.ScopeSubmit)}, "scopes: read, submit, admin (comma-separated, repeatable)")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "only the read scope: the key changes nothing")
	cmd.Flags().BoolVar(&admin, "admin", false, "the admin scope: everything, for every tenant")
	cmd.Flags().DurationVar(&expires, "expires", 0, "the key expires after DURATION (720h); default: never")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text: the key on stdout, what it is on stderr; json: one object with the key and its record")
	_ = cmd.MarkFlagRequired("tenant")
	cmd.MarkFlagsMutuallyExclusive("scope", "read-only", "admin")
	return cmd
}

func newAuthKeyLsCmd(g *globals) *cobra.Command {
	var tenant, output string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the API keys, revoked and expired ones too (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: want table or json", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, done, err := g.openKeys(ctx)
			if err != nil {
				return err
			}
			defer done()
			recs, err := s.List(ctx, tenant)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				if recs == nil {
					recs = []apikey.Record{}
				}
				b, err := json.MarshalIndent(recs, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			now := time.Now()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tTENANT\tSCOPES\tNAME\tCREATED\tEXPIRES\tREVOKED\tSTATE")
			for _, r := range recs {
				state := "active"
				switch {
				case r.Revoked():
					state = "revoked"
				case r.Expired(now):
					state = "expired"
				}
				revoked := "-"
				if r.Revoked() {
					revoked = r.RevokedAt.Local().Format(time.DateTime)
					if r.RevokedBy != "" {
						revoked += " by " + auditField(r.RevokedBy)
					}
				}
				name := "-"
				if r.Name != "" {
					name = auditField(r.Name)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Prefix(), r.Tenant, scopeString(r.Scopes), name,
					r.CreatedAt.Local().Format(time.DateTime), orNever(r.ExpiresAt), revoked, state)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's keys (default: every tenant's)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, or json: an array of records")
	return cmd
}

func newAuthKeyRevokeCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key: every gateway refuses it at once",
		Long: `revoke revokes the API key ID: its id (ab12cd34), its prefix (ward_ab12cd34)
as ward auth key ls shows it, or the whole key. Its record stays, revoked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := apikey.IDOf(args[0])
			if err != nil {
				return fmt.Errorf("%q: want a key's id, its prefix ward_<id>, or the key: %w", args[0], err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, done, err := g.openKeys(ctx)
			if err != nil {
				return err
			}
			defer done()
			rec, err := s.Get(ctx, id)
			if err != nil {
				return err
			}
			err = s.RevokeWithReason(ctx, id, g.actor(), reason)
			out := cmd.OutOrStdout()
			if errors.Is(err, apikey.ErrRevoked) {
				fmt.Fprintf(out, "key %s (tenant %s) was revoked already\n", rec.Prefix(), rec.Tenant)
				return nil
			}
			if err != nil {
				return err
			}
			detail := map[string]string{"tenant": rec.Tenant}
			if reason != "" {
				detail["reason"] = reason
			}
			g.audit(audit.APIKeyRevoke, rec.Prefix(), detail)
			fmt.Fprintf(out, "revoked key %s (tenant %s)\n", rec.Prefix(), rec.Tenant)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept in the key's record and the audit log")
	return cmd
}

func scopeString(sc []apikey.Scope) string {
	s := make([]string, len(sc))
	for i, x := range sc {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

func orNever(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format(time.DateTime)
}
