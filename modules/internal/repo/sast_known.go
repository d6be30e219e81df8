package repo

import (
	"strings"
	"sync"
)

// KnownSecretRules finds secrets of known formats: gitleaks' default rules
// (package leaks, whose Rules is one). A module that scans for secrets
// links them with UseKnownSecrets; the others carry none of gitleaks.
type KnownSecretRules interface {
	// Detect calls emit for each finding in text (of file path; starts
	// are its lines' offsets), in the order of the text; generic rules
	// only with generic.
	Detect(path, text string, starts []int, generic bool, emit func(rule, description string, start, end, line int, secret string))
	// Prefixes are the lower-case keywords that start a known format's
	// tokens; Providers those that name a provider.
	Prefixes() []string
	Providers() []string
}

var (
	knownMu    sync.RWMutex
	knownRules KnownSecretRules
)

// UseKnownSecrets makes SAST find secrets of known formats with r. A
// module that runs SAST must call it first (repo-sast, repo-report):
// SAST panics without, rather than report no secrets.
func UseKnownSecrets(r KnownSecretRules) {
	knownMu.Lock()
	defer knownMu.Unlock()
	knownRules = r
}

func known() KnownSecretRules {
	knownMu.RLock()
	defer knownMu.RUnlock()
	if knownRules == nil {
		panic("repo: SAST without the rules of known secret formats: call repo.UseKnownSecrets(leaks.Rules{}) first")
	}
	return knownRules
}

// glFinding is a finding of a known format's rule: the secret's bytes in
// the text it was found in.
type glFinding struct {
	ruleID, description string
	start, end          int // the secret
	line                int // index of the line the secret starts on
	secret              string
}

// detectKnown runs the rules of known formats over text.
func detectKnown(path, text string, starts []int, generic bool) []glFinding {
	var out []glFinding
	known().Detect(path, text, starts, generic, func(rule, description string, start, end, line int, secret string) {
		out = append(out, glFinding{ruleID: rule, description: description, start: start, end: end, line: line, secret: secret})
	})
	return out
}

// malformedToken reports a generic finding that a rule of a known format
// had its chance at: a value that starts as that format's tokens do (a
// slack xoxp-, a databricks dapi) or a name that says the provider
// (telegram_bot_token; only byName, for gitleaks' generic rule: Ward's
// judges the value), where the provider's rule found nothing. It is a
// malformed token, a truncated one or a placeholder, not a secret of
// unknown format.
func malformedToken(name, value string, byName bool) bool {
	r := known()
	lv := strings.ToLower(value)
	for _, k := range r.Prefixes() {
		if strings.HasPrefix(lv, k) {
			return true
		}
	}
	if !byName {
		return false
	}
	for _, w := range identWords(name) {
		for _, k := range r.Providers() {
			if strings.HasPrefix(w, k) {
				return true
			}
		}
	}
	return false
}
