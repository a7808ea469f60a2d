// Package core holds the rules of the core/v1 resources: defaults,
// validation and the status/spec split, written to match what Kubernetes'
// own API server does so that clients see the same objects and the same
// error messages. The pod template rules are exported for the workload
// groups (apps, batch) that embed pod templates.
package core
