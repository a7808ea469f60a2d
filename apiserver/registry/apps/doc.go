// Package apps holds the rules of the apps/v1 workloads (deployments,
// replica sets, stateful sets, daemon sets), their scale subresource and
// the controller revisions that keep stateful and daemon set history,
// matching Kubernetes' defaults, messages and field paths.
package apps
