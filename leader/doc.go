// Package leader decides which replica runs the leader-only loops (scheduler
// and controllers) and fences their writes with a leadership epoch.
package leader
