package repo

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"unicode/utf8"

	"github.com/ward-run/ward/modules/sdk"
)

// DefaultMaxLineLength is the longest line repo-lint allows by default.
const DefaultMaxLineLength = 120

// maxPerRule caps the findings of one rule in one file: past it, one more
// finding says how many were left out.
const maxPerRule = 20

// maxCodePerRule is maxPerRule for the insecure-code rules (codeFixes):
// each is a call to fix, and a file of many (a data-access module) should
// show them all.
const maxCodePerRule = 200

// Lint checks a text file: every file for trailing white space, a missing
// final newline, CRLF line endings and lines over maxLine characters; Go
// files for parse errors and gofmt differences.
func Lint(f *File, maxLine int) []sdk.Finding {
	if f.Data == nil {
		return nil
	}
	if maxLine <= 0 {
		maxLine = DefaultMaxLineLength
	}
	var out findings
	data := f.Data
	crlf, firstCRLF := 0, 0
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		n := i + 1
		if len(line) == 0 {
			break
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if bytes.HasSuffix(body, []byte("\r")) {
			if crlf++; crlf == 1 {
				firstCRLF = n
			}
			body = body[:len(body)-1]
		}
		if trimmed := bytes.TrimRight(body, " \t"); len(trimmed) < len(body) {
			out.add(f.Path, n, len(trimmed)+1, "trailing-whitespace", sdk.SeverityWarning, "trailing white space")
		}
		if l := utf8.RuneCount(body); l > maxLine {
			out.add(f.Path, n, maxLine+1, "line-too-long", sdk.SeverityInfo, fmt.Sprintf("line is %d characters long (limit %d)", l, maxLine))
		}
	}
	if crlf > 0 {
		out.add(f.Path, firstCRLF, 0, "crlf", sdk.SeverityWarning, fmt.Sprintf("CRLF line endings (%d lines)", crlf))
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		out.add(f.Path, bytes.Count(data, []byte("\n"))+1, 0, "missing-final-newline", sdk.SeverityWarning, "no newline at the end of the file")
	}
	if f.Language == "Go" {
		lintGo(f, &out)
	}
	return out.list()
}

// gofmtConfig is go/format's printer configuration (gofmt's), with its
// mode that normalizes number literals: go/printer's normalizeNumbers,
// 1<<30, which go/format sets by its value too ("keep these in sync with
// go/printer/printer.go"). TestLintGofmtIsFormatSource compares.
var gofmtConfig = printer.Config{Mode: printer.UseSpaces | printer.TabIndent | 1<<30, Tabwidth: 8}

func lintGo(f *File, out *findings) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f.Path, f.Data, parser.ParseComments)
	if err != nil {
		// Only the first error: the ones after it mostly follow from it.
		if list, ok := err.(scanner.ErrorList); ok && len(list) > 0 {
			e := list[0]
			out.add(f.Path, e.Pos.Line, e.Pos.Column, "go-parse", sdk.SeverityError, e.Msg)
		} else {
			out.add(f.Path, 1, 0, "go-parse", sdk.SeverityError, err.Error())
		}
		return
	}
	// gofmt's output is go/format.Source's: the file as parsed, its
	// imports sorted, printed with gofmtConfig. The file parsed above is
	// that parse (printing reads no object resolution), not parsed twice.
	ast.SortImports(fset, file)
	var buf bytes.Buffer
	if err := gofmtConfig.Fprint(&buf, fset, file); err != nil || bytes.Equal(buf.Bytes(), f.Data) {
		return
	}
	formatted := buf.Bytes()
	line := 1
	a, b := f.Data, formatted
	for len(a) > 0 && len(b) > 0 {
		la, ra, _ := bytes.Cut(a, []byte("\n"))
		lb, rb, _ := bytes.Cut(b, []byte("\n"))
		if !bytes.Equal(la, lb) {
			break
		}
		line++
		a, b = ra, rb
	}
	out.add(f.Path, line, 0, "gofmt", sdk.SeverityWarning, "file is not gofmt-formatted (run gofmt -w)")
}

// findings collects findings, at most maxPerRule per rule.
type findings struct {
	all     []sdk.Finding
	perRule map[string]int
}

func (fs *findings) add(file string, line, col int, rule, severity, msg string) {
	fs.addFinding(sdk.Finding{File: file, Line: line, Column: col, Rule: rule, Severity: severity, Message: msg})
}

// addFinding adds a finding with its excerpt and fix.
func (fs *findings) addFinding(f sdk.Finding) {
	file, line, rule := f.File, f.Line, f.Rule
	if fs.perRule == nil {
		fs.perRule = map[string]int{}
	}
	fs.perRule[rule]++
	limit := maxPerRule
	if codeFixes[rule] != "" {
		limit = maxCodePerRule
	}
	switch n := fs.perRule[rule]; {
	case n <= limit:
		fs.all = append(fs.all, f)
	case n == limit+1:
		fs.all = append(fs.all, sdk.Finding{File: file, Line: line, Rule: rule, Severity: sdk.SeverityInfo,
			Message: fmt.Sprintf("more %s findings in this file are not listed", rule)})
	}
}

func (fs *findings) list() []sdk.Finding { return fs.all }
