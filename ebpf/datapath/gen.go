package datapath

// The objects and their Go bindings are committed, so building Cairn needs no
// C toolchain. Regenerating needs clang and libbpf-dev; CAIRN_BPF_OUT lets
// hack/check-ebpf.sh write into a scratch directory and compare.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -output-dir=${CAIRN_BPF_OUT} -target bpfel,bpfeb socklb bpf/socklb.c -- -Wall -Werror -std=gnu11
