package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDbg(t *testing.T) {
	for _, fam := range strings.Fields(os.Getenv("FAMS")) {
		p := "testdata/secrets/corpus/" + fam + "/code.txt"
		b, _ := os.ReadFile(p)
		f := &File{Path: fam + "/code.txt", Language: Language(p), Data: []byte(strings.ReplaceAll(string(b), "@@", ""))}
		for _, fd := range SAST(f) {
			l := strings.Split(string(f.Data), "\n")[fd.Line-1]
			t.Logf("%s:%d %s %s || %.120s", filepath.Base(fam), fd.Line, fd.Rule, fd.Message[:min(60, len(fd.Message))], l)
		}
	}
}
