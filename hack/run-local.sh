#!/usr/bin/env bash
# Starts a local 3-replica Cairn store cluster with TLS on loopback and keeps
# it running until Ctrl-C. Data survives restarts in .run/.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CAIRN_BIN:-bin/cairn}
RUN=${CAIRN_RUN_DIR:-.run}
mkdir -p "$RUN"
PKI="$RUN/pki"
[ -f "$PKI/ca.crt" ] || "$BIN" pki init --dir "$PKI" >/dev/null

CLUSTER="s1=127.0.0.1:2380,s2=127.0.0.1:12380,s3=127.0.0.1:22380"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	echo "cluster stopped; data kept in $RUN (remove it to start fresh)"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

KUBECONFIG_OUT=${CAIRN_KUBECONFIG_OUT:-$HOME/.cairn/admin.kubeconfig}
i=0
for port in 2379 12379 22379; do
	i=$((i + 1))
	extra=()
	# s1 also leaves the admin kubeconfig where `cairn kubectl` looks.
	[ "$i" = 1 ] && extra=(--write-kubeconfig "$KUBECONFIG_OUT")
	"$BIN" server --name "s$i" --data-dir "$RUN/s$i" --pki-dir "$PKI" \
		--peer-listen "127.0.0.1:$((port + 1))" --store-listen "127.0.0.1:$port" \
		--metrics-listen "127.0.0.1:$((port + 2))" --api-listen "127.0.0.1:$((port + 4064))" \
		--initial-cluster "$CLUSTER" --disable scheduler,controllers "${extra[@]}" \
		>"$RUN/s$i.log" 2>&1 &
	pids+=($!)
done

EP=https://127.0.0.1:2379,https://127.0.0.1:12379,https://127.0.0.1:22379
TLSFLAGS="--cacert $PKI/ca.crt --cert $PKI/admin.crt --key $PKI/admin.key"
healthy=""
for _ in $(seq 1 30); do
	# shellcheck disable=SC2086
	if "$BIN" etcdctl --endpoints "$EP" $TLSFLAGS --command-timeout=1s endpoint health >/dev/null 2>&1; then
		healthy=1
		break
	fi
	sleep 0.5
done
if [ -z "$healthy" ]; then
	echo "the cluster did not become healthy; see $RUN/s1.log $RUN/s2.log $RUN/s3.log" >&2
	exit 1
fi
cat <<MSG
Cairn control plane running: 3 replicas, each with the store and the Kubernetes API (TLS).
Logs: $RUN/s1.log $RUN/s2.log $RUN/s3.log
Kubernetes API: https://127.0.0.1:6443 https://127.0.0.1:16443 https://127.0.0.1:26443
Admin kubeconfig: $KUBECONFIG_OUT (also $RUN/s1/admin.kubeconfig)

Try it:
  $BIN kubectl get namespaces
  $BIN kubectl create deployment web --image=nginx --replicas=2
  $BIN kubectl get deployments -o wide

  $BIN etcdctl --endpoints $EP \\
    --cacert $PKI/ca.crt --cert $PKI/admin.crt --key $PKI/admin.key \\
    put greeting hello
  $BIN etcdctl --endpoints $EP \\
    --cacert $PKI/ca.crt --cert $PKI/admin.crt --key $PKI/admin.key \\
    endpoint status -w table

Metrics and health: http://127.0.0.1:2381/metrics  http://127.0.0.1:2381/health
Press Ctrl-C to stop.
MSG
wait
