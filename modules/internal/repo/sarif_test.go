package repo_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

// TestSARIFValid: the SARIF log of a report of the SAST corpus (secrets and
// insecure code, lint findings, odd paths) validates against the SARIF
// 2.1.0 schema (testdata/sarif, see its PROVENANCE), and carries each
// finding's rule, level, location, excerpt and fix.
func TestSARIFValid(t *testing.T) {
	files, _ := loadSASTCorpus(t)
	set := sdk.FindingSet{Tool: "repo-sast", Findings: []sdk.Finding{}}
	for _, f := range files {
		set.Findings = append(set.Findings, repo.SAST(f)...)
	}
	lint := sdk.FindingSet{Tool: "repo-lint", Findings: []sdk.Finding{
		{File: "dir with space/a#b.go", Line: 3, Rule: "gofmt", Severity: sdk.SeverityWarning, Message: "not formatted"},
		{File: "x.go", Line: 0, Rule: "go-parse", Severity: sdk.SeverityInfo, Message: "no line"},
	}}
	rep := repo.NewReport(len(files), []sdk.FindingSet{set, lint})
	out, err := repo.SARIF(rep)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/sarif/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("the SARIF log is not valid: %v", err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID   string `json:"id"`
						Help struct {
							Text string `json:"text"`
						} `json:"help"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
							Snippet     struct {
								Text string `json:"text"`
							} `json:"snippet"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != len(rep.Findings) || len(rep.Findings) < 50 {
		t.Fatalf("version %q, %d runs, findings %d", log.Version, len(log.Runs), len(rep.Findings))
	}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		if r.Help.Text == "" && r.ID != "gofmt" && r.ID != "go-parse" {
			t.Errorf("rule %s has no help", r.ID)
		}
	}
	uris := map[string]bool{}
	for i, r := range log.Runs[0].Results {
		fd := rep.Findings[i]
		loc := r.Locations[0].PhysicalLocation
		uris[loc.ArtifactLocation.URI] = true
		if r.RuleID != fd.Rule || r.Level == "" || fd.Line > 0 && loc.Region.StartLine != fd.Line ||
			fd.Column > 0 && loc.Region.StartColumn != fd.Column || loc.Region.Snippet.Text != fd.Excerpt {
			t.Errorf("result %d %+v of %+v", i, r, fd)
		}
	}
	if !uris["dir%20with%20space/a%23b.go"] {
		t.Errorf("paths are not URI references: %v", uris)
	}
}
