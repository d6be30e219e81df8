package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/safety"
)

// defaultPolicyDir is where the policy commands look without a [dir].
const defaultPolicyDir = "policies"

func newPolicyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test, explain and ship safety policies (Rego bundles)",
		Long: `A policy bundle is a directory of Rego v1 files (package ward.safety, with
deny and constraints rules), their *_test.rego tests, and data.yaml or
data.json beside them. policies/ is the default bundle: copy it to start.`,
	}
	cmd.AddCommand(newPolicyTestCmd(), newPolicyEvalCmd(), newPolicyImpactCmd(g), newPolicyPushCmd(g), newPolicyKeygenCmd(),
		newPolicyStatusCmd(g), newPolicyHistoryCmd(g), newPolicyRollbackCmd(g), newPolicyBenchCmd())
	return cmd
}

func dirArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return defaultPolicyDir
}

func newPolicyTestCmd() *cobra.Command {
	var verbose, coverage bool
	var out *output
	cmd := &cobra.Command{
		Use:   "test [dir]",
		Short: "Run a bundle's Rego tests: PASS or FAIL for each, non-zero exit on any failure",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := safety.ReadBundleDir(dirArg(args))
			if err != nil {
				return err
			}
			results, cov, err := safety.TestBundle(cmd.Context(), b, coverage)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				return printTestsAs(w, out, results, cov)
			}
			err = printTests(w, results, verbose)
			if coverage {
				printCoverage(w, cov)
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print what each test printed (print())")
	cmd.Flags().BoolVar(&coverage, "coverage", false, "print which lines of the policy files no test runs")
	out = addOutput(cmd)
	return cmd
}

// printTests prints one line per test and a summary, and returns an
// exitError when a test did not pass.
func printTests(out io.Writer, results []safety.TestResult, verbose bool) error {
	failed := 0
	for _, r := range results {
		fmt.Fprintf(out, "%-7s %s (%s) %s\n", r.Outcome, r.Name, r.Location, r.Duration.Round(time.Microsecond))
		printWhy(out, r)
		if (verbose || r.Outcome != safety.OutcomePass) && r.Output != "" {
			for line := range strings.SplitSeq(strings.TrimRight(r.Output, "\n"), "\n") {
				fmt.Fprintf(out, "        | %s\n", line)
			}
		}
		if r.Failed() {
			failed++
		}
	}
	switch {
	case len(results) == 0:
		fmt.Fprintln(out, "no tests (write test_* rules in *_test.rego files)")
	case failed > 0:
		fmt.Fprintf(out, "FAIL: %d of %d tests failed\n", failed, len(results))
		return exitError{code: 1}
	default:
		fmt.Fprintf(out, "PASS: %d tests\n", len(results))
	}
	return nil
}

// printWhy says why a test did not pass: its error, or the expression
// of its body that was false.
func printWhy(out io.Writer, r safety.TestResult) {
	switch {
	case r.Err != "":
		fmt.Fprintf(out, "        %s\n", r.Err)
	case r.FailedAt != "":
		fmt.Fprintf(out, "        failed at %s\n", r.FailedAt)
	case r.Outcome == safety.OutcomeFail:
		fmt.Fprintf(out, "        the test rule is undefined: no expression of it failed, one it refers to is undefined\n")
	}
}

// testView is a test's result as `ward policy test -o json` prints it.
type testView struct {
	Name       string  `json:"name"`
	Location   string  `json:"location"`
	Outcome    string  `json:"outcome"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
	FailedAt   string  `json:"failed_at,omitempty"`
	Output     string  `json:"output,omitempty"`
}

// printTestsAs prints the results as one object: tests, passed, failed,
// and the coverage when asked for; it returns an exitError when a test
// did not pass, as printTests does.
func printTestsAs(w io.Writer, o *output, results []safety.TestResult, cov *safety.Coverage) error {
	v := struct {
		Tests    []testView       `json:"tests"`
		Passed   int              `json:"passed"`
		Failed   int              `json:"failed"`
		Coverage *safety.Coverage `json:"coverage,omitempty"`
	}{Tests: []testView{}, Coverage: cov}
	for _, r := range results {
		v.Tests = append(v.Tests, testView{Name: r.Name, Location: r.Location, Outcome: r.Outcome,
			DurationMS: float64(r.Duration.Microseconds()) / 1000, Error: r.Err, FailedAt: r.FailedAt, Output: r.Output})
		switch {
		case r.Failed():
			v.Failed++
		case r.Outcome == safety.OutcomePass:
			v.Passed++
		}
	}
	if err := o.print(w, v); err != nil {
		return err
	}
	if v.Failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

func printCoverage(out io.Writer, cov *safety.Coverage) {
	fmt.Fprintf(out, "coverage: %.1f%%\n", cov.Percent)
	names := make([]string, 0, len(cov.Files))
	for name := range cov.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fc := cov.Files[name]
		fmt.Fprintf(out, "  %-24s %5.1f%%", name, fc.Percent)
		if len(fc.NotCovered) > 0 {
			fmt.Fprintf(out, "  not run by any test: lines %s", lineRanges(fc.NotCovered))
		}
		fmt.Fprintln(out)
	}
}

// lineRanges writes sorted line numbers as 3-5, 9.
func lineRanges(lines []int) string {
	var b strings.Builder
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] <= lines[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if lines[j] > lines[i] {
			fmt.Fprintf(&b, "%d-%d", lines[i], lines[j])
		} else {
			fmt.Fprintf(&b, "%d", lines[i])
		}
		i = j + 1
	}
	return b.String()
}

func newPolicyEvalCmd() *cobra.Command {
	var (
		input, kernelAddr string
		kernelTLS         safetyTLSFlags
		out               *output
	)
	cmd := &cobra.Command{
		Use:   "eval --input job.json [dir]",
		Short: "Show a bundle's decision on a job: every deny message, the constraints, the rules that fired",
		Long: `eval decides on the job in --input (a CheckRequest as JSON: topic,
tenant_id, labels, payload_size, module {name, requested}, ...) with the
bundle in [dir], as the kernel would, and shows why. With --kernel it asks
a running kernel instead (gRPC Explain), under the policy in force there.

It exits 0 when the job is allowed (ALLOW or ALLOW_WITH_CONSTRAINTS), 1
when it is denied (with the deny messages: why), and 2 or more on an error
(a bad input, a bundle that does not compile, a kernel that cannot be
reached), so that a script can test a job with it. -o json prints the
ExplainResponse.`,
		Example: `  echo '{"topic": "job.echo", "tenant_id": "acme"}' | ward policy eval --input - policies
  ward policy eval --input job.json --kernel 127.0.0.1:50051`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if input == "" {
				return errors.New("--input is required (a file, or - for standard input)")
			}
			var data []byte
			var err error
			if input == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(input)
			}
			if err != nil {
				return err
			}
			req := &safetyv1.CheckRequest{}
			if err := protojson.Unmarshal(data, req); err != nil {
				return fmt.Errorf("--input: %w", err)
			}
			var resp *safetyv1.ExplainResponse
			if kernelAddr != "" {
				tls, err := kernelTLS.config()
				if err != nil {
					return err
				}
				c, err := safety.Dial(kernelAddr, safety.ClientConfig{TLS: tls})
				if err != nil {
					return err
				}
				defer c.Close()
				resp, err = c.Explain(cmd.Context(), req)
				if err != nil {
					return err
				}
			} else {
				b, err := safety.ReadBundleDir(dirArg(args))
				if err != nil {
					return err
				}
				p, err := safety.Compile(b)
				if err != nil {
					return err
				}
				if resp, err = p.Explain(cmd.Context(), req); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				if err := out.print(w, apijson.Of(resp)); err != nil {
					return err
				}
			} else if err := printExplain(w, resp); err != nil {
				return err
			}
			if resp.GetResult().GetDecision() == safetyv1.Decision_DECISION_DENY {
				return exitError{code: 1} // why: the deny messages printed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "the job: a JSON file, or - for standard input")
	f.StringVar(&kernelAddr, "kernel", "", "ask the kernel at this address instead of evaluating [dir]")
	kernelTLS.register(f)
	out = addOutput(cmd)
	out.addJSONAlias(cmd)
	errorsExit(cmd, 2)
	return cmd
}

// errorsExit makes every error of cmd (its flags, arguments, checks and
// run) end the process with code after printing it, so that the codes
// below it keep their meaning (policy eval's 1: denied).
func errorsExit(cmd *cobra.Command, code int) {
	wrap := func(c *cobra.Command, err error) error {
		var ee exitError
		if err == nil || errors.As(err, &ee) {
			return err
		}
		fmt.Fprintln(c.ErrOrStderr(), "ward:", err)
		return exitError{code: code}
	}
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error { return wrap(c, args(c, a)) }
	}
	if pre := cmd.PreRunE; pre != nil {
		cmd.PreRunE = func(c *cobra.Command, a []string) error { return wrap(c, pre(c, a)) }
	}
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, a []string) error { return wrap(c, run(c, a)) }
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return wrap(c, err) })
}

func printExplain(out io.Writer, resp *safetyv1.ExplainResponse) error {
	res := resp.GetResult()
	fmt.Fprintf(out, "decision:  %s\n", strings.TrimPrefix(res.GetDecision().String(), "DECISION_"))
	fmt.Fprintf(out, "revision:  %s\n", res.GetPolicyRevision())
	for _, r := range res.GetReasons() {
		fmt.Fprintf(out, "deny:      %s\n", r)
	}
	if c := res.GetConstraints(); c != nil {
		bs, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c)
		var pretty any
		if json.Unmarshal(bs, &pretty) == nil {
			bs, _ = json.Marshal(pretty) // protojson's spacing is unstable
		}
		fmt.Fprintf(out, "constraints: %s\n", bs)
	}
	fmt.Fprintf(out, "evaluated in %s\n", time.Duration(res.GetEvalNs()).Round(time.Microsecond))
	fmt.Fprintln(out, "rules that fired:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, f := range resp.GetFired() {
		fmt.Fprintf(tw, "  %s\t%s\t= %s\n", f.GetLocation(), f.GetRule(), f.GetValue())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "input: %s\n", resp.GetInput())
	return nil
}

// defaultPolicyKeyFile is the signing key `ward policy push` uses when
// neither --signing-key nor $WARD_POLICY_KEY names one: the one in the
// auth directory ($WARD_AUTH_DIR, then `ward dev`'s), if any.
func defaultPolicyKeyFile() string { return defaultKeyFile(assembly.PolicyKeyFile) }

// The files `ward policy keygen` writes.
const (
	policyKeyFile    = "policy.key"
	policyPubKeyFile = "policy.pub"
)

func newPolicyPushCmd(g *globals) *cobra.Command {
	var (
		bucket, keyFile string
		unsigned, yes   bool
		wait            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "push DIR",
		Short: "Compile a bundle, run its tests, sign it and publish it: every running safety kernel swaps to it",
		Long: `push checks the bundle as every kernel will (it compiles, and its tests
pass), signs it with --signing-key (OPA's bundle signature, a
.signatures.json covering every file) and publishes it to the NATS KV
bucket the kernels watch, with its revision. A bundle that fails is
refused with the errors, and the revision in force stays. Before it
pushes, it shows what the bundle would change of the kernels' recent
decisions (ward policy impact), and when it would deny work of a kind
that runs or waits now it asks first (--yes does not; without a terminal
it does not push). push then waits until every kernel that answers on
sys.safety.status enforces the new revision (or refused it).

A kernel started with --policy-pubkey refuses a bundle from the bucket
that is not signed with that key's private half. ` + "`ward policy keygen`" + ` makes
the pair. --unsigned pushes without a signature, which only kernels
without --policy-pubkey accept.`,
		Example: `  ward policy keygen --out ~/.ward
  ward policy push --signing-key ~/.ward/policy.key policies/`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return errors.New("push needs the bundle's directory: ward policy push DIR (ward policy push policies/ pushes the default bundle)")
			case 1:
				return nil
			}
			return fmt.Errorf("push takes one directory, got %d arguments", len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			opts := safety.PushOptions{By: g.actor() + " (" + pusher() + ")", Unsigned: unsigned}
			switch {
			case unsigned && keyFile != "" && cmd.Flags().Changed("signing-key"):
				return errors.New("--unsigned and --signing-key: choose one")
			case unsigned:
			case keyFile == "":
				return errors.New("no signing key: pass --signing-key FILE or set $WARD_POLICY_KEY (ward policy keygen makes one); " +
					"--unsigned pushes without a signature, which kernels run with --policy-pubkey refuse")
			default:
				key, err := safety.LoadPolicySigningKey(keyFile)
				if err != nil {
					return err
				}
				opts.SigningKey = key
			}
			b, err := safety.ReadBundleDir(args[0])
			if err != nil {
				return err
			}
			conn, err := g.connect("ward-policy-push")
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx := cmd.Context()
			if _, err := safety.Compile(b); err == nil { // else Push says why, and pushes nothing
				ok, err := confirmPush(cmd, g, conn.NATS(), b, yes)
				if err != nil {
					return err
				}
				if !ok {
					return exitError{code: 1}
				}
			}
			res, err := safety.Push(ctx, conn.NATS(), bucket, b, opts)
			var tf *safety.TestsFailedError
			if errors.As(err, &tf) {
				fmt.Fprintf(out, "refused: %d of %d tests failed; nothing was pushed\n", len(tf.Failed), tf.Total)
				for _, r := range tf.Failed {
					fmt.Fprintf(out, "%-7s %s (%s)\n", r.Outcome, r.Name, r.Location)
					printWhy(out, r)
					for line := range strings.SplitSeq(strings.TrimRight(r.Output, "\n"), "\n") {
						if line != "" {
							fmt.Fprintf(out, "        | %s\n", line)
						}
					}
				}
				return exitError{code: 1}
			}
			if errors.Is(err, safety.ErrInvalidBundle) {
				fmt.Fprintf(out, "refused: the bundle does not compile; nothing was pushed\n%s\n", err)
				return exitError{code: 1}
			}
			if err != nil {
				return err
			}
			signed := "unsigned"
			if res.KeyID != "" {
				signed = "signed with key " + res.KeyID
			}
			if res.Unchanged {
				fmt.Fprintf(out, "revision %s (%d tests passed, %s) is in the bucket already\n", res.Revision, res.Tests, signed)
			} else {
				fmt.Fprintf(out, "pushed revision %s (%d tests passed, %s) to %s, bucket revision %d\n",
					res.Revision, res.Tests, signed, res.Bucket, res.KVRevision)
				// Every kernel that hears the push records it (policy.apply)
				// with the pusher the bundle names and its signature's check.
			}
			return waitRollout(ctx, out, conn.NATS(), res.Revision, res.KVRevision, wait)
		},
	}
	f := cmd.Flags()
	f.StringVar(&bucket, "bucket", safety.DefaultBucket, "NATS KV bucket the kernels watch")
	f.DurationVar(&wait, "wait", 30*time.Second, "wait this long for every kernel to enforce the revision (exit 1 if one did not, or refused it); 0 does not wait")
	f.StringVar(&keyFile, "signing-key", envOr("WARD_POLICY_KEY", defaultPolicyKeyFile()),
		"private key file (PEM) the bundle is signed with; kernels check it with --policy-pubkey ($WARD_POLICY_KEY)")
	f.BoolVar(&unsigned, "unsigned", false, "push without a signature (only kernels without --policy-pubkey accept it)")
	f.BoolVar(&yes, "yes", false, "push without asking, even when the bundle would deny work that runs or waits now")
	return cmd
}

func newPolicyKeygenCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "keygen --out DIR",
		Short: "Make a key pair for signing policy bundles: policy.key for push, policy.pub for the kernels",
		Long: `keygen makes an ed25519 key pair in PEM files: DIR/` + policyKeyFile + ` (PKCS #8,
mode 0600), the private key ` + "`ward policy push --signing-key`" + ` signs bundles
with, and DIR/` + policyPubKeyFile + ` (PKIX), the public key ` + "`ward safety --policy-pubkey`" + `
checks them with. It does not overwrite existing files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return errors.New("--out is required")
			}
			priv, pub, err := safety.GeneratePolicyKey()
			if err != nil {
				return err
			}
			key, err := safety.ParsePolicySigningKey(priv)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			privPath, pubPath := filepath.Join(dir, policyKeyFile), filepath.Join(dir, policyPubKeyFile)
			for _, p := range []string{privPath, pubPath} {
				if _, err := os.Lstat(p); err == nil {
					return fmt.Errorf("%s exists: not overwritten", p)
				}
			}
			if err := writeNew(privPath, priv, 0o600); err != nil {
				return err
			}
			if err := writeNew(pubPath, pub, 0o644); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "key %s (%s)\n  private: %s (ward policy push --signing-key)\n  public:  %s (ward safety --policy-pubkey)\n",
				key.ID(), key.Public().Algorithm(), privPath, pubPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "out", "", "directory to write "+policyKeyFile+" and "+policyPubKeyFile+" to (made 0700 if missing)")
	return cmd
}

