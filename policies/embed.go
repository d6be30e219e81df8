// Package policies holds Ward's default safety policy bundle: the Rego
// rules (ward.rego), the data beside them (data.yaml) and their unit tests
// (ward_test.rego). Copy the folder to start your own.
package policies

import "embed"

// FS is the default bundle, loaded by the safety kernel when no other
// bundle is configured.
//
//go:embed *.rego data.yaml
var FS embed.FS
