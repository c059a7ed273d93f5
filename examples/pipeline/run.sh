#!/usr/bin/env bash
# Run the Spark pipeline example from a fresh machine: set up .venv (bruce-kafka with every extra, Java), then run
# examples/pipeline/run.py (embedded broker + bruce daemon + sender + Structured Streaming job). Arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/bootstrap.sh test
exec .venv/bin/python examples/pipeline/run.py "$@"
