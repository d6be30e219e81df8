// Command repo-sast reports security findings with file:line: hard-coded
// secrets and private keys, shell commands built from strings, disabled
// TLS verification and weak hashes. Its input is described in
// modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
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
