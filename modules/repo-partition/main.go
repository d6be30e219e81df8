// Command repo-partition splits a repository's file list into batches
// (batch_size files, batch_bytes bytes at most), for lint and sast jobs to
// share. Its input is described in modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		req, src, err := repo.Open(j)
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
		return j.WriteJSON(repo.Partition(s.Result(nil).Files, req.BatchSize, req.BatchBytes))
	})
}

func main() { sdk.Main() }
