// Command repo-tests inventories a repository's tests without running
// them (a sandbox cannot run the project's toolchain): test files and
// test counts per language and package, the frameworks in use and how
// each was recognised, and the code no test covers (for Go, with its
// exported functions). Its input is described in modules/README.md.
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
		var inv repo.Inventory
		if err := src.Walk(func(f *repo.File) error { inv.Add(f); return nil }); err != nil {
			return err
		}
		return j.WriteJSON(inv.Result(src.Skipped()))
	})
}

func main() { sdk.Main() }
