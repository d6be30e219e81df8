package repo

import (
	"path"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// SAST checks a text file for hard-coded secrets (sast_secrets.go: cloud
// keys, tokens with known prefixes, private keys, connection strings with a
// password, password/secret/token assignments in code and configuration)
// and insecure code (sast_code.go: SQL built by formatting, eval, unsafe
// deserialization, shell commands built at run time, disabled TLS checks,
// weak hashes of passwords). Calls are read to their closing parenthesis, so
// a call that spans several lines is checked whole. Go files are parsed
// (go/parser) and their SQL, command and TLS sinks checked on the syntax
// tree, with values followed through the assignments of each function
// (sast_go.go); a Go file that does not parse gets the regular
// expressions. Sources of untrusted
// values per language and Python's unsafe loaders (by full name, imports
// resolved) are tables in sast_taint.go; every finding carries its line
// as Excerpt (secrets masked) and a Fix.
//
// What is not checked (sastPolicyFor): lock files, vendor/ and
// node_modules/; files named as examples or fakes are not checked for
// secrets; translations and minified assets only for tokens of a known
// format.
func SAST(f *File) []sdk.Finding {
	if f.Data == nil {
		return nil
	}
	pol := sastPolicyFor(f.Path)
	if pol.skip {
		return nil
	}
	s := newSastSource(f)
	var out findings
	if pol.secrets != secretsNone {
		scanSecrets(s, pol.secrets, &out)
	}
	if pol.code {
		scanCode(s, &out)
	}
	return out.list()
}

// Which secret rules a file gets.
const (
	secretsNone  = iota
	secretsKnown // tokens of a known format only (not the generic assignment rule)
	secretsAll
)

// sastPolicy is what SAST checks in a file.
type sastPolicy struct {
	skip    bool // nothing
	secrets int
	code    bool
}

// lockFiles are dependency lock files: their hashes are not secrets.
var lockFiles = map[string]bool{
	"package-lock.json": true, "npm-shrinkwrap.json": true, "yarn.lock": true, "pnpm-lock.yaml": true,
	"bun.lock": true, "go.sum": true, "go.work.sum": true, "cargo.lock": true, "poetry.lock": true,
	"pipfile.lock": true, "pdm.lock": true, "uv.lock": true, "composer.lock": true, "gemfile.lock": true,
	"mix.lock": true, "packages.lock.json": true, "flake.lock": true, "pubspec.lock": true,
	"podfile.lock": true, "gradle.lockfile": true, ".terraform.lock.hcl": true, "deno.lock": true,
}

// thirdParty are directories of other people's code.
var thirdParty = map[string]bool{"vendor": true, "node_modules": true, "bower_components": true, "site-packages": true}

// translationDirs hold UI strings.
var translationDirs = map[string]bool{"locales": true, "locale": true, "i18n": true, "l10n": true,
	"translations": true, "lang": true, "langs": true, "messages": true}

// fakeWords in a file's name mark it as an example or a test fixture.
var fakeWords = []string{"fake", "dummy", "example", "sample", "placeholder", "template", "mock"}

func sastPolicyFor(p string) sastPolicy {
	parts := strings.Split(strings.ToLower(p), "/")
	base := parts[len(parts)-1]
	if lockFiles[base] || strings.HasSuffix(base, ".lock") {
		return sastPolicy{skip: true}
	}
	for _, d := range parts[:len(parts)-1] {
		if thirdParty[d] {
			return sastPolicy{skip: true}
		}
	}
	pol := sastPolicy{secrets: secretsAll, code: true}
	for _, w := range fakeWords {
		if strings.Contains(base, w) {
			pol.secrets = secretsNone
		}
	}
	if strings.HasSuffix(base, ".dist") || strings.HasSuffix(base, ".tpl") {
		pol.secrets = secretsNone
	}
	translation := false
	switch path.Ext(base) {
	case ".po", ".pot", ".xliff", ".xlf", ".arb", ".strings", ".resx":
		translation = true
	}
	// a directory named for translations (lang/, locales/) holds strings,
	// but a program in it is still a program (python/lang/security/…)
	isCode := codeLanguages[sastLanguage(p, Language(p))]
	for _, d := range parts[:len(parts)-1] {
		if translationDirs[d] && !isCode {
			translation = true
		}
	}
	if strings.HasPrefix(base, "messages_") && strings.HasSuffix(base, ".properties") {
		translation = true
	}
	minified := strings.Contains(base, ".min.") || strings.HasSuffix(base, ".map") || strings.Contains(base, ".bundle.")
	if translation || minified {
		pol.code = false
		if pol.secrets == secretsAll {
			pol.secrets = secretsKnown
		}
	}
	return pol
}

// sastLanguage is Language, with the formats sast reads told apart.
func sastLanguage(p, lang string) string {
	base := strings.ToLower(path.Base(p))
	ext := path.Ext(base)
	switch {
	case base == "dockerfile" || strings.HasPrefix(base, "dockerfile.") || ext == ".dockerfile" || base == "containerfile":
		return "Dockerfile"
	case base == ".env" || strings.HasPrefix(base, ".env.") || ext == ".env":
		return "Dotenv"
	case base == "makefile" || ext == ".mk":
		return "Makefile"
	case ext == ".tf" || ext == ".tfvars" || ext == ".hcl":
		return "Terraform"
	case ext == ".properties":
		return "Properties"
	case ext == ".cfg" || ext == ".conf" || ext == ".cnf" || ext == ".ini" || base == ".npmrc" || base == ".pypirc" || base == ".netrc" || base == "credentials":
		return "INI"
	case ext == ".kt" || ext == ".kts":
		return "Kotlin"
	case ext == ".cjs" || ext == ".mjs" || ext == ".jsx":
		return "JavaScript"
	case ext == ".mts" || ext == ".cts":
		return "TypeScript"
	case ext == ".zsh" || base == ".bashrc" || base == ".zshrc" || base == ".profile" || base == ".bash_profile":
		return "Shell"
	case ext == ".pem" || ext == ".key" || ext == ".p8" || strings.HasPrefix(base, "id_rsa") || strings.HasPrefix(base, "id_ed25519") || strings.HasPrefix(base, "id_ecdsa"):
		return "Key"
	}
	return lang
}

// codeLanguages are the languages whose values are literals in quotes (an
// unquoted value is an expression); in the others (configuration, shell)
// a value may be bare.
var codeLanguages = map[string]bool{"Go": true, "Python": true, "JavaScript": true, "TypeScript": true,
	"Java": true, "Kotlin": true, "C#": true, "Ruby": true, "PHP": true, "Rust": true, "Scala": true,
	"Swift": true, "C": true, "C++": true, "Lua": true}

// shells are the programs whose -c argument is a command line.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "/bin/sh": true, "/bin/bash": true,
	"/usr/bin/env": true, "cmd": true, "cmd.exe": true, "powershell": true, "pwsh": true}
