// Command repo-report merges lint and sast findings into one report, as
// JSON with a Markdown rendering (or Markdown alone with "format":
// "markdown", or a SARIF 2.1.0 log with "format": "sarif"). Given a repository it runs both checks itself; given
// "results" (the outputs of repo-lint and repo-sast jobs) it merges them.
// Its input is described in modules/README.md.
package main

import (
	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/internal/repo/leaks"
	"github.com/ward-run/ward/modules/sdk"
)

func init() {
	repo.UseKnownSecrets(leaks.Rules{}) // secrets of known formats: gitleaks' rules
	sdk.Handle(func(j *sdk.Job) error {
		req, src, err := repo.Open(j)
		if err != nil {
			return err
		}
		if src == nil && len(req.Results) == 0 {
			return repo.ErrNoRepository
		}
		sets := req.Results
		files := 0
		if src != nil {
			lint := sdk.FindingSet{Tool: "repo-lint"}
			sast := sdk.FindingSet{Tool: "repo-sast"}
			err := src.Walk(func(f *repo.File) error {
				files++
				if f.Data == nil || !repo.Selected(req.Files, f) {
					return nil
				}
				lint.FilesChecked++
				sast.FilesChecked++
				lint.Findings = append(lint.Findings, repo.Lint(f, req.MaxLineLength)...)
				sast.Findings = append(sast.Findings, repo.SAST(f)...)
				return nil
			})
			if err != nil {
				return err
			}
			sets = append(sets, lint, sast)
		}
		rep := repo.NewReport(files, sets)
		switch req.Format {
		case "markdown":
			_, err := j.WriteString(rep.Markdown)
			return err
		case "sarif":
			log, err := repo.SARIF(rep)
			if err != nil {
				return err
			}
			_, err = j.Write(log)
			return err
		}
		return j.WriteJSON(rep)
	})
}

func main() { sdk.Main() }
