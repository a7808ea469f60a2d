// Package ebpf holds the BPF programs and loaders that forward Service
// traffic with socket-level load balancing.
package ebpf
