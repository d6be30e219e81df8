package repo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// rule is a line pattern and what a match means.
type rule struct {
	id, severity, message string
	re                    *regexp.Regexp
	// langs limits the rule to these languages; empty means every file.
	langs []string
	// redact hides the matched secret in the message.
	redact bool
}

var sastRules = []rule{
	{id: "private-key", severity: sdk.SeverityError, message: "private key in the repository",
		re: regexp.MustCompile(`-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----`)},
	{id: "hardcoded-secret", severity: sdk.SeverityError, message: "AWS access key id", redact: true,
		re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{id: "hardcoded-secret", severity: sdk.SeverityError, message: "GitHub token", redact: true,
		re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`)},
	{id: "hardcoded-secret", severity: sdk.SeverityError, message: "Slack token", redact: true,
		re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{id: "hardcoded-secret", severity: sdk.SeverityError, message: "hard-coded credential", redact: true,
		re: regexp.MustCompile(`(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key)\b["']?\s*(?::=|=|:)\s*["'][^"'\s]{8,}["']`)},
	{id: "shell-injection", severity: sdk.SeverityError, message: "shell command built from a string", langs: []string{"Python"},
		re: regexp.MustCompile(`\bos\.(?:system|popen)\s*\([^)]*(?:\+|%|\.format\(|\bf["'])|\bsubprocess\.\w+\([^)]*shell\s*=\s*True`)},
	{id: "shell-injection", severity: sdk.SeverityError, message: "shell command built from a string", langs: []string{"JavaScript", "TypeScript"},
		re: regexp.MustCompile("\\bexec(?:Sync)?\\s*\\(\\s*(?:`[^`]*\\$\\{|[^)]*\\+)")},
	{id: "shell-injection", severity: sdk.SeverityWarning, message: "eval of a variable", langs: []string{"Shell"},
		re: regexp.MustCompile(`\beval\s+.*\$`)},
	{id: "tls-verify-disabled", severity: sdk.SeverityError, message: "TLS certificate verification disabled",
		re: regexp.MustCompile(`InsecureSkipVerify\s*:\s*true|\bverify\s*=\s*False\b|rejectUnauthorized\s*:\s*false|NODE_TLS_REJECT_UNAUTHORIZED\s*=\s*["']?0|\bcurl\b.*(?:\s-k\b|\s--insecure\b)|CURLOPT_SSL_VERIFYPEER\s*,\s*(?:0|false)`)},
	{id: "weak-hash", severity: sdk.SeverityWarning, message: "weak hash (MD5 or SHA-1)",
		re: regexp.MustCompile(`\b(?:md5|sha1)\.(?:New|Sum)\b|\bhashlib\.(?:md5|sha1)\s*\(|MessageDigest\.getInstance\(\s*"(?:MD5|SHA-?1)"|createHash\(\s*['"](?:md5|sha1)['"]`)},
}

// SAST checks a text file for hard-coded secrets and private keys, shell
// commands built from strings, disabled TLS verification and weak hashes.
// Go files are also parsed: exec.Command running a shell with a command
// that is not a constant string is reported from the syntax tree.
func SAST(f *File) []sdk.Finding {
	if f.Data == nil {
		return nil
	}
	var out findings
	lines(f.Data, func(n int, line string) {
		for _, r := range sastRules {
			if len(r.langs) > 0 && !contains(r.langs, f.Language) {
				continue
			}
			loc := r.re.FindStringIndex(line)
			if loc == nil {
				continue
			}
			msg := r.message
			if r.redact {
				msg += ": " + redact(line[loc[0]:loc[1]])
			}
			out.add(f.Path, n, loc[0]+1, r.id, r.severity, msg)
		}
	})
	if f.Language == "Go" {
		goShellCommands(f, &out)
	}
	return out.list()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// redact keeps the first few characters of a secret.
func redact(s string) string {
	if len(s) <= 8 {
		return "…"
	}
	return s[:min(8, len(s)/3)] + "…"
}

// shells are the programs whose -c argument is a command line.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "/bin/sh": true, "/bin/bash": true,
	"/usr/bin/env": true, "cmd": true, "cmd.exe": true, "powershell": true, "pwsh": true}

// goShellCommands reports exec.Command(shell, "-c", <not a constant>) and
// exec.CommandContext(ctx, shell, "-c", <not a constant>).
func goShellCommands(f *File, out *findings) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f.Path, f.Data, 0)
	if err != nil {
		return
	}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || pkg.Name != "exec" || (sel.Sel.Name != "Command" && sel.Sel.Name != "CommandContext") {
			return true
		}
		args := call.Args
		if sel.Sel.Name == "CommandContext" && len(args) > 0 {
			args = args[1:]
		}
		for k := 1; k+1 < len(args); k++ {
			if stringLit(args[k]) != "-c" || !shells[stringLit(args[k-1])] {
				continue
			}
			if _, constant := args[k+1].(*ast.BasicLit); !constant {
				pos := fset.Position(call.Pos())
				out.add(f.Path, pos.Line, pos.Column, "shell-injection", sdk.SeverityError,
					"exec."+sel.Sel.Name+" runs a shell with a command built at run time")
			}
			break
		}
		return true
	})
}

// stringLit returns the value of a string literal, or "".
func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}
