// Package version is the build of the running binary, as every part of
// Ward reports it: the host in its heartbeats, `ward version` for itself.
// It reads what the Go toolchain stamped into the binary
// (runtime/debug.ReadBuildInfo): the module's version, and the VCS
// revision and time of a build from a checkout.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Build is what a binary knows of its own build.
type Build struct {
	// Module is the main module's path, Version its version: a tag
	// ("v1.2.3") when built with `go install ...@version`, else
	// "(devel)" or a pseudo-version.
	Module  string `json:"module,omitempty"`
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from, Time its
	// commit time (RFC 3339), Modified whether the tree had changes.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Build is String's form, what the other parts report of theirs
	// (Version), so that a client can compare its own with theirs.
	Build string `json:"build,omitempty"`
	// Go is the toolchain's version.
	Go string `json:"go"`
}

var (
	once  sync.Once
	build Build
)

// Info returns the running binary's build.
func Info() Build {
	once.Do(func() {
		build = read(debug.ReadBuildInfo())
		build.Build = build.String()
	})
	return build
}

func read(bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: "(unknown)", Go: runtime.Version()}
	if !ok || bi == nil {
		return b
	}
	b.Module = bi.Main.Path
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
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
	return b
}

// Version is the build in one short string, what a part reports to
// others (a host's heartbeat): the module version, then the first 12
// characters of the VCS revision when known, "+dirty" when the tree had
// changes: "v1.2.3", "(devel) 3f2a1b4c5d6e+dirty".
func Version() string { return Info().String() }

// String is Version's form of b.
func (b Build) String() string {
	s := b.Version
	if b.Revision != "" {
		r := b.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		if strings.Contains(s, r) {
			// A pseudo-version Go derived from the revision (and the
			// tree's state: "+dirty") says it all already.
			return s
		}
		s += " " + r
		if b.Modified {
			s += "+dirty"
		}
	}
	return s
}
