// Command gen builds Ward's secrets corpus (../corpus, ../LABELS,
// ../samples.jsonl) from gitleaks' rule samples: the true and false
// positives each rule of github.com/zricethezav/gitleaks/v8
// (cmd/generate/config/rules, MIT licence) is validated with. It runs
// gitleaks' own config generator, at the version in Ward's go.mod, with
// validate.go.overlay in place of its utils/validate.go,
// so that every rule's samples are written out instead of checked. Then
// each true positive's secret (the rule's secretGroup, as gitleaks reads
// it) is laid into the files where secrets sit in repositories: .env,
// XML elements and attributes, Makefiles (=, :=, ::=, ?=), PHP (=, .=),
// Java (System.setProperty), JSON, JSON escaped in a ConfigMap, YAML,
// https://user:secret@host URLs, and the sample's own text; each false
// positive is laid as its own text. Run it from the repository root:
//
//	go run ./modules/internal/repo/testdata/secrets/gen
//
// Secrets are written split by @@ (the corpus test joins them), so that
// secret scanners and push protection leave the corpus alone.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

type sample struct {
	Rule        string `json:"rule"`
	Regex       string `json:"regex"`
	SecretGroup int    `json:"secret_group,omitempty"`
	TP          bool   `json:"tp"`
	Text        string `json:"text"`
	Path        string `json:"path,omitempty"`
}

const (
	out     = "modules/internal/repo/testdata/secrets"
	perFile = 8
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	var mod struct{ Version, Dir string }
	b, err := exec.Command("go", "list", "-m", "-json", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	if err := json.Unmarshal(b, &mod); err != nil {
		return err
	}
	samples, err := extract(mod.Version, mod.Dir)
	if err != nil {
		return err
	}
	return layout(mod.Version, samples)
}

// extract runs gitleaks' generator with the recording Validate.
func extract(version, dir string) ([]sample, error) {
	tmp, err := os.MkdirTemp("", "ward-gitleaks-samples")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// Go takes no overlay of the module cache: the generator's packages
	// are copied into a module of their own, validate.go replaced.
	overlay, err := os.ReadFile(filepath.Join(out, "gen", "validate.go.overlay"))
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "cmd", "generate")
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".tmpl") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == filepath.Join("config", "utils", "validate.go") {
			b = overlay
		}
		b = bytes.ReplaceAll(b, []byte(`"github.com/zricethezav/gitleaks/v8/cmd/generate/`), []byte(`"samples/`))
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	})
	if err != nil {
		return nil, err
	}
	gomod := "module samples\n\ngo 1.24\n\nrequire github.com/zricethezav/gitleaks/v8 " + version + "\n"
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	jsonl := filepath.Join(tmp, "samples.jsonl")
	cmd := exec.Command("go", "run", ".", filepath.Join(tmp, "gitleaks.toml"))
	cmd.Dir = filepath.Join(tmp, "config")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "WARD_SAMPLES="+jsonl, "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gitleaks generator: %w", err)
	}
	f, err := os.Open(jsonl)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []sample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	return all, sc.Err()
}

// secretsOf are the secrets the rule's regex finds in text (as gitleaks
// reads them: secretGroup, else the first group that matched), as byte
// ranges of the match and of the secret.
func secretsOf(re *regexp.Regexp, group int, text string) [][4]int {
	var r [][4]int
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		a, b := m[0], m[1]
		sa, sb := a, b
		if group > 0 && 2*group+1 < len(m) && m[2*group] >= 0 {
			sa, sb = m[2*group], m[2*group+1]
		} else if group == 0 && !strings.Contains(re.String(), "(?P<") { // named groups name parts (jwt-base64)
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 && m[g+1] > m[g] {
					sa, sb = m[g], m[g+1]
					break
				}
			}
		}
		if sb-sa >= 8 {
			r = append(r, [4]int{a, b, sa, sb})
		}
	}
	return r
}

// split puts @@ into a secret.
func split(s string) string {
	if len(s) < 8 {
		return s
	}
	return s[:4] + "@@" + s[4:]
}

// file is a corpus file being written, with its labels.
type file struct {
	path   string
	lines  []string
	labels []string
}

func (f *file) add(text string) int { // returns the first line's number
	n := len(f.lines) + 1
	f.lines = append(f.lines, strings.Split(text, "\n")...)
	return n
}

