#!/bin/sh
# start.sh starts a private containerd for tests and CI in the background,
# with hack/containerd/config.toml rendered under PREFIX: its own root,
# state, socket, runc root and CNI config directory. Running it again while
# that containerd is up changes nothing, so test scripts may call it freely.
# Image archives given after PREFIX are imported into the k8s.io namespace,
# the one the CRI plugin reads (the sandbox image must be among them before
# the first pod starts: nothing is pulled from a registry).
#
# Usage: hack/containerd/start.sh [PREFIX] [IMAGE.tar ...]
#   PREFIX             default $CAIRN_CONTAINERD_PREFIX, else /tmp/cairn-containerd
#   CAIRN_SANDBOX_IMAGE   sandbox (pause) image reference, default cairn.test/pause:latest
#   CAIRN_CONTAINERD_NETNS=1  run containerd, hence the CNI bridge and pods,
#                         in a network namespace of its own
#
# It prints the socket path. Stop it with hack/containerd/stop.sh PREFIX.
# Needs root and Debian's containerd, runc and containernetworking-plugins.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${CAIRN_CONTAINERD_PREFIX:-/tmp/cairn-containerd}}
[ $# -gt 0 ] && shift
sandbox_image=${CAIRN_SANDBOX_IMAGE:-cairn.test/pause:latest}
sock=$prefix/containerd.sock
pidfile=$prefix/containerd.pid

for tool in containerd ctr runc; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "start.sh: $tool is not installed: apt-get install containerd runc containernetworking-plugins" >&2
		exit 1
	}
done
[ -x /usr/lib/cni/bridge ] || {
	echo "start.sh: the CNI plugins are not in /usr/lib/cni: apt-get install containernetworking-plugins" >&2
	exit 1
}

running() {
	[ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null &&
		ctr --address "$sock" version >/dev/null 2>&1
}

if ! running; then
	mkdir -p "$prefix/cni/net.d"
	sed -e "s#@PREFIX@#$prefix#g" -e "s#@SANDBOX_IMAGE@#$sandbox_image#g" \
		"$here/config.toml" >"$prefix/config.toml"
	if [ "${CAIRN_CONTAINERD_NETNS:-0}" = 1 ]; then
		nohup unshare --net containerd --config "$prefix/config.toml" >>"$prefix/containerd.log" 2>&1 &
	else
		nohup containerd --config "$prefix/config.toml" >>"$prefix/containerd.log" 2>&1 &
	fi
	echo $! >"$pidfile"
	tries=0
	until ctr --address "$sock" version >/dev/null 2>&1; do
		tries=$((tries + 1))
		if [ "$tries" -gt 100 ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			echo "start.sh: containerd did not come up; see $prefix/containerd.log:" >&2
			tail -n 20 "$prefix/containerd.log" >&2
			exit 1
		fi
		sleep 0.2
	done
fi

for archive in "$@"; do
	ctr --address "$sock" -n k8s.io images import "$archive" >/dev/null
done
echo "$sock"
