package repo

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ward-run/ward/modules/sdk"
)

// secretRule is a token of a known format. Most are ported from gitleaks'
// default rules (github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT
// licence): the gitleaks rule ids are given beside each.
type secretRule struct {
	id, desc string
	severity string
	// keywords: a line holds one of them (lower case) or the rule is not
	// tried; none means always.
	keywords []string
	re       *regexp.Regexp // the first group that matched is the secret, else all of the match
	// ok, when set, must accept the secret.
	ok func(secret string, s *secretView) bool
	// severityOf, when set, overrides severity.
	severityOf func(secret string) string
}

var secretRules = []secretRule{
	// Ward's own, beside gitleaks' rules (package leaks, sast_known.go), which have no
	// rule for these.
	{id: "gcp-service-account", desc: "GCP service account private key", keywords: []string{"private_key"},
		re: regexp.MustCompile(`"private_key"\s*:\s*"(-----BEGIN (?:RSA )?PRIVATE KEY-----\\n[A-Za-z0-9+/=]{20,})`),
		ok: func(_ string, s *secretView) bool { return strings.Contains(s.text, "service_account") }},
	// gitleaks (v7): aws-secret-key; the 40 characters after a name that
	// says AWS secret, quoted or not (an env file's AWS_SECRET_ACCESS_KEY=…).
	{id: "aws-secret-access-key", desc: "AWS secret access key", keywords: []string{"secret", "aws"},
		re: regexp.MustCompile(`(?i)(?:aws[\w.\-]{0,20}?(?:secret|_sk\b)|secret_?access)[\w.\-]{0,20}?["']?\s*(?::=|=>|=|:)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
		ok: func(v string, _ *secretView) bool { return entropy(v) >= 3.5 }},
	// A storage account key (88 characters of base64) in a connection
	// string or after a name that says azure/storage.
	{id: "azure-storage-key", desc: "Azure storage account key", keywords: []string{"accountkey", "azure", "storage"},
		re: regexp.MustCompile(`(?i)(?:AccountKey\s*=\s*|(?:azure|storage)[\w.\-]{0,30}?key["']?\s*(?::=|=|:)\s*["']?)([A-Za-z0-9+/]{86}==)`),
		ok: func(v string, _ *secretView) bool {
			return !strings.HasPrefix(v, "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq")
		}}, // Azurite's published key
}

// Connection strings with a password: URLs (postgres://user:pass@host),
// URL parameters (…?password=…) and ADO.NET-style key=value lists
// (Server=…;Password=…).
var (
	connURL   = regexp.MustCompile(`(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver|jdbc:[a-z]+|ftps?|sftp|smtps?|ldaps?|clickhouse|cockroachdb|couchdb|neo4j|nats|kafka|https?|wss?|git|ssh|svn)(?:\+[a-z0-9]+)?://([^:@/\s"'` + "`" + `]*):([^@\s"'` + "`" + `]+)@[\w.\-\[]`)
	connParam = regexp.MustCompile(`(?i)[?&;\s](?:password|pwd|pass)=([^&\s"';]+)`)
	connADO   = regexp.MustCompile(`(?i)(?:^|[;"'\s])(?:password|pwd)\s*=\s*([^;"'\s]+)`)
	connADOOf = regexp.MustCompile(`(?i)(?:server|data source|host|user id|uid|initial catalog|database)\s*=[^;]*;`)
)

// privateKeyHeader opens a PEM private key; gitleaks: private-key.
var privateKeyHeader = regexp.MustCompile(`-----BEGIN ((?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP |SSH2 ENCRYPTED )?PRIVATE KEY(?: BLOCK)?)-----`)

var (
	base64Line = regexp.MustCompile(`^[A-Za-z0-9+/=]{16,}$`)
	pemHeaders = regexp.MustCompile(`^(?:Proc-Type|DEK-Info|Version|Comment|Hash):`)
	base64Run  = regexp.MustCompile(`^[A-Za-z0-9+/=]{16,}`)
)

// secretCandidate is a secret found on a line, before overlaps are removed.
type secretCandidate struct {
	start, end int // the secret's bytes in the line
	rule, sev  string
	msg        string
	fix        string // how to fix it; "" is secretFix's default
}

// scanSecrets reports the secrets of s: gitleaks' rules of known formats
// (package leaks, sast_known.go), Ward's own (secretRules, private keys, connection
// strings, values given to names of secrets). It reads the text through
// an unescaping view (escapedView) so that a file inside a JSON string (a
// ConfigMap's data) is read as the file it is.
func scanSecrets(s *sastSource, level int, out *findings) {
	v := escapedView(s)
	byLine := map[int][]secretCandidate{}    // gitleaks' rules of known formats
	genericOf := map[int][]secretCandidate{} // gitleaks' generic rule, tried after Ward's
	for _, f := range detectKnown(s.path, v.text, v.starts, level == secretsAll && s.lang != "Key") {
		generic := strings.Contains(f.ruleID, "generic")
		if (generic && tokenPlaceholder(f.secret)) || (!generic && maskedToken(f.secret)) || knownExample(f.secret) || !plausible(v, f) {
			continue
		}
		ls := v.starts[f.line]
		a, b := min(f.start-ls, len(v.lines[f.line])), min(f.end-ls, len(v.lines[f.line]))
		sev := sdk.SeverityError
		switch {
		case strings.Contains(f.ruleID, "generic") || f.ruleID == "jwt" || strings.Contains(f.secret, "_test_"):
			sev = sdk.SeverityWarning
		}
		id, title := f.ruleID, ruleTitle(f.description)
		if w := wardRuleIDs[id]; w != "" {
			id, title = w, title+" (gitleaks: "+f.ruleID+")"
		}
		c := secretCandidate{start: a, end: max(a, b), rule: id, sev: sev, msg: title + ": " + mask(f.secret)}
		if strings.Contains(f.ruleID, "generic") {
			genericOf[f.line] = append(genericOf[f.line], c)
		} else {
			byLine[f.line] = append(byLine[f.line], c)
		}
	}
	var tf terraformVars
	for i, line := range v.lines {
		n := i + 1
		if len(line) > 20000 {
			continue
		}
		var cands []secretCandidate
		lower := strings.ToLower(line)
		for ri := range secretRules {
			r := &secretRules[ri]
			if !hasKeyword(lower, r.keywords) {
				continue
			}
			for _, m := range r.re.FindAllStringSubmatchIndex(line, -1) {
				a, b := m[0], m[1]
				for g := 2; g+1 < len(m); g += 2 {
					if m[g] >= 0 {
						a, b = m[g], m[g+1]
						break
					}
				}
				val := line[a:b]
				if tokenPlaceholder(val) || (r.ok != nil && !r.ok(val, v)) {
					continue
				}
				sev := r.severity
				if sev == "" {
					sev = sdk.SeverityError
				}
				if r.severityOf != nil {
					sev = r.severityOf(val)
				}
				cands = append(cands, secretCandidate{start: a, end: b, rule: r.id, sev: sev, msg: r.desc + ": " + mask(val)})
			}
		}
		cands = append(cands, byLine[i]...)
		if m := privateKeyHeader.FindStringSubmatchIndex(line); m != nil && pemHasBody(v, i, line[m[1]:]) {
			cands = append(cands, secretCandidate{start: m[0], end: m[1], rule: "private-key", sev: sdk.SeverityError,
				msg: line[m[2]:m[3]] + " in the repository"})
		}
		cands = append(cands, connectionStrings(line, lower)...)
		if level == secretsAll && s.lang != "Key" {
			cands = append(cands, genericSecrets(v, i, lower, &tf)...)
		}
		cands = append(cands, genericOf[i]...)
		var kept []secretCandidate
		for _, c := range cands {
			if (c.rule == "hardcoded-secret" || strings.Contains(c.rule, "generic")) && !specificOn(byLine[i]) &&
				malformedToken(lastName(line[:c.start]), line[c.start:c.end], c.rule != "hardcoded-secret") {
				continue
			}
			overlaps := false
			for _, k := range kept {
				if c.start < k.end && k.start < c.end {
					overlaps = true
					break
				}
			}
			if !overlaps {
				kept = append(kept, c)
				col := v.origColumn(i, c.start)
				out.addFinding(sdk.Finding{File: s.path, Line: n, Column: col + 1, Rule: c.rule, Severity: c.sev,
					Message: c.msg, Excerpt: excerpt(line, c.start, c.end), Fix: secretFix(c)})
			}
		}
	}
}

// specificOn: a rule of a known format found something on the line.
func specificOn(cands []secretCandidate) bool { return len(cands) > 0 }

// wardRuleIDs are the ids Ward reported formats under before it used
// gitleaks' rules; they stay, so that what users filter on stays. Every
// other gitleaks rule reports under its own id.
var wardRuleIDs = map[string]string{
	"aws-access-token": "aws-access-key-id",
	"github-pat":       "github-token", "github-oauth": "github-token", "github-app-token": "github-token",
	"github-refresh-token": "github-token", "github-fine-grained-pat": "github-token",
	"gitlab-pat": "gitlab-token", "gitlab-ptt": "gitlab-token", "gitlab-rrt": "gitlab-token", "gitlab-deploy-token": "gitlab-token",
	"slack-bot-token": "slack-token", "slack-user-token": "slack-token", "slack-app-token": "slack-token",
	"slack-legacy-token": "slack-token", "slack-legacy-bot-token": "slack-token", "slack-legacy-workspace-token": "slack-token",
	"slack-webhook-url": "slack-webhook", "stripe-access-token": "stripe-key", "twilio-api-key": "twilio-key",
	"sendgrid-api-token": "sendgrid-key", "npm-access-token": "npm-token", "pypi-upload-token": "pypi-token",
	"anthropic-api-key": "anthropic-key", "anthropic-admin-api-key": "anthropic-key", "openai-api-key": "openai-key",
}

// maskedToken: a token of a known format that is masked or elided
// (ghp_xxxx…, sk_live_****, <token>, …). gitleaks' own allow-lists judge
// the rest: its samples count sk-ant-…fake… and …EXAMPLE… as secrets.
func maskedToken(v string) bool {
	l := strings.ToLower(v)
	for _, w := range []string{"xxxxx", "****", "<", "...", "…", "your_", "your-", "placeholder", "redacted"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// knownExample: keys that vendors publish for local use and documents
// (Azurite's storage key, jwt.io's example token).
func knownExample(secret string) bool {
	return strings.Contains(secret, "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq") ||
		strings.HasSuffix(secret, "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
}

// plausible applies Ward's judgement to a gitleaks finding: a private key
// has a body (not code between a header constant and a footer), and the
// generic rule's name is one of a secret's (not publishable, test, …).
func plausible(v *secretView, f glFinding) bool {
	line := v.lines[f.line]
	a := f.start - v.starts[f.line]
	switch {
	case f.ruleID == "private-key":
		m := privateKeyHeader.FindStringIndex(line)
		return m == nil || pemHasBody(v, f.line, line[m[1]:])
	case strings.Contains(f.ruleID, "generic"):
		if a < 0 || a > len(line) {
			return true
		}
		for _, w := range identWords(lastName(line[:a])) {
			if notSecretAny[w] {
				return false
			}
		}
	}
	return true
}

// lastName is the last identifier in s (the name a value is given to).
func lastName(s string) string {
	end := len(s)
	for end > 0 && !isIdentByte(s[end-1]) {
		end--
	}
	start := end
	for start > 0 && (isIdentByte(s[start-1]) || s[start-1] == '-' || s[start-1] == '.') {
		start--
	}
	return s[start:end]
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ruleTitle is the first clause of a gitleaks rule's description
// ("Discovered a Hugging Face Access token, which could lead to …").
func ruleTitle(desc string) string {
	if i := strings.Index(desc, ", "); i > 0 {
		desc = desc[:i]
	}
	return strings.TrimSuffix(desc, ".")
}

// excerpt is the line around a secret, the secret masked: at most 40
// characters either side.
func excerpt(line string, a, b int) string {
	if a >= b || b > len(line) {
		return strings.TrimSpace(line[:min(len(line), 80)])
	}
	pre, post := line[:a], line[b:]
	if len(pre) > 40 {
		pre = "…" + pre[len(pre)-40:]
	}
	if len(post) > 40 {
		post = post[:40] + "…"
	}
	return strings.ToValidUTF8(strings.TrimSpace(strings.ReplaceAll(pre+mask(line[a:b])+post, "`", "'")), "")
}

// secretFix says how to fix a finding of a rule.
func secretFix(c secretCandidate) string {
	switch {
	case c.fix != "":
		return c.fix
	case c.rule == "private-key" || c.rule == "gcp-service-account":
		return "remove the key from the repository (and its history) and issue a new one; mount it at run time from a secret store"
	case c.rule == "connection-string-password":
		return "change the password and take it out of the connection string: pass it from the environment or a secret store"
	case c.rule == "hardcoded-secret" || strings.Contains(c.rule, "generic"):
		return "if it is a real secret, change it and read it from the environment or a secret store; if not, use a placeholder"
	}
	return "revoke this credential at its provider, issue a new one, and read it from the environment or a secret store"
}

// secretView is a file's text as the secret rules read it, its lines the
// file's lines. These rewrites make a secret read as an assignment where
// gitleaks' patterns (a name, an operator, the value, a quote or a space)
// would not see one:
//
//   - a backslash before a quote is left out (\" in a JSON string that
//     holds a file, a ConfigMap's data);
//   - an XML element on one line, <apiToken>value</apiToken>, reads
//     <apiToken=value /apiToken> (same length);
//   - an attribute pair, key="apiToken" value="…", reads
//     key="apiToken       ="… (same length);
//   - a key in brackets, $config['api_token'] = …, reads
//     $config  api_token   = … (same length);
//   - NAME += "…" and $name ??= "…" read as NAME  = "…"; a query
//     parameter's value ends at its & (?api_token=…&page=2).
type secretView struct {
	*sastSource
	removed map[int][]int // a line's removed bytes, as offsets in the original line
}

var (
	xmlElement = regexp.MustCompile(`<([A-Za-z_][\w:.\-]*)(?:\s[^<>]*)?>[^<>\s][^<>]*</([A-Za-z_][\w:.\-]*)>`)
	// queryPair is a URL's query parameter followed by another: its & ends
	// the value as a space would.
	queryPair  = regexp.MustCompile(`[?&][\w.\-]+=[^&\s"'<>]+(&)`)
	bracketKey = regexp.MustCompile(`\[\s*['"][\w.\-]+['"]\s*\]`)
	xmlPair    = regexp.MustCompile(`(?i)\b(?:key|name)\s*=\s*"[^"]+("\s+value\s*)="`)
)

func escapedView(s *sastSource) *secretView {
	v := &secretView{sastSource: s}
	if !strings.Contains(s.text, `\"`) && !strings.Contains(s.text, "</") && !strings.Contains(s.text, "['") &&
		!strings.Contains(s.text, `["`) && !strings.Contains(strings.ToLower(s.text), "value") &&
		!strings.Contains(s.text, "+=") && !strings.Contains(s.text, "?=") && !strings.Contains(s.text, "&") {
		return v
	}
	c := &sastSource{path: s.path, lang: s.lang}
	v.removed = map[int][]int{}
	var b strings.Builder
	for i, line := range s.lines {
		if strings.Contains(line, `\"`) {
			var sb strings.Builder
			for j := 0; j < len(line); j++ {
				if line[j] == '\\' && j+1 < len(line) {
					if line[j+1] == '"' {
						v.removed[i] = append(v.removed[i], j)
						continue
					}
					sb.WriteByte(line[j])
					j++
				}
				sb.WriteByte(line[j])
			}
			line = sb.String()
		}
		if strings.Contains(line, "</") {
			lb := []byte(line)
			for _, m := range xmlElement.FindAllStringSubmatchIndex(line, -1) {
				if line[m[2]:m[3]] != line[m[4]:m[5]] {
					continue
				}
				open := strings.IndexByte(line[m[0]:], '>') + m[0]
				lb[open] = '='
				lb[m[4]-2] = ' '
			}
			line = string(lb)
		}
		if strings.Contains(line, "+=") || strings.Contains(line, "??=") {
			// an append or a null-coalescing assignment: NAME += "…",
			// $name ??= "…" (Makefiles, PHP) read NAME  = "…"
			line = strings.ReplaceAll(strings.ReplaceAll(line, "??=", "  ="), "+=", " =")
		}
		if strings.Contains(line, "&") && strings.Contains(line, "=") {
			lb := []byte(line)
			for _, m := range queryPair.FindAllStringSubmatchIndex(line, -1) {
				lb[m[2]] = ' '
			}
			line = string(lb)
		}
		if strings.Contains(line, "['") || strings.Contains(line, `["`) {
			lb := []byte(line)
			for _, m := range bracketKey.FindAllStringIndex(line, -1) {
				for k := m[0]; k < m[1]; k++ {
					if lb[k] == '[' || lb[k] == ']' || lb[k] == '\'' || lb[k] == '"' {
						lb[k] = ' '
					}
				}
			}
			line = string(lb)
		}
		if strings.Contains(strings.ToLower(line), "value") {
			lb := []byte(line)
			for _, m := range xmlPair.FindAllStringSubmatchIndex(line, -1) {
				for k := m[2]; k < m[3]; k++ {
					lb[k] = ' '
				}
			}
			line = string(lb)
		}
		c.starts = append(c.starts, b.Len())
		c.lines = append(c.lines, line)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	c.text = b.String()
	v.sastSource = c
	return v
}

// origColumn maps a byte of line i of the view to the original line.
func (v *secretView) origColumn(i, col int) int {
	for _, r := range v.removed[i] {
		if r <= col {
			col++
		}
	}
	return col
}

func hasKeyword(lower string, keywords []string) bool {
	if len(keywords) == 0 {
		return true
	}
	for _, k := range keywords {
		if strings.Contains(lower, k) {
			return true
		}
	}
	return false
}

// pemHasBody reports whether a private key header is followed by a key:
// base64 on the same line (a JSON or code string with \n) or on the next
// lines. A header alone (a constant a parser compares with) is no key.
func pemHasBody(s *secretView, i int, rest string) bool {
	rest = strings.NewReplacer(`\n`, "", `\r`, "", `"`, "", `'`, "", " ", "").Replace(rest)
	if len(rest) >= 20 {
		return realBody(rest[:min(len(rest), 64)])
	}
	for j := i + 1; j < len(s.lines) && j <= i+4; j++ {
		t := strings.TrimSpace(strings.Trim(strings.TrimSpace(s.lines[j]), `"',+`))
		t = strings.TrimSuffix(t, `\n`)
		switch {
		case t == "" || pemHeaders.MatchString(t):
			continue
		case base64Line.MatchString(t):
			return realBody(t)
		default:
			return false
		}
	}
	return false
}

// realBody: not a run of one character (xxxx…, AAAA…) and not cut short.
func realBody(b string) bool {
	if m := base64Run.FindString(b); m != "" {
		b = m
	}
	return entropy(b) >= 3 && !strings.Contains(b, "...")
}

// tokenPlaceholder reports a token of a known format that is an example
// or a placeholder: AWS's documented keys (…EXAMPLE, …EXAMPLEKEY), runs of
// x or of one character, "your…", "…here".
func tokenPlaceholder(v string) bool {
	l := strings.ToLower(v)
	for _, w := range []string{"example", "xxxx", "your", "dummy", "fake", "sample", "placeholder", "redacted", "****", "<", "...", "…", "here"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	// The part after a prefix has too few distinct characters.
	body := v
	if k := strings.LastIndexAny(v[:min(len(v), 12)], "_-."); k >= 0 {
		body = v[k+1:]
	}
	return len(body) >= 8 && entropy(body) < 2.5
}

// connectionStrings finds passwords in connection strings.
func connectionStrings(line, lower string) []secretCandidate {
	var out []secretCandidate
	add := func(a, b int, kind string) {
		v := line[a:b]
		if weakValue(v) {
			return
		}
		out = append(out, secretCandidate{start: a, end: b, rule: "connection-string-password", sev: sdk.SeverityError,
			msg: "password in a " + kind + ": " + mask(v)})
	}
	if strings.Contains(lower, "://") {
		for _, m := range connURLIn(line) {
			if user, pass := line[m[2]:m[3]], line[m[4]:m[5]]; pass != user {
				add(m[4], m[5], "connection URL")
			}
		}
		for _, m := range connParam.FindAllStringSubmatchIndex(line, -1) {
			add(m[2], m[3], "connection URL")
		}
	}
	if (strings.Contains(lower, "password") || strings.Contains(lower, "pwd")) && connADOOf.MatchString(line) {
		for _, m := range connADO.FindAllStringSubmatchIndex(line, -1) {
			add(m[2], m[3], "connection string")
		}
	}
	return out
}

// connURLIn is connURL's matches in line: none when no "@" follows its
// first "://", as every match has one after its own "://" (most URLs have
// no password: the regexp, which has no literal prefix, is not run).
func connURLIn(line string) [][]int {
	if i := strings.Index(line, "://"); i < 0 || !strings.Contains(line[i:], "@") {
		return nil
	}
	return connURL.FindAllStringSubmatchIndex(line, -1)
}

// weakValue: a value that is no secret, for passwords in connection
// strings: a placeholder, a reference to a variable, a masked value.
func weakValue(v string) bool {
	return len(v) < 3 || isReference(v) || isPlaceholder(v)
}

// isReference reports a value that names where the secret is rather than
// holding it: environment and template variables, secret managers,
// Terraform references.
func isReference(v string) bool {
	l := strings.ToLower(v)
	for _, w := range []string{"${", "$(", "{{", "}}", "<%", "%{", "#{", "%(", "@{", "getenv", "process.env", "environ",
		"system.getenv", "env[", "env.", "env(", "secrets.", "vault:", "vault(", "arn:aws:", "ssm:", "secretsmanager",
		"keyvault", "ref+", "sm://", "secret://", "op://", "valuefrom"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	for _, p := range []string{"$", "var.", "local.", "data.", "module.", "random_", "!", "*", "&", "%", "@", "::"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

var placeholderWords = []string{"changeme", "change_me", "change-me", "changeit", "example", "placeholder", "xxxx",
	"your_", "your-", "yourpass", "yoursecret", "yourtoken", "yourkey", "<", ">", "dummy", "fake", "sample",
	"redacted", "replace", "insert_", "insert-", "todo", "fixme", "tbd", "notreal", "not_real", "not-real",
	"not_a_real", "not-a-real", "_here", "-here", "foobar", "lorem", "test", "password", "secret", "***", "•", "…", "..."}

var placeholderValues = map[string]bool{"pass": true, "token": true, "none": true, "null": true, "nil": true,
	"true": true, "false": true, "undefined": true, "empty": true, "n/a": true, "na": true, "default": true,
	"string": true, "str": true, "value": true, "admin": true, "root": true, "guest": true, "user": true,
	"letmein": true, "qwerty": true, "abc123": true, "p@ssw0rd": true, "pa$$w0rd": true, "pa$$word": true,
	"%s": true, "%v": true, "{}": true, "{0}": true, "?": true}

// isPlaceholder reports a value that stands for a secret: changeme, xxx,
// <token>, your-key-here, dummy, masked values (****).
func isPlaceholder(v string) bool {
	l := strings.ToLower(v)
	if placeholderValues[l] {
		return true
	}
	for _, w := range placeholderWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	// One character repeated: ********, 00000000.
	return strings.Count(v, v[:1]) == len(v)
}

// Secret name classes: how strong a value must look before a value of
// that name is reported.
const (
	nameNone     = iota
	namePassword // password, passwd, pwd: human-chosen, low entropy
	nameToken    // secret, token, api key, credentials
	nameStrict   // a bare key or auth: only random-looking values
)

// notSecretLast: a name ending in one of these words holds something about
// a secret, not the secret (password_label, token_url, secret_name).
var notSecretLast = wordSet(`field fields label labels placeholder hint prompt message msg text title description
	desc help regex regexp pattern length len min max minlength maxlength policy rules rule url uri urls endpoint
	path file filename dir directory type kind name names ref reference header env var variable expires expiry
	expiration expire expired ttl timeout lifetime duration age count enabled enable disabled required version format
	algorithm alg algo param parameter id ids rotation mode prefix suffix store manager provider class method methods
	hash hashed digest size error errors reset confirm confirmation changed input form validator validation strength
	visibility visible show hide toggle icon at location source arn generator bits level status state limit index idx
	column col valid invalid missing mismatch button btn link page route view template component handler callback fn
	func flag option options settings setting schema model table query prop props selector attr attribute cookie
	length policy usage scope scopes issuer audience endpoint host port user username login email account`)

// notSecretAny: a name with one of these words is not a secret's.
var notSecretAny = wordSet(`public publishable pub example sample dummy fake mock test tests testing csrf xsrf
	placeholder hint label i18n translation description regex pattern masked encrypted hashed hash digest salt
	forgot forgotten cache sort primary foreign partition idempotency unique composite range lookup dict object row
	column group routing shard event queue map keyboard keycode keypress keydown keyup`)

// keyQualifiers make "<qualifier> key" a secret's name.
var keyQualifiers = wordSet(`api access secret private signing encryption encrypt master client app service
	account license licence subscription auth hmac jwt session crypto shared webhook consumer`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// secretNameClass says whether a name holds a secret, and which kind.
func secretNameClass(name string) int {
	w := identWords(name)
	if len(w) == 0 || notSecretLast[w[len(w)-1]] {
		return nameNone
	}
	class := nameNone
	for i, x := range w {
		if notSecretAny[x] {
			return nameNone
		}
		// run-together names: PGPASSWORD, MYSQLPASSWORD, npmtoken
		for _, suffix := range []string{"password", "passwd", "secret", "token"} {
			if len(x) > len(suffix)+1 && strings.HasSuffix(x, suffix) {
				x = suffix
			}
		}
		switch x {
		case "password", "passwd", "pwd", "passphrase", "pass", "pw", "passwort", "contrasena", "motdepasse":
			class = max(class, namePassword)
		case "secret", "secrets", "token", "apikey", "apitoken", "credential", "credentials", "creds",
			"clientsecret", "accesstoken", "authtoken", "privatekey", "secretkey", "accesskey", "bearer":
			class = max(class, nameToken)
		case "key":
			if i > 0 && keyQualifiers[w[i-1]] {
				class = max(class, nameToken)
			} else if i == len(w)-1 && i > 0 {
				class = max(class, nameStrict)
			}
		case "auth":
			if i == len(w)-1 {
				class = max(class, nameStrict)
			}
		}
	}
	if class == nameStrict {
		return nameStrict
	}
	if class == nameToken || class == namePassword {
		// password wins: a db_password_token is still someone's password
		for _, x := range w {
			switch x {
			case "password", "passwd", "pwd", "passphrase", "pass", "pw":
				return namePassword
			}
		}
	}
	return class
}

var (
	identLike = regexp.MustCompile(`^(?:[A-Za-z]+(?:[_\-.][A-Za-z]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:[\-_.][a-z][a-z0-9]*)+)$`)
	fileExt   = regexp.MustCompile(`(?i)\.(?:pem|key|crt|cer|der|p12|pfx|jks|json|txt|ya?ml|env|properties|ini|cfg|conf|toml|pub|gpg|asc|keystore)$`)
	numeric   = regexp.MustCompile(`^[0-9.\-+_:]+$`)
)

// secretValue reports whether a value of a name of class looks like a real
// secret: not a placeholder or a reference, long and random enough.
func secretValue(v string, class int) bool {
	if v == "" || strings.ContainsAny(v, " \t") || isReference(v) || isPlaceholder(v) {
		return false
	}
	l := strings.ToLower(v)
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~/") ||
		strings.Contains(l, "://") || fileExt.MatchString(v) || identLike.MatchString(v) || numeric.MatchString(v) {
		return false
	}
	n, e, cl := utf8.RuneCountInString(v), entropy(v), charClasses(v)
	switch class {
	case namePassword:
		return n >= 6 && !(allLetters(v) && n < 12) && e >= 2.0
	case nameToken:
		return n >= 10 && (cl >= 2 || n >= 20) && e >= 3.0
	case nameStrict:
		return n >= 16 && cl >= 2 && e >= 3.5
	}
	return false
}

func allLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// quotedOnly are the formats whose string values are always quoted: an
// unquoted value is an expression, a number or a boolean.
func quotedOnly(lang string) bool {
	return codeLanguages[lang] || lang == "Terraform" || lang == "JSON" || lang == "TOML"
}

var (
	// nameSep finds NAME = / NAME: / NAME := / NAME => (quoted names too,
	// with an optional type: var key string =, key: str =).
	nameSep = regexp.MustCompile(`(?:^|[^\w.\-$@])(?:export\s+|set\s+)?["'` + "`" + `]?([A-Za-z_][\w.\-]*)["'` + "`" + `]?\]?(?:\s+(?:string|String|str|const))?(?:\s*:\s*(?:str|string|String)\b)?\s*(:=|=>|=|:)`)
	// pairName is the name line before a value line: - name: API_TOKEN.
	pairName = regexp.MustCompile(`^\s*-?\s*["']?(?:name|key)["']?\s*[:=]\s*["']?([A-Za-z_][\w.\-]*)["']?\s*,?\s*$`)
	// dockerEnv is a Dockerfile's ENV NAME value (the form without =).
	dockerEnv = regexp.MustCompile(`(?i)^\s*(?:ENV|ARG)\s+([A-Za-z_][\w.\-]*)\s+([^\s=]\S*)\s*$`)
	// xmlSecret is <password>value</password>.
	xmlSecret = regexp.MustCompile(`<([\w:.\-]+)>([^<\s]+)</`)
	// xmlAddKey is <add key="ApiKey" value="…"/> (.NET configuration).
	xmlAddKey = regexp.MustCompile(`(?i)key\s*=\s*"([^"]+)"\s+value\s*=\s*"([^"]*)"`)
	// bearer is a token in an Authorization header.
	bearer = regexp.MustCompile(`(?i)\b(?:bearer|token|basic)\s+([A-Za-z0-9_\-.=+/~]{20,})`)
	// sqlPassword is a password in SQL: CREATE USER … WITH PASSWORD '…',
	// IDENTIFIED BY '…'.
	sqlPassword = regexp.MustCompile(`(?i)\b(?:with\s+(?:encrypted\s+)?password|identified\s+by|password\s*=)\s*'([^'\s]+)'`)
	// tfVariable and tfDefault: a Terraform variable's default value.
	tfVariable = regexp.MustCompile(`^\s*variable\s+"([^"]+)"`)
	tfDefault  = regexp.MustCompile(`^\s*default\s*=\s*"([^"]*)"`)
)

var genericKeywords = []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "bearer", "variable", "default", "value"}

// terraformVars follows the variable block a line is in.
type terraformVars struct{ name string }

// genericSecrets finds values given to names of secrets: env, YAML, JSON,
// TOML, INI and properties files, Terraform, Dockerfile ENV/ARG, shell
// exports, string literals in code.
func genericSecrets(s *secretView, i int, lower string, tf *terraformVars) []secretCandidate {
	line := s.lines[i]
	if s.lang == "Terraform" {
		if m := tfVariable.FindStringSubmatch(line); m != nil {
			tf.name = m[1]
		} else if strings.HasPrefix(line, "}") {
			tf.name = ""
		}
	}
	if !hasKeyword(lower, genericKeywords) {
		return nil
	}
	var out []secretCandidate
	add := func(name string, a, b int) {
		v := line[a:b]
		class := secretNameClass(name)
		if class == nameNone || !secretValue(v, class) {
			return
		}
		what := map[int]string{namePassword: "password", nameToken: "secret", nameStrict: "secret"}[class]
		out = append(out, secretCandidate{start: a, end: b, rule: "hardcoded-secret", sev: sdk.SeverityError,
			msg: "hard-coded " + what + " in " + name + ": " + mask(v)})
	}
	quoted := quotedOnly(s.lang)
	for _, m := range nameSep.FindAllStringSubmatchIndex(line, -1) {
		end := m[1]
		sep := line[m[4]:m[5]]
		if end < len(line) && (line[end] == '=' || (sep == ":" && line[end] == ':') || (sep == "=" && line[end] == '~')) {
			continue // ==, ::, =~
		}
		if a, b, ok := readValue(line, end, quoted, s.lang); ok {
			name := line[m[2]:m[3]]
			if strings.EqualFold(name, "value") && i > 0 {
				// a list of name/value pairs (a Kubernetes container's env)
				if p := pairName.FindStringSubmatch(s.lines[i-1]); p != nil {
					name = p[1]
				}
			}
			add(name, a, b)
		}
	}
	if s.lang == "Dockerfile" {
		if m := dockerEnv.FindStringSubmatchIndex(line); m != nil {
			a, b := m[4], m[5]
			if b-a >= 2 && (line[a] == '"' || line[a] == '\'') && line[b-1] == line[a] {
				a, b = a+1, b-1
			}
			add(line[m[2]:m[3]], a, b)
		}
	}
	if s.lang == "Terraform" && tf.name != "" {
		if m := tfDefault.FindStringSubmatchIndex(line); m != nil {
			add(tf.name, m[2], m[3])
		}
	}
	if strings.Contains(lower, "password") || strings.Contains(lower, "identified") {
		for _, m := range sqlPassword.FindAllStringSubmatchIndex(line, -1) {
			add("password", m[2], m[3])
		}
	}
	if strings.Contains(line, "</") {
		for _, m := range xmlSecret.FindAllStringSubmatchIndex(line, -1) {
			add(line[m[2]:m[3]], m[4], m[5])
		}
	}
	if strings.Contains(lower, "value") {
		for _, m := range xmlAddKey.FindAllStringSubmatchIndex(line, -1) {
			add(line[m[2]:m[3]], m[4], m[5])
		}
	}
	if strings.Contains(lower, "bearer") || strings.Contains(lower, "authorization") {
		for _, m := range bearer.FindAllStringSubmatchIndex(line, -1) {
			v := line[m[2]:m[3]]
			if secretValue(v, nameStrict) {
				out = append(out, secretCandidate{start: m[2], end: m[3], rule: "hardcoded-secret", sev: sdk.SeverityError,
					msg: "hard-coded Authorization header: " + mask(v)})
			}
		}
	}
	return out
}

// readValue reads the value that starts after a separator at i: a quoted
// literal, or (unless quoted) a bare word.
func readValue(line string, i int, quoted bool, lang string) (int, int, bool) {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i >= len(line) {
		return 0, 0, false
	}
	c := line[i]
	if lang == "Python" && strings.IndexByte("rbuRBU", c) >= 0 && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\'') {
		i++
		c = line[i]
	}
	if c == '"' || c == '\'' || c == '`' {
		for j := i + 1; j < len(line); j++ {
			switch line[j] {
			case '\\':
				j++
			case c:
				if c == '`' && strings.Contains(line[i+1:j], "${") {
					return 0, 0, false
				}
				return i + 1, j, j > i+1
			}
		}
		return 0, 0, false
	}
	if quoted || strings.IndexByte("|>[{(", c) >= 0 {
		return 0, 0, false
	}
	j := i
	for j < len(line) && !strings.ContainsRune(" \t,;)]}\"'", rune(line[j])) {
		j++
	}
	return i, j, j > i
}
