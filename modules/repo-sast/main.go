// Command repo-sast reports security findings with file:line and the rule
// that fired: hard-coded secrets (cloud keys, tokens of known formats,
// private keys, connection strings with a password, passwords and tokens
// in configuration and code; shown masked) and insecure code (SQL built by
// formatting, eval, unsafe deserialization, shell commands built at run
// time, disabled TLS checks, weak hashes of passwords). Its input and its
// rules are described in modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/internal/repo/leaks"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	repo.UseKnownSecrets(leaks.Rules{}) // secrets of known formats: gitleaks' rules
	sdk.Handle(func(j *sdk.Job) error {
		set, err := repo.Check(j, "repo-sast", func(_ *sdk.RepoRequest, f *repo.File) []sdk.Finding {
			return repo.SAST(f)
		})
		if err != nil {
			return err
		}
		return j.WriteJSON(set)
	})
}

func main() { sdk.Main() }
