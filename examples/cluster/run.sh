#!/usr/bin/env bash
# Run the Spark cluster example from a fresh machine: set up .venv (bruce-kafka with every extra, Java), then run
# examples/cluster/run.py (embedded broker + Spark standalone master and two workers + a submitted job). Arguments
# go to it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/bootstrap.sh
exec .venv/bin/python examples/cluster/run.py "$@"
