// Package policies holds Ward's default safety policy bundle.
package policies

import "embed"

// FS is the default bundle: the Rego policies of package ward.safety and
// their _test.rego unit tests, loaded by the safety kernel when no other
// bundle is configured.
//
//go:embed *.rego
var FS embed.FS
