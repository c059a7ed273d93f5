#!/usr/bin/env bash
# Run the bruce daemon from a fresh machine. With no broker configured it starts an embedded broker (tansu) on a free
# loopback port. Arguments go to the `bruce` command (see `./run.sh --help`).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/bootstrap.sh run
exec .venv/bin/bruce "$@"
