#!/usr/bin/env bash
# Checks that the committed BPF objects and their Go bindings are what the
# C sources produce: regenerates them into a scratch directory with the
# same bpf2go invocation as `go generate` and compares byte for byte.
#
# Needs clang, llvm-strip and libbpf-dev (Debian: apt-get install clang llvm
# libbpf-dev). The build is reproducible: bpf2go passes fixed flags, maps
# source paths to relative ones, omits the compiler identity and strips
# DWARF while keeping BTF, so any difference means the sources changed
# without `go generate ./ebpf/...` being run, or the toolchain differs from
# the one the objects were built with (clang is reported below).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in clang llvm-strip; do
	command -v "$tool" >/dev/null || { echo "check-ebpf: $tool not found: apt-get install clang llvm libbpf-dev" >&2; exit 2; }
done
[ -f /usr/include/bpf/bpf_helpers.h ] || { echo "check-ebpf: libbpf headers not found: apt-get install libbpf-dev" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

status=0
# Every package with a bpf2go directive.
for dir in $(grep -rl --include='*.go' 'cilium/ebpf/cmd/bpf2go' ebpf | xargs -n1 dirname | sort -u); do
	out="$scratch/$dir"
	mkdir -p "$out"
	CAIRN_BPF_OUT="$out" go generate "./$dir"
	for f in "$out"/*; do
		name=$(basename "$f")
		if ! cmp -s "$f" "$dir/$name"; then
			echo "check-ebpf: $dir/$name differs from what its sources produce" >&2
			status=1
		fi
	done
	# A committed generated file that the sources no longer produce.
	for f in "$dir"/*_bpfe[lb].go "$dir"/*_bpfe[lb].o; do
		[ -e "$f" ] || continue
		if [ ! -e "$out/$(basename "$f")" ]; then
			echo "check-ebpf: $f is no longer generated: delete it" >&2
			status=1
		fi
	done
done

if [ "$status" -ne 0 ]; then
	echo "check-ebpf: run 'go generate ./ebpf/...' and commit the result (built with: $(clang --version | head -1))" >&2
else
	echo "check-ebpf: BPF objects match their sources"
fi
exit "$status"
