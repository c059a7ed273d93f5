#!/usr/bin/env bash
# Every check, from a fresh machine: set up .venv, lint, type-check (scripts/typecheck.sh), run the whole test suite
# (the real broker, Spark and fault injection included), then a short fuzzing run. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/bootstrap.sh test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
bash scripts/typecheck.sh
.venv/bin/python -m pytest "$@"
.venv/bin/python fuzz/run_all.py --total-seconds 50