// writeNew writes data to a new file path with mode perm; it fails if
// path exists.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// pusher names who pushes, for the stored bundle.
func pusher() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if h, err := os.Hostname(); err == nil {
		name += "@" + h
	}
	return name
}

// waitRollout waits up to wait (0: not at all) for every kernel that
// answers to enforce revision rev, written at bucket revision kvRev (0 when
// nothing was written), and prints where each stands (printRollout): what
// `ward policy push` and `ward policy rollback` do once they wrote the
// bucket.
func waitRollout(ctx context.Context, out io.Writer, nc *nats.Conn, rev string, kvRev uint64, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	ro, err := safety.WaitKernels(ctx, nc, rev, kvRev, wait)
	if err != nil {
		return err
	}
	return printRollout(out, ro)
}

// printRollout prints where each kernel stands on the pushed revision, and
// returns an exitError unless every one enforces it.
func printRollout(out io.Writer, ro *safety.Rollout) error {
	if len(ro.Kernels) == 0 {
		fmt.Fprintln(out, "no kernel answered on sys.safety.status; each will load the bundle when it connects")
		return nil
	}
	for _, st := range ro.Kernels {
		var state string
		switch ro.State(st) {
		case safety.KernelEnforces:
			state = "enforces it"
		case safety.KernelRefused:
			state = "REFUSED it, enforces " + st.GetRevision() + ": " + st.GetLastError()
		default:
			state = "still enforces " + st.GetRevision()
		}
		fmt.Fprintf(out, "  %s (%s): %s\n", st.GetKernelId(), st.GetAddr(), state)
	}
	if !ro.Enforced() {
		return exitError{code: 1}
	}
	return nil
}

