package repo

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestSecretLayouts lays one true positive of each gitleaks rule (its own
// sample's secret, testdata/secrets/samples.jsonl) in each of the layouts
// gitleaks' sample generator writes (utils.GenerateSampleSecrets, and the
// ones it lists as not written yet: XML elements and attributes, escaped JSON, name/value pairs,
// ??=, +=, URL query parameters and basic auth), and requires repo-sast to
// find at least 90% of the secrets in every layout.
func TestSecretLayouts(t *testing.T) {
	tmpl := map[string]string{
		"ini-q1": "{i}Token=\"{s}\"", "ini-q2": "{i}Token = \"{s}\"", "ini-u1": "{i}Token={s}", "ini-u2": "{i}Token = {s}",
		"json": "{\n    \"{i}_token\": \"{s}\"\n}", "json-esc-nl": `{"config.ini": "{I}_TOKEN={s}\nBACKUP_ENABLED=true"}`,
		"xml-multi": "<{i}Token>\n    {s}\n</{i}Token>", "xml-el": "<{i}Token>{s}</{i}Token>",
		"xml-attr": "<entry name=\"{i}Token\" value=\"{s}\" />",
		"yaml-u":   "{i}_token: {s}", "yaml-sq": "{i}_token: '{s}'", "yaml-dq": "{i}_token: \"{s}\"",
		"cs": `string {i}Token = "{s}";`, "go": `var {i}Token string = "{s}"`, "go-short": `{i}Token := "{s}"`, "go-bt": "{i}Token := `{s}`",
		"java": "String {i}Token = \"{s}\";", "kotlin": "var {i}Token = \"{s}\"", "php-concat": `${i}Token .= "{s}"`, "php-nc": `${i}Token ??= "{s}"`,
		"py-sq": "{i}Token = '{s}'", "py-dq": `{i}Token = "{s}"`, "url-basic": `https://{i}:{s}@example.com/`, "url-q": "https://example.com?{i}Token={s}&fooBar=baz",
		"setprop": `System.setProperty("{I}_TOKEN", "{s}")`, "logstash": "  \"{i}Token\" => \"{s}\"",
		"make-rec": "{i}_TOKEN = \"{s}\"", "make-simple": "{i}_TOKEN := \"{s}\"", "make-shell": "{i}_TOKEN ::= \"{s}\"", "make-eval": "{i}_TOKEN :::= \"{s}\"", "make-cond": "{i}_TOKEN ?= \"{s}\"", "make-append": "{i}_TOKEN += \"{s}\"",
		"json-esc": "\\{\n    \\\"{i}_token\\\": \\\"{s}\\\"\n\\}",
		"kv-json":  "{\n    \"name\": \"{i}_token\",\n    \"value\": \"{s}\"\n}",
	}
	f, err := os.Open("testdata/secrets/samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	miss := map[string]int{}
	total := map[string]int{}
	seen := map[string]bool{}
	for sc.Scan() {
		var s struct {
			Rule, Regex, Text string
			TP                bool
			SecretGroup       int `json:"secret_group"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if !s.TP || seen[s.Rule] {
			continue
		}
		text := strings.ReplaceAll(s.Text, "@@", "")
		re := regexp.MustCompile(s.Regex)
		m := re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		sec := m[0]
		if s.SecretGroup > 0 && s.SecretGroup < len(m) {
			sec = m[s.SecretGroup]
		} else if !strings.Contains(s.Regex, "(?P<") {
			for _, g := range m[1:] {
				if g != "" {
					sec = g
					break
				}
			}
		}
		if strings.ContainsAny(sec, "\n\"'") || len(sec) < 8 {
			continue
		}
		seen[s.Rule] = true
		fam, _, _ := strings.Cut(s.Rule, "-")
		for name, tp := range tmpl {
			body := strings.NewReplacer("{i}", fam, "{I}", strings.ToUpper(fam), "{s}", sec).Replace(tp)
			total[name]++
			got := SAST(&File{Path: "conf/file.txt", Language: "Text", Data: []byte(body + "\n")})
			if len(got) == 0 {
				miss[name]++
				if name == os.Getenv("WARD_SHOW_LAYOUT") {
					t.Logf("%s: %s", s.Rule, body)
				}
			}
		}
	}
	var names []string
	for n := range total {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := 1 - float64(miss[n])/float64(total[n])
		t.Logf("%-12s recall %.2f (%d/%d)", n, r, total[n]-miss[n], total[n])
		if r < 0.9 || total[n] < 150 {
			t.Errorf("layout %s: %d of %d secrets found", n, total[n]-miss[n], total[n])
		}
	}
}
