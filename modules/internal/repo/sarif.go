package repo

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the
// format code hosts (GitHub code scanning, GitLab) and IDEs read: a
// report's findings as one run of the tool "Ward", its rules in
// tool.driver.rules with the fix as their help.

// SARIFSchemaURI is the schema a SARIF log names.
const SARIFSchemaURI = "https://json.schemastore.org/sarif-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	ShortDescription     sarifText    `json:"shortDescription"`
	Help                 *sarifText   `json:"help,omitempty"`
	DefaultConfiguration sarifDefault `json:"defaultConfiguration"`
}

type sarifDefault struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int        `json:"startLine"`
	StartColumn int        `json:"startColumn,omitempty"`
	Snippet     *sarifText `json:"snippet,omitempty"`
}

// sarifLevels are SARIF's levels of Ward's severities.
var sarifLevels = map[string]string{sdk.SeverityError: "error", sdk.SeverityWarning: "warning", sdk.SeverityInfo: "note"}

// ruleDescriptions describe the rules whose findings' messages say more
// than the rule; a rule not here is described by its first message up to
// a colon (a secret's messages end with its masked value).
var ruleDescriptions = map[string]string{
	"sql-injection":          "SQL built from values at run time is run (SQL injection)",
	"code-injection":         "Code built at run time is evaluated (code injection)",
	"unsafe-deserialization": "Data is loaded by a deserializer that can build arbitrary objects or run code",
	"shell-injection":        "A shell runs a command built at run time (command injection)",
	"tls-verify-disabled":    "Certificate or hostname checks are turned off",
	"weak-hash":              "MD5 or SHA-1 is used for a password",
	"private-key":            "A private key is in the repository",
	"gofmt":                  "A Go file is not gofmt-formatted",
	"go-parse":               "A Go file does not parse",
}

// SARIF renders a report as a SARIF 2.1.0 log.
func SARIF(rep sdk.Report) ([]byte, error) {
	driver := sarifDriver{Name: "Ward", InformationURI: "https://github.com/ward-run/ward", Rules: []sarifRule{}}
	index := map[string]int{}
	results := []sarifResult{}
	for _, f := range rep.Findings {
		level := sarifLevels[f.Severity]
		if level == "" {
			level = "warning"
		}
		i, ok := index[f.Rule]
		if !ok {
			i = len(driver.Rules)
			index[f.Rule] = i
			desc := ruleDescriptions[f.Rule]
			if desc == "" {
				desc, _, _ = strings.Cut(f.Message, ": ")
			}
			r := sarifRule{ID: f.Rule, ShortDescription: sarifText{desc}, DefaultConfiguration: sarifDefault{level}}
			if f.Fix != "" {
				r.Help = &sarifText{f.Fix}
			}
			driver.Rules = append(driver.Rules, r)
		}
		loc := sarifPhysical{ArtifactLocation: sarifArtifact{URI: sarifURI(f.File)}}
		if f.Line > 0 {
			loc.Region = &sarifRegion{StartLine: f.Line, StartColumn: max(0, f.Column)}
			if f.Excerpt != "" {
				loc.Region.Snippet = &sarifText{f.Excerpt}
			}
		}
		results = append(results, sarifResult{RuleID: f.Rule, RuleIndex: i, Level: level, Message: sarifText{f.Message},
			Locations: []sarifLocation{{PhysicalLocation: loc}}})
	}
	return json.MarshalIndent(sarifLog{Schema: SARIFSchemaURI, Version: "2.1.0",
		Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, Results: results}}}, "", "  ")
}

// sarifURI is a repository path as a relative URI reference.
func sarifURI(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "./"), "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
