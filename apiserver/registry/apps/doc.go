// Package apps holds the rules of the apps/v1 workloads (deployments,
// replica sets, stateful sets, daemon sets) and their scale subresource,
// matching Kubernetes' defaults, messages and field paths.
package apps
