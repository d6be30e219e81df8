package dashboard

import (
	"bytes"
	"cmp"
	"encoding/json"
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A report is what repo.code_review's run (and its report step's job)
// ends with: {"markdown": "…", "findings": [{file, line, rule, severity,
// message}], "summary": {…}, "tests": {…}}. The pages render its
// Markdown as HTML and its findings as a table, and keep the JSON.
//
// The Markdown is a module's output: goldmark renders it safe, raw HTML
// escaped (html.WithUnsafe is never set) and links to javascript: and
// other dangerous URLs dropped; nothing it renders carries a style
// attribute (the pages' CSP allows none): tables' alignments are left
// out.

// reportMaxMarkdown is the most Markdown a page renders; a longer report
// is shown as text.
const reportMaxMarkdown = 2 << 20

// reportMaxFindings is the most findings a page lists.
const reportMaxFindings = 1000

// uiFinding is one finding (modules/sdk.Finding).
type uiFinding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Where is the finding's file:line.
func (f uiFinding) Where() string {
	if f.Line <= 0 {
		return f.File
	}
	return f.File + ":" + strconv.Itoa(f.Line)
}

// severityRank orders the severities, the worst first.
func severityRank(s string) int {
	switch strings.ToLower(s) {
	case "error":
		return 0
	case "warning":
		return 1
	case "info":
		return 2
	}
	return 3
}

// uiReport is a report as a page shows it.
type uiReport struct {
	// HTML is the Markdown rendered; Text the Markdown when too long to
	// render.
	HTML template.HTML
	Text string
	// HasFindings says the outputs carry a list of findings (perhaps
	// empty); Findings are the first reportMaxFindings of them, by
	// severity, file and line, of Total.
	HasFindings bool
	Findings    []uiFinding
	Total       int
}

// More reports whether the page lists only some of the findings.
func (r *uiReport) More() bool { return r.Total > len(r.Findings) }

// readReport reads a report from a run's outputs or a job's result: a
// JSON object with a "markdown" string or a "findings" list. nil when
// raw is no report.
func readReport(raw json.RawMessage) *uiReport {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	var r uiReport
	var md string
	hasMD := obj["markdown"] != nil && string(obj["markdown"]) != "null" && json.Unmarshal(obj["markdown"], &md) == nil
	var fs []uiFinding
	r.HasFindings = obj["findings"] != nil && json.Unmarshal(obj["findings"], &fs) == nil && string(obj["findings"]) != "null"
	if !hasMD && !r.HasFindings {
		return nil
	}
	if hasMD && md != "" {
		if len(md) > reportMaxMarkdown {
			r.Text = md
		} else if h, err := renderMarkdown(md); err == nil {
			r.HTML = h
		} else {
			r.Text = md
		}
	}
	slices.SortStableFunc(fs, func(a, b uiFinding) int {
		return cmp.Or(cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
			strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Rule, b.Rule))
	})
	r.Total = len(fs)
	r.Findings = fs[:min(len(fs), reportMaxFindings)]
	return &r
}

// markdown renders a report's Markdown: GitHub's flavour (tables,
// strikethrough, autolinks; not task lists, whose check boxes have no
// labels), raw HTML escaped, dangerous
// links dropped, no style attributes, headings from level 3 (the page's
// own are 1 and 2).
var markdown = goldmark.New(
	goldmark.WithExtensions(
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignNone)),
		extension.Strikethrough, extension.Linkify,
	),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(headingLevels{}, 100))),
)

func renderMarkdown(md string) (template.HTML, error) {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(md), &buf); err != nil {
		return "", err
	}
	// goldmark escapes raw HTML and drops dangerous URLs (it is not
	// WithUnsafe): its output is safe to put in the page as it is.
	return template.HTML(buf.String()), nil
}

// headingLevels moves a report's headings under the page's (h1, h2): a
// report's h1 is the page's h3, and no heading is more than one level
// below the one before it (axe's heading-order).
type headingLevels struct{}

func (headingLevels) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	prev := 2
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		lvl := min(h.Level+2, 6, prev+1)
		h.Level, prev = lvl, lvl
		return ast.WalkContinue, nil
	})
}
