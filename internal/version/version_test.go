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
	if b.Version != "v1.2.3 0123456789ab+dirty" || b.Go != "go1.99" || b.Time != "2026-01-02T03:04:05Z" || !b.Modified ||
		b.Revision != "0123456789abcdef0123" || b.Module != "github.com/ward-run/ward" {
		t.Errorf("read: %+v", b)
	}
	if b := read(nil, false); b.Version != "(unknown)" || !strings.HasPrefix(b.Go, "go") {
		t.Errorf("without build info: %+v", b)
	}
	if Version() == "" || Version() != Info().Version {
		t.Errorf("Version() = %q, Info().Version = %q", Version(), Info().Version)
	}
}

// TestOneForm: a build has one version string, whatever Go stamped into
// it — with -buildvcs=false or without, from a clean or a modified
// checkout, from a tag or not — and "+dirty" is said once, at the end.
func TestOneForm(t *testing.T) {
	const rev = "951383222783aabbccddeeff0011223344556677"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-28T08:33:51Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"-buildvcs=false", "(devel)", nil, "(devel)"},
		{"go install @tag", "v1.2.3", nil, "v1.2.3"},
		{"clean checkout", "v0.0.0-20261128083351-951383222783", vcs("false"), "v0.0.0-20261128083351-951383222783"},
		{"modified checkout", "v0.0.0-20261128083351-951383222783+dirty", vcs("true"), "v0.0.0-20261128083351-951383222783+dirty"},
		{"clean tag", "v1.2.3", vcs("false"), "v1.2.3 951383222783"},
		{"modified tag", "v1.2.3+dirty", vcs("true"), "v1.2.3 951383222783+dirty"},
		{"after a tag", "v1.2.4-0.20261128083351-951383222783+dirty", vcs("true"), "v1.2.4-0.20261128083351-951383222783+dirty"},
		{"Go before 1.24", "(devel)", vcs("true"), "(devel) 951383222783+dirty"},
		{"no version", "", nil, "(unknown)"},
	} {
		b := read(&debug.BuildInfo{Main: debug.Module{Path: "github.com/ward-run/ward", Version: c.version}, Settings: c.settings}, true)
		if b.Version != c.want {
			t.Errorf("%s: Version = %q, want %q", c.name, b.Version, c.want)
		}
		if n := strings.Count(b.Version, "dirty"); n > 1 {
			t.Errorf("%s: %q says dirty %d times", c.name, b.Version, n)
		}
	}
}
