#!/usr/bin/env bash
# Run the bruce daemon from a fresh machine. With no broker configured it starts an embedded broker (tansu) on
# 127.0.0.1:9092 (another loopback port if 9092 is taken; it says so). Arguments go to the `bruce` command (see
# `./run.sh --help`).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/bootstrap.sh run
export BRUCE_PROGRAM="$0"  # what bruce names when it points at --help
exec .venv/bin/bruce "$@"
