#!/usr/bin/env bash
# Photograph the status front page of a daemon under load, as headless Chromium renders it: docs/status-dashboard.png
# (or the path given as $1). A tool for the docs, not a test.
#
# Starts `bruce` on the embedded broker (tansu) with a temporary socket, spool directory and a free status port, sends
# three topics' worth of messages at varying rates with `to_bruce` (plus a few malformed datagrams, so the discard
# table has a row), waits LOAD_S seconds for the rate samples, then screenshots http://127.0.0.1:<port>/ in a window of
# WIDTH x HEIGHT pixels (1400 x 1700). KAFKA=down gives the daemon a broker address nothing listens on instead: the
# page before the first metadata (the bootstrap brokers and their errors, the spool holding what arrives). Installs
# Debian's chromium with apt-get when it is missing. Stops only the processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/status-dashboard.png}"
LOAD_S="${LOAD_S:-30}"
WIDTH="${WIDTH:-1400}"
HEIGHT="${HEIGHT:-1700}"
KAFKA="${KAFKA:-up}"

if ! command -v chromium >/dev/null 2>&1; then
    echo "screenshot: installing chromium" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[ -x .venv/bin/bruce ] || bash scripts/bootstrap.sh

tmp="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
sock="$tmp/bruce.socket"
mkdir -p "$tmp/debug"
brokers=()  # none: the embedded broker
if [ "$KAFKA" = down ]; then
    brokers=(--initial_brokers "127.0.0.1:$(free_port)")
fi
.venv/bin/bruce --receive_socket_name "$sock" --status_port "$port" --debug_dir "$tmp/debug" --spool_dir "$tmp/spool" \
    "${brokers[@]}" >"$tmp/bruce.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port/"
for _ in $(seq 100); do
    curl -sf -o /dev/null "$url" && break
    sleep 0.2
done
curl -sf -o /dev/null "$url" || { cat "$tmp/bruce.log" >&2; echo "screenshot: the daemon did not start" >&2; exit 1; }

end=$((SECONDS + LOAD_S + 3))  # still sending when the screenshot is taken
send() {  # send TOPIC INTERVAL_US: bursts of one second at a rate that rises and falls, until the end
    local topic="$1" interval="$2" step
    while [ "$SECONDS" -lt "$end" ]; do
        for step in 1 2 3 4 3 2; do
            .venv/bin/to_bruce --socket_path "$sock" --topic "$topic" --seq --value "event payload" \
                --count $((1000000 / (interval / step))) --interval "$((interval / step))" --nonblocking \
                >/dev/null 2>&1 || true
        done
    done
}
send page.views 1600 & pids+=($!)
send orders 8000 & pids+=($!)
send audit.log 4000 & pids+=($!)
sleep $((LOAD_S / 2))
.venv/bin/to_bruce --socket_path "$sock" --topic orders --bad --count 3 >/dev/null 2>&1 || true
sleep $((LOAD_S - LOAD_S / 2))
profile="$tmp/chromium"
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --user-data-dir="$profile" --hide-scrollbars --window-size="$WIDTH,$HEIGHT" \
    --screenshot="$out" "$url" >"$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; exit 1; }
wait "${pids[@]:1}" 2>/dev/null || true  # the senders end on their own a few seconds later
echo "screenshot: wrote $out"
