// Command repo-lint reports lint findings with file:line: for every text
// file trailing white space, a missing final newline, CRLF line endings and
// overlong lines; for Go files parse errors and gofmt differences. Its
// input is described in modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		set, err := repo.Check(j, "repo-lint", func(req *sdk.RepoRequest, f *repo.File) []sdk.Finding {
			return repo.Lint(f, req.MaxLineLength)
		})
		if err != nil {
			return err
		}
		return j.WriteJSON(set)
	})
}

func main() { sdk.Main() }
