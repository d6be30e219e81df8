package repo

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// sastSource is a file as the sast rules read it: its text, its lines and
// where each begins.
type sastSource struct {
	path, lang string
	text       string
	lines      []string // without their ends
	starts     []int    // byte offset of each line in text
}

func newSastSource(f *File) *sastSource {
	s := &sastSource{path: f.Path, lang: sastLanguage(f.Path, f.Language), text: string(f.Data)}
	for off := 0; off < len(s.text); {
		end := strings.IndexByte(s.text[off:], '\n')
		if end < 0 {
			end = len(s.text) - off
		}
		s.starts = append(s.starts, off)
		s.lines = append(s.lines, strings.TrimSuffix(s.text[off:off+end], "\r"))
		off += end + 1
	}
	return s
}

// lineOf returns the line (from 1) and column (from 1) of a byte offset.
func (s *sastSource) lineOf(off int) (line, col int) {
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off })
	if i == 0 {
		return 1, off + 1
	}
	return i, off - s.starts[i-1] + 1
}

// hashComments are the languages whose comments start with #.
var hashComments = map[string]bool{"Python": true, "Shell": true, "Ruby": true, "Dockerfile": true, "YAML": true,
	"TOML": true, "Terraform": true, "Makefile": true, "Dotenv": true, "INI": true, "Properties": true, "PHP": true}

// slashComments are the languages whose comments start with //.
var slashComments = map[string]bool{"Go": true, "JavaScript": true, "TypeScript": true, "Java": true, "Kotlin": true,
	"C#": true, "C": true, "C++": true, "Rust": true, "Scala": true, "Swift": true, "PHP": true, "Terraform": true}

// commentAt reports whether byte offset off lies in a line comment (or a
// line of a block comment that starts with *).
func (s *sastSource) commentAt(off int) bool {
	n, col := s.lineOf(off)
	if n > len(s.lines) {
		return false
	}
	line := s.lines[n-1]
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "<!--") {
		return true
	}
	c := commentStart(line, s.lang)
	return c >= 0 && c < col-1
}

// commentStart returns where a line's comment starts, or -1.
func commentStart(line, lang string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '#' && hashComments[lang] && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return i
		case c == '/' && slashComments[lang] && i+1 < len(line) && line[i+1] == '/' && (i == 0 || line[i-1] != ':'):
			return i
		}
	}
	return -1
}

// piece is a part of source text: code, or a string literal.
type piece struct {
	lit    bool
	text   string // a literal's content, without its quotes
	prefix string // a Python literal's prefix (f, r, b, rb...)
	interp bool   // a literal with values in it: f"…{x}…", `…${x}…`
	tagged bool   // a tagged JavaScript template: sql`…`
	inner  string // the code inside an interpolated literal's {…}
}

// lex splits code into literals and the rest, dropping comments. It knows
// enough of each language's quoting to tell the parts of a call apart.
func lex(code, lang string) []piece {
	var out []piece
	var other strings.Builder
	flush := func() {
		if other.Len() > 0 {
			out = append(out, piece{text: other.String()})
			other.Reset()
		}
	}
	js := lang == "JavaScript" || lang == "TypeScript"
	triple := lang == "Python" || lang == "Java" || lang == "Kotlin" || lang == "Scala" || lang == "Swift"
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == '/' && i+1 < len(code) && code[i+1] == '/' && slashComments[lang]:
			for i < len(code) && code[i] != '\n' {
				i++
			}
			other.WriteByte('\n')
		case c == '/' && i+1 < len(code) && code[i+1] == '*' && slashComments[lang]:
			end := strings.Index(code[i+2:], "*/")
			if end < 0 {
				i = len(code)
			} else {
				i += end + 3
			}
			other.WriteByte(' ')
		case c == '#' && hashComments[lang] && lang != "PHP":
			for i < len(code) && code[i] != '\n' {
				i++
			}
			other.WriteByte('\n')
		case c == '"' || c == '\'' || c == '`':
			p := piece{lit: true}
			// A Python prefix: up to two letters of rbfu before the quote.
			if lang == "Python" {
				o := other.String()
				k := len(o)
				for k > 0 && len(o)-k < 2 && strings.IndexByte("rbfuRBFU", o[k-1]) >= 0 {
					k--
				}
				if k < len(o) && (k == 0 || !isWordByte(o[k-1])) {
					p.prefix = strings.ToLower(o[k:])
					other.Reset()
					other.WriteString(o[:k])
				}
			}
			if c == '`' && js {
				o := strings.TrimRight(other.String(), " \t")
				p.tagged = o != "" && (isWordByte(o[len(o)-1]) || o[len(o)-1] == ')')
			}
			flush()
			end, body := scanLiteral(code, i, c, triple, lang)
			p.text = body
			switch {
			case c == '`' && js:
				p.interp = strings.Contains(body, "${")
				p.inner = interpolated(body, "${")
			case strings.Contains(p.prefix, "f"):
				p.inner = interpolated(strings.ReplaceAll(body, "{{", ""), "{")
				p.interp = p.inner != ""
			case lang == "Kotlin" || lang == "Ruby" || lang == "Shell" || lang == "PHP":
				p.interp = c != '\'' && (strings.Contains(body, "${") || strings.Contains(body, "#{") || strings.Contains(body, "$"))
			case lang == "C#":
				o := out
				if len(o) > 0 && !o[len(o)-1].lit && strings.HasSuffix(o[len(o)-1].text, "$") {
					p.interp = strings.Contains(body, "{")
				}
			}
			out = append(out, p)
			i = end
		default:
			other.WriteByte(c)
		}
	}
	flush()
	return out
}

