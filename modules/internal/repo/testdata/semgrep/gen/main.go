// Command gen copies semgrep-rules' annotated test files for the rules of
// the six insecure-code classes TestSemgrepCorpus measures into
// testdata/semgrep, with classes.tsv (rule id, class, rule file) and the
// rules' LICENSE. Run from modules/internal/repo:
//
//	go run ./testdata/semgrep/gen -mirror /path/to/semgrep-rules.git
//
// -mirror is a git directory (bare or not) of
// github.com/semgrep/semgrep-rules; -rev the commit to read (HEAD).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	mirror = flag.String("mirror", "/work/.mirror/semgrep+semgrep-rules/repo", "semgrep-rules git directory")
	rev    = flag.String("rev", "HEAD", "commit to read")
	out    = flag.String("out", "testdata/semgrep", "where to write")
	list   = flag.Bool("n", false, "print the selection, write nothing")
)

// languages are the rule directories read and the test files' extensions.
var languages = map[string][]string{
	"python":     {".py"},
	"javascript": {".js", ".jsx", ".ts", ".tsx"},
	"go":         {".go"},
}

type rule struct {
	ID       string         `yaml:"id"`
	Message  string         `yaml:"message"`
	Metadata map[string]any `yaml:"metadata"`
}

var cweRe = regexp.MustCompile(`CWE-(\d+)`)

// overrides are rules whose CWE misleads: the class their sink is in, or
// "-" for a rule outside the six classes (a CWE-94 or CWE-502 that is not
// eval, exec or a deserializer).
var overrides = map[string]string{
	"go/lang/security/audit/dangerous-exec-cmd.yaml":                                  "command", // exec.Cmd of a tainted program
	"go/lang/security/audit/dangerous-exec-command.yaml":                              "command",
	"go/lang/security/audit/dangerous-syscall-exec.yaml":                              "command",
	"javascript/sequelize/security/audit/sequelize-tls-disabled-cert-validation.yaml": "tls",
	"javascript/grpc/security/grpc-nodejs-insecure-connection.yaml":                   "-", // plaintext gRPC
	"javascript/playwright/security/audit/playwright-exposed-chrome-devtools.yaml":    "-", // a debugging port
	"javascript/puppeteer/security/audit/puppeteer-exposed-chrome-devtools.yaml":      "-",
	"javascript/lang/security/audit/detect-non-literal-require.yaml":                  "-", // require, not eval
	"javascript/lang/security/audit/unsafe-dynamic-method.yaml":                       "-", // obj[name](), not eval
	"python/lang/security/audit/dangerous-annotations-usage.yaml":                     "-", // annotations, not eval
}

// classify maps a rule to one of the six classes by its CWE, or "".
// Weak hashes count only where the rule is about passwords (md5 or sha1
// used as a password hash), not every weak-algorithm rule.
func classify(r rule) string {
	cwes := map[string]bool{}
	for _, m := range cweRe.FindAllStringSubmatch(fmt.Sprint(r.Metadata["cwe"]), -1) {
		cwes[m[1]] = true
	}
	text := strings.ToLower(r.ID + " " + r.Message)
	switch {
	case cwes["89"]:
		return "sql"
	case cwes["78"]:
		return "command"
	case cwes["502"]:
		return "deserialization"
	case cwes["295"]:
		return "tls"
	case cwes["94"] || cwes["95"]:
		return "code"
	case (cwes["327"] || cwes["328"] || cwes["916"]) && strings.Contains(text, "password") &&
		(strings.Contains(text, "md5") || strings.Contains(text, "sha1") || strings.Contains(text, "sha-1")):
		return "weak-hash"
	}
	return ""
}

func git(args ...string) []byte {
	cmd := exec.Command("git", append([]string{"-C", *mirror}, args...)...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return b
}

func main() {
	flag.Parse()
	commit := strings.TrimSpace(string(git("rev-parse", *rev)))
	files := strings.Split(strings.TrimSpace(string(git("ls-tree", "-r", "--name-only", commit))), "\n")
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	var tsv []string
	var copied []string
	for _, f := range files {
		top, _, _ := strings.Cut(f, "/")
		exts := languages[top]
		if exts == nil || !(strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml")) {
			continue
		}
		var doc struct {
			Rules []rule `yaml:"rules"`
		}
		if err := yaml.Unmarshal(git("show", commit+":"+f), &doc); err != nil {
			log.Printf("%s: %v (skipped)", f, err)
			continue
		}
		base := strings.TrimSuffix(f, path.Ext(f))
		var tests []string
		for _, e := range exts {
			if have[base+e] {
				tests = append(tests, base+e)
			}
		}
		if len(tests) == 0 {
			continue
		}
		any := false
		for _, r := range doc.Rules {
			c := classify(r)
			if o, ok := overrides[f]; ok {
				c = strings.TrimPrefix(o, "-")
			}
			if c != "" {
				tsv = append(tsv, r.ID+"\t"+c+"\t"+f)
				any = true
			}
		}
		if any {
			copied = append(copied, tests...)
		}
	}
	slices.Sort(tsv)
	if *list {
		fmt.Println(strings.Join(tsv, "\n"))
		fmt.Println(strings.Join(copied, "\n"))
		return
	}
	for _, t := range copied {
		dst := filepath.Join(*out, filepath.FromSlash(t))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(dst, git("show", commit+":"+t), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# semgrep-rules %s: rule id, Ward class, rule file (written by gen)\n", commit)
	b.WriteString(strings.Join(tsv, "\n") + "\n")
	if err := os.WriteFile(filepath.Join(*out, "classes.tsv"), b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "LICENSE"), git("show", commit+":LICENSE"), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d rules, %d test files", commit, len(tsv), len(copied))
}
