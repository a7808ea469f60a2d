// Package batch holds the rules of the batch/v1 resources (jobs and cron
// jobs), matching Kubernetes' defaults, generated selectors, messages and
// field paths.
package batch
