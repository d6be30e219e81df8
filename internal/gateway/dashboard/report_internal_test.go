package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
)

// hostileReport is a code review's outputs whose Markdown tries to run a
// script and link to javascript: (issue 30).
const hostileReport = `{
  "markdown": "# Code review\n\nSome *findings*.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) [y](JaVaScRiPt:alert(2)) <javascript:alert(3)> <img src=x onerror=alert(4)>\n\n### Deep\n\n| file | n |\n|:-----|--:|\n| a.go | 2 |\n",
  "findings": [
    {"file": "b.go", "line": 9, "rule": "gofmt", "severity": "info", "message": "not formatted"},
    {"file": "z.go", "line": 1, "rule": "sql-injection", "severity": "error", "message": "query built from input"},
    {"file": "a.go", "line": 12, "rule": "unused", "severity": "warning", "message": "x is unused"},
    {"file": "a.go", "line": 3, "rule": "hardcoded-secret", "severity": "error", "message": "a key <b>in</b> code"}
  ],
  "summary": {"files": 3, "findings": 4},
  "tests": {"tool": "repo-tests"}
}`

// TestUIReportMarkdown: a report's Markdown renders as HTML with its
// headings under the page's, raw HTML escaped, javascript: links dropped,
// no style attributes; its findings sorted by severity, then file and
// line (issue 30).
func TestUIReportMarkdown(t *testing.T) {
	r := readReport(json.RawMessage(hostileReport))
	if r == nil {
		t.Fatal("the outputs are not read as a report")
	}
	h := string(r.HTML)
	if !strings.Contains(h, "<h3>Code review</h3>") || !strings.Contains(h, "<h4>Deep</h4>") || !strings.Contains(h, "<em>findings</em>") {
		t.Errorf("the headings are not the page's h3 and h4 (### after # is one level down): %s", h)
	}
	for _, bad := range []string{"<script", `href="javascript`, "<img", "style=", "onerror"} {
		if strings.Contains(strings.ToLower(h), bad) {
			t.Errorf("the rendered Markdown has %q: %s", bad, h)
		}
	}
	if strings.Count(h, `<a href="">`) != 3 {
		t.Errorf("the 3 javascript: links are not left without their URL: %s", h)
	}
	if !strings.Contains(h, "<table>") || !strings.Contains(h, "<td>a.go</td>") {
		t.Errorf("the Markdown's table is not rendered: %s", h)
	}
	var where []string
	for _, f := range r.Findings {
		where = append(where, f.Severity+" "+f.Where())
	}
	if got, want := strings.Join(where, ", "), "error a.go:3, error z.go:1, warning a.go:12, info b.go:9"; got != want {
		t.Errorf("the findings' order: %s, want %s", got, want)
	}
	if r.Total != 4 || r.More() || !r.HasFindings {
		t.Errorf("the findings' count: %d, more %v", r.Total, r.More())
	}
	// Not a report: a result without Markdown or findings, a string, a
	// list.
	for _, raw := range []string{`{"greeting": "hi"}`, `"# hi"`, `[1]`, `{"markdown": 3}`, ``} {
		if readReport(json.RawMessage(raw)) != nil {
			t.Errorf("%s is read as a report", raw)
		}
	}
	// Findings without Markdown: a report with a table and no text.
	if r := readReport(json.RawMessage(`{"findings": []}`)); r == nil || !r.HasFindings || r.HTML != "" {
		t.Errorf("empty findings: %+v", r)
	}
}
