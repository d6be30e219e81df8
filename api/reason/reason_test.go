package reason

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// TestREADMEListsEveryCode keeps the README's table of reason codes whole:
// every code has a row, and every row is a code.
func TestREADMEListsEveryCode(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(readme, []byte("\n## Reason codes\n"))
	if !ok {
		t.Fatal(`README.md has no "## Reason codes" section`)
	}
	section, _, _ = bytes.Cut(section, []byte("\n## "))
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(section, -1) {
		rows[string(m[1])] = true
	}
	known := map[string]bool{}
	for _, c := range All() {
		if known[string(c)] {
			t.Errorf("code %s is listed twice in All", c)
		}
		known[string(c)] = true
		if !rows[string(c)] {
			t.Errorf("README.md has no row for reason code %s", c)
		}
	}
	for r := range rows {
		if !known[r] {
			t.Errorf("README.md lists %s, which is not a reason code", r)
		}
	}
}
