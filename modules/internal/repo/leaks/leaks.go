// Package leaks finds secrets of known formats with gitleaks' default rules.
// Only the modules that scan for secrets link it (repo.UseKnownSecrets):
// gitleaks' config package and its TOML reader are a few megabytes of
// every module that imports them.
package leaks

import (
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// The secret rules of known formats are gitleaks' default rule set
// (github.com/zricethezav/gitleaks/v8, MIT licence): its config package
// is a dependency (go.mod), the rules are read from the gitleaks.toml it
// embeds (config.DefaultConfig) and compiled by its own config.Translate.
// Updating the rules is updating the module. Its detect package, the
// engine, does not build for wasip1 (it prints with lipgloss and reads
// git, archives and the file system), so its semantics are reproduced
// here, for a file's text already in memory:
//
//   - keywords: a rule with keywords is tried only when one of them is in
//     the text (lower case; an Aho–Corasick automaton finds them all in
//     one pass, as gitleaks does);
//   - the rule's regex runs over the whole text (rules may span lines);
//     the secret is the secretGroup, else the first group that matched,
//     else the match;
//   - entropy: a secret of Shannon entropy <= the rule's is dropped;
//   - allowlists, global then the rule's: regexes against the secret, the
//     match or the line (regexTarget), stopwords in the secret, paths;
//     condition OR, or AND of all the checks an allowlist has;
//   - a line with gitleaks:allow is skipped;
//   - a generic-* finding is dropped when a finding of another rule on the
//     same line holds its secret.
//
// gitleaks' recursive decoding (base64, hex, percent) is not reproduced.
// TestGitleaksRuleSamples runs every rule's own samples (true and false
// positives, cmd/generate/config/rules) through this engine.

// glRules is the compiled rule set, made once per module instance.
type glRules struct {
	rules    []config.Rule // in the order of gitleaks.toml
	global   []*config.Allowlist
	keywords []string // lower case, index = position in the automaton
	trie     *ahocorasick.Trie
	// prefixes are the keywords of the rules of known formats that start
	// a token (ghp_, xoxp, sm_pat, dapi); providers are those that name a
	// provider (telegr, meraki, cloudflare).
	prefixes, providers []string
	loadTime            time.Duration
	err                 error
}

var (
	glOnce sync.Once
	gl     *glRules
)

// gitleaksRules returns the rule set, compiling it on first use
// (GitleaksLoadTime says how long that took).
func gitleaksRules() *glRules {
	glOnce.Do(func() {
		start := time.Now()
		gl = &glRules{}
		v := viper.New()
		v.SetConfigType("toml")
		var vc config.ViperConfig
		if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
			gl.err = err
			return
		}
		if err := v.Unmarshal(&vc); err != nil {
			gl.err = err
			return
		}
		cfg, err := vc.Translate()
		if err != nil {
			gl.err = err
			return
		}
		for _, id := range cfg.OrderedRules {
			if r, ok := cfg.Rules[id]; ok && r.Regex != nil && !r.SkipReport && len(r.RequiredRules) == 0 {
				gl.rules = append(gl.rules, r)
			}
		}
		gl.global = cfg.Allowlists
		for k := range cfg.Keywords {
			gl.keywords = append(gl.keywords, k)
		}
		sort.Strings(gl.keywords)
		for _, r := range gl.rules {
			if strings.Contains(r.RuleID, "generic") {
				continue
			}
			for _, k := range r.Keywords {
				switch {
				case len(k) < 4 || strings.ContainsAny(k, "<=") || strings.HasPrefix(k, "-") || notProvider[k]:
				case strings.Trim(k, "abcdefghijklmnopqrstuvwxyz") == "" && len(k) >= 5:
					gl.providers = append(gl.providers, k)
					gl.prefixes = append(gl.prefixes, k)
				default:
					gl.prefixes = append(gl.prefixes, k)
				}
			}
		}
		gl.trie = ahocorasick.NewTrieBuilder().AddStrings(gl.keywords).Build()
		gl.loadTime = time.Since(start)
	})
	return gl
}

// RuleCount says how many rules the set has and how long compiling them
// took (for tests and benchmarks); the error is why it could not be loaded.
func RuleCount() (int, time.Duration, error) {
	r := gitleaksRules()
	return len(r.rules), r.loadTime, r.err
}

// notProvider are keywords that are words of any secret's name.
var notProvider = map[string]bool{"secret": true, "secret_key": true, "password": true, "token": true, "apikey": true, "bearer": true}

// Rules is gitleaks' default rule set, compiled on first use, for
// repo.UseKnownSecrets.
type Rules struct{}

// Detect runs the rules over text (of file path; starts are its lines'
// offsets) and calls emit for each finding, in the order of the text:
// the rule's id and description, the secret's offsets, the index of the
// line it starts on, and the secret. Generic rules are left out unless
// generic.
func (Rules) Detect(path, text string, starts []int, generic bool, emit func(rule, description string, start, end, line int, secret string)) {
	for _, f := range detect(path, text, starts, generic) {
		emit(f.rule.RuleID, f.rule.Description, f.start, f.end, f.line, f.secret)
	}
}

// Prefixes are the keywords of the rules of known formats that start a
// token (ghp_, xoxp, sm_pat, dapi), lower case.
func (Rules) Prefixes() []string { return gitleaksRules().prefixes }

// Providers are the keywords that name a provider (telegr, meraki,
// cloudflare), lower case.
func (Rules) Providers() []string { return gitleaksRules().providers }

