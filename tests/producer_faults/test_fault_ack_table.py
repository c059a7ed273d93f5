"""Every error code of Bruce's produce-response table (docs/bruce-compatibility.md#error-acks) against a fake Kafka 0.8
broker, a sample of the modern codes against a modern one, and the failed-attempt limit. Each asserts the accounting
invariant."""

from __future__ import annotations

import pytest
from fakebroker import FakeCluster, Fault
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario

from bruce.producer import DeliveryError, DiscardReason
from bruce.wire.protocol import produce

PRODUCE = produce.KEY
BRUCE_RESEND = [2]
BRUCE_PAUSE = [3, 5, 6, 7]
BRUCE_DISCARD = [-1, 1, 4, 8, 9, 10, 11, 12, 13, *range(14, 32), 99]


def _one_error(code: int, *, legacy: bool, expect: str) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, Fault.error(code))
            handle = p.send("t", b"v", partition=0)
            assert await p.flush(5) == 0
            assert_accounting(p, outcomes, held=0)
            if expect == "discard":
                with pytest.raises(DeliveryError) as caught:
                    handle.result()
                assert caught.value.reason == DiscardReason.KAFKA_ERROR_ACK
                assert outcomes.discarded_count(DiscardReason.KAFKA_ERROR_ACK) == 1
                assert p.counters.get("Pause") == 0
            else:
                assert handle.result() == (0, 0) and handle.attempts == 1
                assert p.counters.get("Pause") == (1 if expect == "pause" else 0)
                assert p.counters.get("MsgResend") == (1 if expect == "resend" else 0)
        produces = cluster.requests("Produce")
        assert len(produces) == (1 if expect == "discard" else 2)
        metadata_requests = len(cluster.requests("Metadata"))
        assert metadata_requests == (2 if expect == "pause" else 1)
        assert not outcomes.duplicate_rows

    scenario(body, legacy=legacy)


@pytest.mark.parametrize("code", BRUCE_RESEND + BRUCE_PAUSE + BRUCE_DISCARD)
def test_bruce_table_on_the_legacy_path(code: int) -> None:
    expect = "resend" if code in BRUCE_RESEND else "pause" if code in BRUCE_PAUSE else "discard"
    _one_error(code, legacy=True, expect=expect)


@pytest.mark.parametrize(
    ("code", "expect"),
    [
        (6, "pause"),  # NOT_LEADER_OR_FOLLOWER: stale metadata
        (3, "pause"),  # UNKNOWN_TOPIC_OR_PARTITION
        (7, "resend"),  # REQUEST_TIMED_OUT: retriable
        (19, "resend"),  # NOT_ENOUGH_REPLICAS
        (2, "resend"),  # CORRUPT_MESSAGE
        (10, "discard"),  # MESSAGE_TOO_LARGE
        (-1, "discard"),  # UNKNOWN_SERVER_ERROR
        (999, "discard"),  # not in Kafka's table
    ],
)
def test_modern_codes_by_their_meaning(code: int, expect: str) -> None:
    _one_error(code, legacy=False, expect=expect)


@pytest.mark.parametrize("code", [2, 6])
def test_failed_attempt_limit_discards_on_the_sixth_error(code: int) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes) as p:
            cluster.brokers[1].script(PRODUCE, *[Fault.error(code)] * 6)
            handle = p.send("t", b"v", partition=0)
            assert await p.flush(10) == 0
            with pytest.raises(DeliveryError) as caught:
                handle.result()
            assert caught.value.reason == DiscardReason.DELIVERY_ATTEMPT_LIMIT
            assert handle.attempts == 6
            assert_accounting(p, outcomes, held=0)
        assert len(cluster.requests("Produce")) == 6

    scenario(body, legacy=True)
