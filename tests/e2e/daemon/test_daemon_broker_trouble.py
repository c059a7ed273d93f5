"""The daemon on the combined test config, whose brokers (kafka-1/2.invalid) never resolve: the trouble is in
the log at once, one WARNING per broker with the reason (not one per attempt, though it keeps probing); Ctrl-C
with nothing held stops at once instead of waiting for the shutdown deadline, and with messages held it says why it
waits and that a second Ctrl-C ends the wait, shows how it goes, and the second one ends it at once."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from config_files import COMBINED_CONF

from bruce.client import BruceClient

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


def test_a_stop_while_kafka_is_unreachable_says_why_it_waits_and_a_second_ctrl_c_ends_it(
    bruce_process: Callable[..., BruceProcess], workdir: Path
) -> None:
    sock = str(workdir / "held.sock")
    bruce = bruce_process(["--config_path", str(COMBINED_CONF), "--receive_socket_name", sock, "--status_port", "0"])
    status_url = bruce.wait_serving()
    with BruceClient(sock) as client:
        for i in range(3):
            client.send_any_partition("t", b"held %d" % i)
    wait_for(lambda: counters_json(status_url).get("MsgReceived", 0) == 3, what="the 3 messages to be read")
    bruce.signal(signal.SIGINT)
    wait_for(lambda: "waiting up to" in bruce.log, what="the stop to say that it waits")
    (waiting,) = [line for line in bruce.log.splitlines() if "waiting up to" in line]
    assert re.search(
        r"waiting up to 30 s to deliver 3 held messages: Kafka is unreachable, no broker has answered yet "
        r"\(kafka-\d\.invalid:9092: .+\); a second Ctrl-C \(or SIGTERM\) stops at once, counting what is left as "
        r"SERVER_SHUTDOWN$",
        waiting,
    ), waiting
    wait_for(lambda: "still waiting to deliver 3 held messages, " in bruce.log, what="the stop's progress", timeout=15)
    assert bruce.process.poll() is None  # still waiting: the 30 s are not over
    begun = time.monotonic()
    bruce.signal(signal.SIGINT)
    assert bruce.wait(10) == 0
    assert time.monotonic() - begun < 3  # at once, not at the deadline
    log = bruce.log
    outcome = "0 of 3 held messages delivered; stopped at once by the second stop request, discarded as SERVER_SHUTDOWN"
    assert outcome in log, log[-3000:]
    assert "stopped: 3 received, 0 delivered, 3 discarded, 0 in flight" in log
