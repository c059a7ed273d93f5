"""The daemon on the combined test config, whose brokers (kafka-1/2.invalid) never resolve: the trouble is in
the log at once, one WARNING per broker with the reason (not one per attempt, though it keeps probing), and Ctrl-C
with nothing held stops at once instead of waiting for the shutdown deadline."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from config_files import COMBINED_CONF

from .harness import BruceProcess, counters_json, http_get, wait_for

pytestmark = pytest.mark.e2e


def test_unresolvable_brokers_are_logged_once_each_and_ctrl_c_does_not_wait(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    sock = str(workdir / "trouble.sock")
    args = ["--config_path", str(COMBINED_CONF), "--shutdown_max_delay", "600000", "--log_level", "LOG_DEBUG"]
    bruce = bruce_process([*args, "--receive_socket_name", sock, "--status_port", "0"])
    status_url = bruce.wait_serving()
    first = [f"broker kafka-{i}.invalid:9092 unreachable: metadata request failed: cannot connect to " for i in (1, 2)]
    wait_for(lambda: all(line in bruce.log for line in first), what="a warning per unreachable broker")
    # Probed again and again meanwhile (at least three rounds over both brokers), but never logged per attempt.
    wait_for(lambda: counters_json(status_url).get("MetadataBrokerFail", 0) >= 6, what="three failed metadata rounds")
    # Bruce's counters (what its Nagios script sums): one failing refresh, one failure per broker, not one per retry.
    bruce_view = {c["name"]: c["value"] for c in json.loads(http_get(status_url + "/counters/json")[2])["counters"]}
    assert (bruce_view["GetMetadataFail"], bruce_view["InitialGetMetadataFail"]) == (1, 1)
    assert bruce_view["ConnectFailOnTryGetMetadata"] == 2 and bruce_view["GetMetadataSuccess"] == 0
    warnings = [line for line in bruce.log.splitlines() if " WARNING bruce.producer: broker " in line]
    assert len(warnings) == 2 and all(any(f in w for w in warnings) for f in first), warnings
    bruce.signal(signal.SIGINT)
    assert bruce.wait(60) == 0  # nothing held: no wait for the 600 s shutdown deadline
    assert "stopped: 0 received, 0 delivered, 0 discarded, 0 in flight" in bruce.log
