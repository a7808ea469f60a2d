// Package apiserver serves the Kubernetes REST API on top of the raftstore.
// It is built in a later stage of the project; see ARCHITECTURE.md.
package apiserver
