//go:build !failpoints

// Package failpoint marks the points where a test build may stop a
// process dead: between a dispatch's store write and its publish, say.
// In every build without the build tag failpoints (every build Ward ships)
// Hit does nothing and costs nothing: it is an empty function the
// compiler inlines away.
//
// A build with -tags failpoints (the lattice's ward binary only) arms a
// point when the process receives SIGUSR1 with the point named in the
// file $WARD_FAILPOINT_FILE: the next Hit of that point kills the
// process with SIGKILL, as kill -9 would at that instant, after one line
// on stderr that says where.
package failpoint

// Enabled says whether this build has failpoints (the failpoints tag).
const Enabled = false

// Hit marks the point name; what names the work it was at (a job id and
// attempt), for the line a failpoint build writes before dying there.
func Hit(name string, what ...any) {}