func newPolicyStatusCmd(g *globals) *cobra.Command {
	var wait time.Duration
	var o *output
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every running safety kernel: revision in force, its source, refusals, cache",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := g.connect("ward-policy-status")
			if err != nil {
				return err
			}
			defer conn.Close()
			sts, err := safety.Statuses(cmd.Context(), conn.NATS(), wait)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !o.table() {
				if err := o.print(out, apijson.List(sts)); err != nil {
					return err
				}
				if len(sts) == 0 {
					return exitError{code: 1}
				}
				return nil
			}
			if len(sts) == 0 {
				fmt.Fprintln(out, "no kernel answered")
				return exitError{code: 1}
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KERNEL\tADDR\tREVISION\tSOURCE\tLOADED\tCACHE\tREFUSED")
			for _, st := range sts {
				cache := "off"
				if st.GetCacheEnabled() {
					cache = fmt.Sprint(st.GetCacheEntries())
				}
				refused := "-"
				if st.GetLastError() != "" {
					refused = st.GetRefusedRevision() + ": " + firstLine(st.GetLastError())
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.GetKernelId(), st.GetAddr(), st.GetRevision(), st.GetSource(),
					time.UnixMilli(st.GetLoadedAtUnixMs()).Format(time.TimeOnly), cache, refused)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 500*time.Millisecond, "how long to collect answers")
	o = addOutput(cmd)
	return cmd
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func newPolicyBenchCmd() *cobra.Command {
	var (
		addr      string
		cfg       safety.LoadConfig
		kernelTLS safetyTLSFlags
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a running safety kernel over gRPC and print Check latency percentiles",
		Example: `  ward policy bench --kernel 127.0.0.1:50051 -c 64 --duration 10s --rate 5000
  ward policy bench -c 64 --distinct 1000   # most Checks miss the cache`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A breaker would turn a struggling kernel's errors into
			// instant failures, flattering the figures.
			tls, err := kernelTLS.config()
			if err != nil {
				return err
			}
			c, err := safety.Dial(addr, safety.ClientConfig{BreakerFailures: -1, TLS: tls})
			if err != nil {
				return err
			}
			defer c.Close()
			// One Check first: it connects, and shows a wrong address at once.
			if _, err := c.Check(cmd.Context(), &safetyv1.CheckRequest{Topic: "job.echo", TenantId: "acme"}); err != nil {
				return err
			}
			res := safety.Load(cmd.Context(), c, cfg)
			fmt.Fprintln(cmd.OutOrStdout(), res)
			if res.Errors > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "kernel", envOr("SAFETY_KERNEL_ADDR", "127.0.0.1:50051"), "kernel address ($SAFETY_KERNEL_ADDR)")
	f.IntVarP(&cfg.Callers, "callers", "c", 64, "concurrent callers")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long to run")
	f.Float64Var(&cfg.Rate, "rate", 0, "Checks per second in all (open loop); 0: as fast as the callers go")
	kernelTLS.register(f)
	f.IntVar(&cfg.Distinct, "distinct", 1, "distinct inputs to cycle through (1: every Check after the first hits the cache)")
	return cmd
}