// glFinding is a finding of a gitleaks rule: the secret's bytes in the
// text it was found in.
type glFinding struct {
	rule       *config.Rule
	start, end int // the secret
	line       int // index of the line the secret starts on
	secret     string
}

const gitleaksAllow = "gitleaks:allow"

// detect runs the rules over text (of file path) and returns
// their findings, in the order of the text. Generic rules are left out
// unless generic.
func detect(path, text string, starts []int, withGeneric bool) []glFinding {
	g := gitleaksRules()
	if g.err != nil || text == "" {
		return nil
	}
	lower := strings.ToLower(text)
	present := map[string]bool{}
	for _, m := range g.trie.MatchString(lower) {
		present[m.MatchString()] = true
	}
	lineOf := func(off int) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
	}
	lineText := func(a, b int) string { // the whole lines bytes a..b are on
		ls := strings.LastIndexByte(text[:a], '\n') + 1
		le := strings.IndexByte(text[b:], '\n')
		if le < 0 {
			le = len(text)
		} else {
			le += b
		}
		return text[ls:le]
	}
	if globalPathAllowed(g.global, path) {
		return nil
	}
	var out []glFinding
	for ri := range g.rules {
		r := &g.rules[ri]
		if len(r.Keywords) > 0 {
			hit := false
			for _, k := range r.Keywords {
				if present[k] {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
		}
		if !withGeneric && strings.Contains(r.RuleID, "generic") {
			continue
		}
		if r.Path != nil && !r.Path.MatchString(path) {
			continue
		}
		if rulePathAllowed(r.Allowlists, path) {
			continue
		}
		for _, m := range r.Regex.FindAllStringIndex(text, -1) {
			match := strings.Trim(text[m[0]:m[1]], "\n")
			a := m[0] + strings.Index(text[m[0]:m[1]], match)
			b := a + len(match)
			line := lineText(a, b)
			if strings.Contains(line, gitleaksAllow) {
				continue
			}
			sa, sb := a, b
			if sub := r.Regex.FindStringSubmatchIndex(match); len(sub) >= 4 {
				if r.SecretGroup > 0 {
					if 2*r.SecretGroup+1 >= len(sub) || sub[2*r.SecretGroup] < 0 {
						continue
					}
					sa, sb = a+sub[2*r.SecretGroup], a+sub[2*r.SecretGroup+1]
				} else {
					for gi := 2; gi+1 < len(sub); gi += 2 {
						if sub[gi] >= 0 && sub[gi+1] > sub[gi] {
							sa, sb = a+sub[gi], a+sub[gi+1]
							break
						}
					}
				}
			}
			secret := text[sa:sb]
			if r.Entropy != 0 && shannon(secret) <= r.Entropy {
				continue
			}
			if findingAllowed(g.global, secret, match, line, path) || findingAllowed(r.Allowlists, secret, match, line, path) {
				continue
			}
			// Reported where the secret starts (gitleaks: where the match
			// does), so that the column and the excerpt show it.
			out = append(out, glFinding{rule: r, start: sa, end: sb, line: lineOf(sa), secret: secret})
		}
	}
	// A generic finding gives way to a specific one on its line that holds
	// its secret.
	kept := out[:0:0]
	for _, f := range out {
		drop := false
		if strings.Contains(f.rule.RuleID, "generic") {
			for _, o := range out {
				if o.line == f.line && o.rule != f.rule && !strings.Contains(o.rule.RuleID, "generic") && strings.Contains(o.secret, f.secret) {
					drop = true
					break
				}
			}
		}
		if !drop {
			kept = append(kept, f)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].start < kept[j].start })
	return kept
}

// globalPathAllowed: the global allowlists that allow a whole file by its
// path (OR, or AND with nothing else to check).
func globalPathAllowed(lists []*config.Allowlist, path string) bool {
	return rulePathAllowed(lists, path)
}

func rulePathAllowed(lists []*config.Allowlist, path string) bool {
	if path == "" {
		return false
	}
	for _, a := range lists {
		pathAllowed := a.PathAllowed(path)
		if a.MatchCondition == config.AllowlistMatchAnd {
			if len(a.Regexes) > 0 || len(a.StopWords) > 0 || len(a.Paths) == 0 {
				continue // checked with the finding
			}
			if pathAllowed && len(a.Commits) == 0 {
				return true
			}
			continue
		}
		if pathAllowed {
			return true
		}
	}
	return false
}

// findingAllowed is gitleaks' checkFindingAllowed, without commits.
func findingAllowed(lists []*config.Allowlist, secret, match, line, path string) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		regexAllowed := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			var checks []bool
			if len(a.Commits) > 0 {
				checks = append(checks, false) // there is no commit
			}
			if len(a.Paths) > 0 {
				checks = append(checks, a.PathAllowed(path))
			}
			if len(a.Regexes) > 0 {
				checks = append(checks, regexAllowed)
			}
			if len(a.StopWords) > 0 {
				checks = append(checks, stop)
			}
			all := true
			for _, c := range checks {
				all = all && c
			}
			if all {
				return true
			}
		} else if regexAllowed || stop {
			return true
		}
	}
	return false
}

// shannon is gitleaks' shannonEntropy: over runes, divided by the length
// in bytes.
func shannon(data string) float64 {
	if data == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range data {
		counts[c]++
	}
	inv := 1.0 / float64(len(data))
	e := 0.0
	for _, n := range counts {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	return e
}