// scanLiteral reads the literal opened by quote at i and returns the
// offset of its last byte and its content.
func scanLiteral(code string, i int, quote byte, triple bool, lang string) (int, string) {
	if triple && quote != '`' && strings.HasPrefix(code[i:], strings.Repeat(string(quote), 3)) {
		q := strings.Repeat(string(quote), 3)
		end := strings.Index(code[i+3:], q)
		if end < 0 {
			return len(code) - 1, code[i+3:]
		}
		return i + 3 + end + 2, code[i+3 : i+3+end]
	}
	raw := quote == '`' && (lang == "Go" || lang == "Shell")
	multiline := quote == '`'
	for j := i + 1; j < len(code); j++ {
		switch code[j] {
		case '\\':
			if !raw {
				j++
			}
		case '\n':
			if !multiline {
				return j - 1, code[i+1 : j]
			}
		case quote:
			return j, code[i+1 : j]
		}
	}
	return len(code) - 1, code[i+1:]
}

// interpolated returns the code inside a literal's open…} parts.
func interpolated(body, open string) string {
	var b strings.Builder
	for {
		k := strings.Index(body, open)
		if k < 0 {
			return b.String()
		}
		body = body[k+len(open):]
		end := strings.IndexByte(body, '}')
		if end < 0 {
			return b.String()
		}
		b.WriteString(body[:end])
		b.WriteByte(' ')
		body = body[end+1:]
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skeleton is code with each literal replaced by §.
func skeleton(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		if p.lit {
			b.WriteString("§")
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// literals joins the content of the literals.
func literals(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		if p.lit {
			b.WriteString(p.text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// code joins what is not a literal, with the code inside interpolations.
func codeOf(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		if p.lit {
			b.WriteString(p.inner)
		} else {
			b.WriteString(p.text)
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// callArgs returns the text between the parenthesis at open and the one
// that closes it, reading literals and nested brackets (a call may span
// several lines), and the offset after it.
func callArgs(code string, open int, lang string) (string, int, bool) {
	depth := 0
	triple := lang == "Python" || lang == "Java" || lang == "Kotlin"
	limit := min(len(code), open+8000)
	for i := open; i < limit; i++ {
		switch c := code[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return code[open+1 : i], i + 1, true
			}
		case '"', '\'', '`':
			if c == '\'' && (lang == "Rust") {
				continue
			}
			i, _ = scanLiteral(code, i, c, triple, lang)
		case '#':
			if hashComments[lang] && lang != "PHP" {
				for i < limit && code[i] != '\n' {
					i++
				}
			}
		case '/':
			if slashComments[lang] && i+1 < limit && code[i+1] == '/' {
				for i < limit && code[i] != '\n' {
					i++
				}
			}
		}
	}
	return "", open, false
}

// identWords splits identifiers into lower-case words: userPassword,
// user_password and USER-PASSWORD are all "user", "password".
func identWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 &&
			(unicode.IsLower(cur[len(cur)-1]) || unicode.IsDigit(cur[len(cur)-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// entropy is the Shannon entropy of s, in bits a character.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// charClasses counts the kinds of characters in s: lower case, upper case,
// digits, others.
func charClasses(s string) int {
	var lower, upper, digit, other int
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			lower = 1
		case unicode.IsUpper(r):
			upper = 1
		case unicode.IsDigit(r):
			digit = 1
		default:
			other = 1
		}
	}
	return lower + upper + digit + other
}

// mask shows the first characters of a secret: at most 4, and at most a
// quarter of it.
func mask(secret string) string {
	n := min(4, utf8.RuneCountInString(secret)/4)
	return string([]rune(secret)[:n]) + "…"
}
