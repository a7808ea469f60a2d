#!/bin/sh
# stop.sh stops the containerd that start.sh started under PREFIX (same
# default), after removing its pods so that no shim or mount outlives it.
# The prefix directory is kept, with containerd's log.
#
# Usage: hack/containerd/stop.sh [PREFIX]
set -eu

prefix=${1:-${CAIRN_CONTAINERD_PREFIX:-/tmp/cairn-containerd}}
sock=$prefix/containerd.sock
pidfile=$prefix/containerd.pid

[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
if kill -0 "$pid" 2>/dev/null; then
	# Tasks first, so that their shims exit and unmount the rootfs.
	for id in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr --address "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
	done
	sleep 1
	for id in $(ctr --address "$sock" -n k8s.io containers ls -q 2>/dev/null); do
		ctr --address "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
		ctr --address "$sock" -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
	done
	kill "$pid"
	tries=0
	while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 50 ]; do
		tries=$((tries + 1))
		sleep 0.2
	done
	kill -9 "$pid" 2>/dev/null || true
fi
# Pod network namespaces and rootfs mounts left by killed tasks.
awk -v p="$prefix/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo | sort -r |
	while read -r m; do umount -l "$m" 2>/dev/null || true; done
rm -f "$pidfile"
