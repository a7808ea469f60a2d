#!/usr/bin/env bash
# Starts a local Cairn cluster with `cairn dev` (see README.md): three
# servers and, as root, two agents, until Ctrl-C. Arguments go to
# `cairn dev`, e.g. `hack/run-local.sh --demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${CAIRN_BIN:-bin/cairn}" dev "$@"
