//go:build tools

// Package tools pins the programs deploy/helm_test.go builds (go build
// -o DIR helm.sh/helm/v3/cmd/helm github.com/yannh/kubeconform/cmd/kubeconform
// here): they stay out of Ward's own go.mod.
package tools

import (
	_ "github.com/yannh/kubeconform/cmd/kubeconform"
	_ "helm.sh/helm/v3/cmd/helm"
)
