// Package test holds whole-cluster harnesses: end-to-end, chaos and benchmark
// drivers that start real cairn processes.
package test
