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

i=0
for port in 2379 12379 22379; do
	i=$((i + 1))
	"$BIN" server --name "s$i" --data-dir "$RUN/s$i" --pki-dir "$PKI" \
		--peer-listen "127.0.0.1:$((port + 1))" --store-listen "127.0.0.1:$port" \
		--metrics-listen "127.0.0.1:$((port + 2))" \
		--initial-cluster "$CLUSTER" --disable apiserver,scheduler,controllers \
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
Cairn store cluster running (3 replicas, TLS). Logs: $RUN/s1.log $RUN/s2.log $RUN/s3.log

Try it:
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
