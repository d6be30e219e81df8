package repo

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// Scanner accumulates repo-scan's result, file by file.
type Scanner struct {
	res sdk.ScanResult
}

// Add counts f.
func (s *Scanner) Add(f *File) {
	fi := sdk.FileInfo{Path: f.Path, Size: f.Size, Language: f.Language, Binary: f.Binary}
	if f.Data != nil {
		fi.Lines = bytes.Count(f.Data, []byte("\n"))
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			fi.Lines++
		}
	}
	s.res.Files = append(s.res.Files, fi)
	s.res.TotalFiles++
	s.res.TotalBytes += f.Size
	lang := f.Language
	if lang == "" {
		lang = "Other"
	}
	if s.res.Languages == nil {
		s.res.Languages = map[string]sdk.LanguageStats{}
	}
	st := s.res.Languages[lang]
	st.Files++
	st.Bytes += f.Size
	st.Lines += fi.Lines
	s.res.Languages[lang] = st
}

// Result returns the scan, files sorted by path.
func (s *Scanner) Result(skipped []string) sdk.ScanResult {
	slices.SortFunc(s.res.Files, func(a, b sdk.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	if s.res.Files == nil {
		s.res.Files = []sdk.FileInfo{}
	}
	if s.res.Languages == nil {
		s.res.Languages = map[string]sdk.LanguageStats{}
	}
	s.res.Skipped = skipped
	return s.res
}

// Partition splits files (sorted by path) into batches of at most size
// files and maxBytes bytes; a file larger than maxBytes is a batch of its
// own.
func Partition(files []sdk.FileInfo, size int, maxBytes int64) sdk.PartitionResult {
	if size <= 0 {
		size = 50
	}
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b sdk.FileInfo) int { return strings.Compare(a.Path, b.Path) })
	res := sdk.PartitionResult{Batches: []sdk.Batch{}, TotalFiles: len(files)}
	var cur *sdk.Batch
	for _, f := range files {
		if cur == nil || len(cur.Files) >= size || (len(cur.Files) > 0 && cur.Bytes+f.Size > maxBytes) {
			res.Batches = append(res.Batches, sdk.Batch{Index: len(res.Batches)})
			cur = &res.Batches[len(res.Batches)-1]
		}
		cur.Files = append(cur.Files, f.Path)
		cur.Bytes += f.Size
	}
	return res
}

// Selected reports whether f is among files, or files is empty.
func Selected(files []string, f *File) bool {
	return len(files) == 0 || slices.Contains(files, f.Path)
}

var severityRank = map[string]int{sdk.SeverityError: 0, sdk.SeverityWarning: 1, sdk.SeverityInfo: 2}

// SortFindings orders findings by severity, file, line, column and rule,
// and drops duplicates.
func SortFindings(fs []sdk.Finding) []sdk.Finding {
	slices.SortFunc(fs, func(a, b sdk.Finding) int {
		return cmp.Or(cmp.Compare(severityRank[a.Severity], severityRank[b.Severity]),
			strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			strings.Compare(a.Rule, b.Rule), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(fs)
}

// NewReport merges finding sets into a report, with its Markdown.
func NewReport(files int, sets []sdk.FindingSet) sdk.Report {
	rep := sdk.Report{Findings: []sdk.Finding{}}
	rep.Summary = sdk.ReportSummary{Files: files, BySeverity: map[string]int{}, ByRule: map[string]int{}, Tools: []string{}}
	checked := map[string]int{} // files checked by each tool, over its sets (a workflow's batches)
	for _, s := range sets {
		rep.Findings = append(rep.Findings, s.Findings...)
		if s.Tool != "" && !slices.Contains(rep.Summary.Tools, s.Tool) {
			rep.Summary.Tools = append(rep.Summary.Tools, s.Tool)
		}
		checked[s.Tool] += s.FilesChecked
	}
	if files == 0 {
		for _, n := range checked {
			rep.Summary.Files = max(rep.Summary.Files, n)
		}
	}
	sort.Strings(rep.Summary.Tools)
	rep.Findings = SortFindings(rep.Findings)
	for _, f := range rep.Findings {
		rep.Summary.BySeverity[f.Severity]++
		rep.Summary.ByRule[f.Rule]++
	}
	rep.Summary.Findings = len(rep.Findings)
	rep.Markdown = markdown(rep)
	return rep
}

func markdown(rep sdk.Report) string {
	var b strings.Builder
	s := rep.Summary
	b.WriteString("# Repository report\n\n")
	fmt.Fprintf(&b, "**%d findings** in %d files (tools: %s).\n\n", s.Findings, s.Files, strings.Join(s.Tools, ", "))
	if s.Findings == 0 {
		b.WriteString("Nothing to report.\n")
		return b.String()
	}
	b.WriteString("| Severity | Findings |\n|---|---:|\n")
	for _, sev := range []string{sdk.SeverityError, sdk.SeverityWarning, sdk.SeverityInfo} {
		if n := s.BySeverity[sev]; n > 0 {
			fmt.Fprintf(&b, "| %s | %d |\n", sev, n)
		}
	}
	rules := make([]string, 0, len(s.ByRule))
	for r := range s.ByRule {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	b.WriteString("\n| Rule | Findings |\n|---|---:|\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "| %s | %d |\n", r, s.ByRule[r])
	}
	b.WriteString("\n## Findings\n\n| Severity | Location | Rule | Message |\n|---|---|---|---|\n")
	for _, f := range rep.Findings {
		loc := fmt.Sprintf("%s:%d", f.File, f.Line)
		if f.Column > 0 {
			loc += fmt.Sprintf(":%d", f.Column)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", f.Severity, mdEscape(loc), f.Rule, mdEscape(f.Message))
	}
	fixes := map[string]string{}
	for _, f := range rep.Findings {
		if f.Fix != "" && fixes[f.Rule] == "" {
			fixes[f.Rule] = f.Fix
		}
	}
	if len(fixes) > 0 {
		b.WriteString("\n## How to fix\n\n")
		for _, r := range rules {
			if fixes[r] != "" {
				fmt.Fprintf(&b, "- **%s**: %s\n", r, mdEscape(fixes[r]))
			}
		}
	}
	return b.String()
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// ErrNoRepository is the error of a repo module given neither an archive
// nor a directory.
var ErrNoRepository = fmt.Errorf(`no repository: send a tar archive of it, or {"dir": "<a mounted directory>"}`)

// Check runs check on every selected text file of the job's repository and
// returns the findings as tool's FindingSet.
func Check(j *sdk.Job, tool string, check func(*sdk.RepoRequest, *File) []sdk.Finding) (sdk.FindingSet, error) {
	req, src, err := Open(j)
	if err != nil {
		return sdk.FindingSet{}, err
	}
	if src == nil {
		return sdk.FindingSet{}, ErrNoRepository
	}
	set := sdk.FindingSet{Tool: tool, Findings: []sdk.Finding{}}
	visit := func(f *File) error {
		if f.Data == nil || !Selected(req.Files, f) {
			return nil
		}
		set.FilesChecked++
		set.Findings = append(set.Findings, check(req, f)...)
		return nil
	}
	if d, ok := src.(*dir); ok && len(req.Files) > 0 {
		// A batch of a directory: read its files alone, not the whole tree.
		err = d.WalkFiles(req.Files, visit)
	} else {
		err = src.Walk(visit)
	}
	set.Findings = SortFindings(set.Findings)
	set.Skipped = src.Skipped()
	return set, err
}
