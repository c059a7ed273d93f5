#!/usr/bin/env bash
# Every check, from a fresh machine: set up .venv, lint, type-check (scripts/typecheck.sh), run the whole test suite
# (the real broker, Spark and fault injection included) in two processes (most tests wait on brokers, daemons and JVMs
# more than they compute; tests/conftest.py says which tests share a process), then a short fuzzing run. Extra
# arguments go to pytest (``-n 0`` runs it in one process).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/bootstrap.sh test
.venv/bin/ruff check .
.venv/bin/ruff format --check .
bash scripts/typecheck.sh
.venv/bin/python -m pytest -n 2 --dist loadscope --no-loadscope-reorder "$@"
.venv/bin/python fuzz/run_all.py --total-seconds 50
