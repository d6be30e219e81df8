// Command repo-scan lists a repository's files with their languages, sizes
// and line counts. Its input is described in modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		_, src, err := repo.Open(j)
		if err != nil {
			return err
		}
		if src == nil {
			return repo.ErrNoRepository
		}
		var s repo.Scanner
		if err := src.Walk(func(f *repo.File) error { s.Add(f); return nil }); err != nil {
			return err
		}
		return j.WriteJSON(s.Result(src.Skipped()))
	})
}

func main() { sdk.Main() }
