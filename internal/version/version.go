// Package version is the build of the running binary, as every part of
// Ward reports it: the host in its heartbeats, the scheduler and the
// safety kernel in their statuses, the gateway at /healthz, `ward version`
// for itself. It reads what the Go toolchain stamped into the binary
// (runtime/debug.ReadBuildInfo): the module's version, and the VCS
// revision and time of a build from a checkout.
//
// A build has one version string, the same for every part of it,
// whatever the Go settings it was built with: Version below.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Build is what a binary knows of its own build.
type Build struct {
	// Module is the main module's path.
	Module string `json:"module,omitempty"`
	// Version is the build in one string, what every part of it reports
	// (see Version): the module's version ("v1.2.3" when built with `go
	// install ...@version`, a pseudo-version Go derived from the
	// checkout, or "(devel)"), the revision when the module's version
	// does not name it, "+dirty" when the tree had changes.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, Time its
	// commit time (RFC 3339), Modified whether the tree had changes.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the toolchain's version.
	Go string `json:"go"`
}

var (
	once  sync.Once
	build Build
)

// Info returns the running binary's build.
func Info() Build {
	once.Do(func() { build = read(debug.ReadBuildInfo()) })
	return build
}

// Version is the running binary's build in one short string, what a part
// reports to others (a host's heartbeat, a scheduler's status): Info's
// Version.
func Version() string { return Info().Version }

func read(bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: "(unknown)", Go: runtime.Version()}
	if !ok || bi == nil {
		return b
	}
	b.Module = bi.Main.Path
	mod := bi.Main.Version
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	b.Version = format(mod, b.Revision, b.Modified)
	return b
}

// format is Version's one form of a build: the module's version, then
// the first 12 characters of the revision unless the module's version
// names it already (a pseudo-version Go derived from the checkout), then
// "+dirty", once, when the tree had changes:
//
//	v1.2.3                                  go install ...@v1.2.3
//	v0.0.0-20261128083351-0123456789ab      a clean checkout
//	v0.0.0-20261128083351-0123456789ab+dirty
//	v1.2.3 0123456789ab+dirty               a checkout of a tag, modified
//	(devel) 0123456789ab                    a checkout, Go before 1.24
//	(devel)                                 built with -buildvcs=false
//
// Go marks a modified checkout's version "+dirty" itself (since 1.24);
// that mark is moved to the end, so that it is not said twice.
func format(mod, revision string, modified bool) string {
	if mod == "" {
		mod = "(unknown)"
	}
	if strings.HasSuffix(mod, "+dirty") {
		mod = strings.TrimSuffix(mod, "+dirty")
		modified = true
	}
	s := mod
	if revision != "" {
		r := revision
		if len(r) > 12 {
			r = r[:12]
		}
		if !strings.Contains(s, r) {
			s += " " + r
		}
	}
	if modified {
		s += "+dirty"
	}
	return s
}
