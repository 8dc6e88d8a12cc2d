//go:build tools

// Package tools pins the helm command built by ../../build-tools.sh.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