func (f *file) label(kind string, from, to int, family, class, rule string) {
	f.labels = append(f.labels, fmt.Sprintf("%s\t%s:%d-%d\t%s\t%s\t%s", kind, f.path, from, to, family, class, rule))
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// family is a rule's provider: its id up to the first dash, with the
// vendor names gitleaks spells in two words joined.
func family(rule string) string {
	f, _, _ := strings.Cut(rule, "-")
	return f
}

func names(rule string) (upper, lower, camel string) {
	words := strings.Split(nonWord.ReplaceAllString(rule, " "), " ")
	var c strings.Builder
	for i, w := range words {
		if i == 0 {
			c.WriteString(strings.ToLower(w))
		} else if w != "" {
			c.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
		}
	}
	return strings.ToUpper(strings.Join(words, "_")), strings.ToLower(strings.Join(words, "_")), c.String()
}

// classes are the layouts of a secret; each true positive gets its own
// text and the next layout in turn.
var classes = []string{"env", "xml-element", "makefile", "php", "java", "json", "json-escaped", "yaml", "xml-attribute", "uri"}

func layout(version string, samples []sample) error {
	if err := os.RemoveAll(filepath.Join(out, "corpus")); err != nil {
		return err
	}
	files := map[string]*file{}
	// At most perFile labels a file (a finding list caps the findings of
	// one rule in a file): notes.md, notes-2.md, …
	part := map[string]int{}
	var get func(p string) *file
	get = func(p string) *file {
		q := p
		if part[p] > 1 {
			ext := filepath.Ext(p)
			if strings.HasPrefix(filepath.Base(p), ".") {
				ext = ""
			}
			q = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(p, ext), part[p], ext)
		}
		if f := files[q]; f != nil && len(f.labels) < perFile {
			return f
		} else if f != nil {
			part[p]++
			return get(p)
		}
		if part[p] == 0 {
			part[p] = 1
		}
		files[q] = &file{path: q}
		return files[q]
	}
	var kept []sample
	turn := 0
	count := map[string]int{}
	seen := map[string]bool{}
	// A rule's false positive that is another rule's true positive (the
	// Cloudflare rules share samples so) is no negative.
	tpText := map[string]bool{}
	for _, s := range samples {
		if s.TP {
			tpText[strings.TrimSpace(s.Text)] = true
		}
	}
	for _, s := range samples {
		if !s.TP && tpText[strings.TrimSpace(s.Text)] {
			continue
		}
		if strings.Contains(s.Text, "@@") || s.Regex == "" {
			continue
		}
		re, err := regexp.Compile(s.Regex)
		if err != nil {
			continue // a pattern Go's regexp does not take (none in v8.30)
		}
		fam := family(s.Rule)
		if !s.TP {
			// A false positive, as its own text, in its family's file.
			f := get(fam + "/code.txt")
			if len(f.lines) > 0 {
				f.add("#") // not blank: a pattern that runs over line ends stops here
			}
			from := f.add(s.Text)
			f.label("negative", from, len(f.lines), fam, "sample-text", s.Rule)
			kept = append(kept, s)
			count["negative"]++
			continue
		}
		found := secretsOf(re, s.SecretGroup, s.Text)
		if len(found) == 0 {
			continue
		}
		// gitleaks writes one secret in some thirty layouts
		// (utils.GenerateSampleSecrets): it is laid out once.
		key := s.Rule + "\x00" + s.Text[found[0][2]:found[0][3]]
		if seen[key] {
			continue
		}
		seen[key] = true
		// The sample as written, secrets split.
		text := s.Text
		for i := len(found) - 1; i >= 0; i-- {
			text = text[:found[i][2]] + split(text[found[i][2]:found[i][3]]) + text[found[i][3]:]
		}
		kept = append(kept, sample{Rule: s.Rule, Regex: s.Regex, SecretGroup: s.SecretGroup, TP: true, Text: text, Path: s.Path})
		if s.Path != "" {
			continue // a rule about file names (pkcs12-file): not laid out
		}
		f := get(fam + "/notes.md")
		if len(f.lines) > 0 {
			f.add("#") // not blank: a pattern that runs over line ends stops here
		}
		base := f.add(text)
		for _, m := range found {
			from := base + strings.Count(s.Text[:m[0]], "\n")
			to := base + strings.Count(s.Text[:m[3]], "\n")
			f.label("secret", from, to, fam, "sample-text", s.Rule)
			count["secret"]++
		}
		// The secret again, laid out as a configuration or code file holds it.
		secret := s.Text[found[0][2]:found[0][3]]
		if strings.ContainsAny(secret, "\n\"'<>&\\") {
			continue // multi-line (keys) or not a value these layouts take
		}
		class := classes[turn%len(classes)]
		turn++
		up, low, camel := names(s.Rule)
		sp := split(secret)
		var p, line string
		switch class {
		case "env":
			p, line = fam+"/.env", up+"="+sp
		case "xml-element":
			p, line = fam+"/config.xml", "  <"+camel+">"+sp+"</"+camel+">"
		case "xml-attribute":
			p, line = fam+"/web.config", `    <add key="`+camel+`" value="`+sp+`" />`
		case "makefile":
			op := []string{"?=", "::=", ":=", "="}[turn/len(classes)%4]
			p, line = fam+"/Makefile", up+" "+op+" "+sp
		case "php":
			if turn/len(classes)%2 == 0 {
				p, line = fam+"/config.php", "$"+camel+" .= '"+sp+"';"
			} else {
				p, line = fam+"/config.php", "$config['"+low+"'] = \""+sp+"\";"
			}
		case "java":
			p, line = fam+"/Bootstrap.java", `        System.setProperty("`+strings.ReplaceAll(low, "_", ".")+`", "`+sp+`");`
		case "json":
			p, line = fam+"/settings.json", `  "`+camel+`": "`+sp+`",`
		case "json-escaped":
			p, line = fam+"/configmap.yaml", `  settings.json: "{\"`+camel+`\": \"`+sp+`\", \"debug\": false}"`
		case "yaml":
			p, line = fam+"/values.yaml", low+": "+sp
		case "uri":
			if strings.ContainsAny(secret, "@/:?#") {
				p, line = fam+"/.env", up+"="+sp
				class = "env"
			} else {
				p, line = fam+"/application.properties", low+".url=https://deploy:"+sp+"@"+fam+".internal.example.net/api"
			}
		}
		f = get(p)
		n := f.add(line)
		f.label("secret", n, n, fam, class, s.Rule)
		count["secret"]++
	}
	// Write the files, LABELS and samples.jsonl.
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var labels bytes.Buffer
	labels.WriteString("# Ward's secrets corpus, generated by gen/ from gitleaks " + version + "'s rule samples (see PROVENANCE.md).\n")
	labels.WriteString("# kind\tfile:lines\tfamily\tclass\tgitleaks rule\n")
	for _, p := range paths {
		f := files[p]
		body := strings.Join(f.lines, "\n") + "\n"
		switch filepath.Ext(p) {
		case ".xml":
			body = "<?xml version=\"1.0\"?>\n<configuration>\n" + body + "</configuration>\n"
			shift(f, 2)
		case ".config":
			body = "<configuration>\n  <appSettings>\n" + body + "  </appSettings>\n</configuration>\n"
			shift(f, 2)
		case ".java":
			body = "public class Bootstrap {\n    static {\n" + body + "    }\n}\n"
			shift(f, 2)
		case ".json":
			body = "{\n" + body + "  \"debug\": false\n}\n"
			shift(f, 1)
		case ".php":
			body = "<?php\n" + body
			shift(f, 1)
		}
		if strings.HasSuffix(p, "configmap.yaml") {
			body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n" + body
			shift(f, 5)
		}
		full := filepath.Join(out, "corpus", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			return err
		}
		for _, l := range f.labels {
			labels.WriteString(l + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(out, "LABELS"), labels.Bytes(), 0o644); err != nil {
		return err
	}
	var js bytes.Buffer
	for _, s := range kept {
		b, _ := json.Marshal(s)
		js.Write(append(b, '\n'))
	}
	if err := os.WriteFile(filepath.Join(out, "samples.jsonl"), js.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: gitleaks %s: %d samples, %d files, %d secrets, %d negatives\n", version, len(kept), len(paths), count["secret"], count["negative"])
	return nil
}

// shift moves a file's labels down by n lines (a header written above).
func shift(f *file, n int) {
	for i, l := range f.labels {
		parts := strings.Split(l, "\t")
		p, lines, _ := strings.Cut(parts[1], ":")
		var a, b int
		fmt.Sscanf(lines, "%d-%d", &a, &b)
		parts[1] = fmt.Sprintf("%s:%d-%d", p, a+n, b+n)
		f.labels[i] = strings.Join(parts, "\t")
	}
}
