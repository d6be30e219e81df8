package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/ward-run/ward", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"}}}
	b := read(bi, true)
	if b.Version != "v1.2.3" || b.Go != "go1.99" || b.Time != "2026-01-02T03:04:05Z" || !b.Modified {
		t.Errorf("read: %+v", b)
	}
	if got, want := b.String(), "v1.2.3 0123456789ab+dirty"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// A pseudo-version Go made from the revision names it already.
	pseudo := read(&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128083351-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, true)
	if got, want := pseudo.String(), "v0.0.0-20261128083351-0123456789ab+dirty"; got != want {
		t.Errorf("String() of a pseudo-version = %q, want %q", got, want)
	}
	if b := read(nil, false); b.Version != "(unknown)" || !strings.HasPrefix(b.Go, "go") {
		t.Errorf("without build info: %+v", b)
	}
	if Version() == "" {
		t.Error("Version() is empty")
	}
}
