"""Settling's decisions (bruce.producer.idempotence.recovery) with the log and the broker's answers scripted: the cases
a real broker hardly ever shows on demand (a send of the dead process landing during the settling, a broker that stays
unreachable). The log reading and resending themselves run against tansu in tests/e2e/test_settle_tansu.py."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from bruce.producer.acks import Failure
from bruce.producer.config import ProducerConfig
from bruce.producer.errors import TransportError
from bruce.producer.idempotence import recovery
from bruce.producer.idempotence.journal import JournalEntry
from bruce.producer.idempotence.recovery import Settler, log_identities
from bruce.producer.metadata.cluster import BrokerNode, ClusterView
from bruce.wire.recordbatch import build_record_batch, with_producer_identity

TP = ("t", 0)


def _entry(bid: int, base: int, count: int = 1) -> JournalEntry:
    data = build_record_batch([(None, b"v%d" % i, 0, ()) for i in range(count)])
    return JournalEntry(bid, 9, 0, "t", 0, base, count, -1, [], data)


class Scripted(Settler):
    """A settler whose log and produce answers are scripted."""

    def __init__(self, logs: list[dict[tuple[int, int, int], int]], answers: list[int | Exception], **kw: Any) -> None:
        config = ProducerConfig(retry_backoff_ms=10)
        super().__init__(None, config, lambda e: e.payload, deadline=time.monotonic() + kw.get("deadline", 5))  # type: ignore[arg-type]
        self.logs, self.answers, self.sent = logs, answers, []  # type: ignore[var-annotated]

    async def _read_log(self, tp: Any, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
        return self.logs.pop(0) if len(self.logs) > 1 else self.logs[0]

    async def _produce(self, tp: Any, entry: JournalEntry, data: bytes, sequence: int) -> tuple[int, int]:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        self.sent.append((entry.batch_id, sequence))
        return answer, 100 + sequence

    def _drop_connection(self, tp: Any) -> None:
        pass


def test_a_send_of_the_dead_process_landing_during_the_settling_is_found_on_the_second_read() -> None:
    """The resend is answered OUT_OF_ORDER_SEQUENCE_NUMBER because the dead process's own send of that batch landed
    after the first read (the broker moved on): the log is read again, the batch is there — delivered, not resent
    as new."""
    settler = Scripted([{}, {(9, 0, 4): 77}], [45])
    out = asyncio.run(settler.settle([_entry(1, 4)], {}))
    assert [e.batch_id for e in out.resent] == [1] and out.fallback == []


def test_a_refused_resend_not_in_the_log_falls_back_with_the_batches_after_it() -> None:
    settler = Scripted([{}], [0, 59])
    out = asyncio.run(settler.settle([_entry(1, 0, 2), _entry(2, 2), _entry(3, 3)], {}))
    assert settler.sent == [(1, 0), (2, 2)]  # the second is refused (UNKNOWN_PRODUCER_ID); the third not tried
    assert [e.batch_id for e in out.resent] == [1]
    assert [e.batch_id for e in out.fallback] == [2, 3]
    assert out.acked == {TP: 100}


def test_resends_follow_each_other_from_the_first_missing_sequence() -> None:
    settler = Scripted([{(9, 0, 0): 5}, {(9, 0, 0): 5, (9, 0, 5): 9}], [0, 46])
    out = asyncio.run(settler.settle([_entry(1, 0, 3), _entry(2, 3, 2), _entry(3, 5)], {}))
    assert [e.batch_id for e in out.found] == [1]
    assert settler.sent == [(2, 3), (3, 5)]  # the second answered DUPLICATE_SEQUENCE_NUMBER: found in the log
    assert [e.batch_id for e in out.resent] == [2, 3]


def test_a_duplicate_answer_for_a_batch_not_in_the_log_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker has answered DUPLICATE_SEQUENCE_NUMBER for a batch it never stored: not trusted, the log is read —
    again for LOG_WAIT_S, then the batch falls back."""
    monkeypatch.setattr(recovery, "LOG_WAIT_S", 0.3)
    settler = Scripted([{}], [46] * 1000)
    begun = time.monotonic()
    out = asyncio.run(settler.settle([_entry(1, 0), _entry(2, 1)], {}))
    assert 0.3 <= time.monotonic() - begun < 3
    assert set(settler.sent) == {(1, 0)} and len(settler.sent) > 1  # asked again while waiting for the log
    assert out.resent == [] and [e.batch_id for e in out.fallback] == [1, 2]


def test_a_batch_the_broker_holds_that_shows_in_the_log_late_is_not_sent_again() -> None:
    """tansu on object storage answers DUPLICATE_SEQUENCE_NUMBER for a write of the dead process still on its way
    into the log: the log is read again until it shows (within LOG_WAIT_S), and the batch is not sent as new."""
    settler = Scripted([{}, {}, {}, {(9, 0, 0): 40}], [46, 46, 46])
    out = asyncio.run(settler.settle([_entry(1, 0)], {}))
    assert [e.batch_id for e in out.found + out.resent] == [1] and out.fallback == []  # stored once, at offset 40


def test_a_gap_that_closes_on_a_later_read_is_no_gap() -> None:
    """A later batch shows before an earlier one (written out of order): read again, both are found."""
    settler = Scripted([{(9, 0, 1): 41}, {(9, 0, 1): 41}, {(9, 0, 0): 40, (9, 0, 1): 41}], [])
    out = asyncio.run(settler.settle([_entry(1, 0), _entry(2, 1)], {}))
    assert sorted(e.batch_id for e in out.found) == [1, 2] and out.fallback == [] and out.gaps == 0


def test_a_batch_below_offsets_acknowledged_after_it_is_found_from_its_own_known_offset() -> None:
    """Batch 1 (sequence 0, stored at offset 50) got no answer the dead process could journal (a
    DUPLICATE_SEQUENCE_NUMBER being checked, a lost answer) while batches after it were acknowledged up to offset 80;
    batch 2 (sequence 1) was in flight at the kill and is at 90. The log is read from what was known when batch 1 was
    sent (40), not from 80: both are found — no gap, nothing resent as new."""

    class Log(Scripted):
        async def _read_log(self, tp: Any, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
            self.reads.append(offset)
            return {k: at for k, at in {(9, 0, 0): 50, (9, 0, 1): 90}.items() if at >= offset}

    settler = Log([{}], [])
    settler.reads = []  # type: ignore[attr-defined]
    first, second = _entry(1, 0), _entry(2, 1)
    first.known_offset, second.known_offset = 40, 80
    out = asyncio.run(settler.settle([first, second], {TP: 80}))
    assert sorted(e.batch_id for e in out.found) == [1, 2]
    assert out.fallback == [] and out.gaps == 0 and settler.sent == []
    assert settler.reads[0] == 40 and out.acked == {TP: 90}


def test_an_unreachable_broker_ends_at_the_deadline_and_everything_falls_back() -> None:
    class Down(Scripted):
        async def _read_log(self, tp: Any, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
            raise TransportError("cannot connect", reason=Failure.CONNECT_FAIL)

    settler = Down([{}], [], deadline=0.2)
    begun = time.monotonic()
    out = asyncio.run(settler.settle([_entry(1, 0), _entry(2, 1)], {}))
    assert [e.batch_id for e in out.fallback] == [1, 2]
    assert time.monotonic() - begun < 2


class Hanging(Settler):
    """A settler on a scripted connection whose first ``hangs`` requests are never answered (the answer was lost on
    the way): the log is the batch of producer id 9, epoch 0, sequence 0 at offset 40, high watermark 41."""

    def __init__(self, hangs: int, deadline: float) -> None:
        super().__init__(
            None, ProducerConfig(retry_backoff_ms=10), lambda e: e.payload, deadline=time.monotonic() + deadline
        )  # type: ignore[arg-type]
        self.hangs, self.asked, self.dropped = hangs, 0, 0
        batch = bytearray(
            with_producer_identity(_entry(1, 0).payload, producer_id=9, producer_epoch=0, base_sequence=0)
        )
        batch[0:8] = (40).to_bytes(8, "big")
        part = SimpleNamespace(
            partition_index=0, error_code=0, log_start_offset=0, high_watermark=41, records=bytes(batch)
        )
        self.answer = SimpleNamespace(responses=[SimpleNamespace(partitions=[part])])

    async def _leader(self, tp: Any) -> Any:
        return SimpleNamespace(
            request=self._request, versions=SimpleNamespace(version=lambda api: 4), close=lambda: None
        )

    def _request(self, body: Any, version: int) -> asyncio.Future[Any]:
        self.asked += 1
        future = asyncio.get_running_loop().create_future()
        if self.asked > self.hangs:
            future.set_result(self.answer)
        return future

    def _drop_connection(self, tp: Any) -> None:
        self.dropped += 1


def test_a_lost_fetch_answer_is_asked_again_before_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker's answer to the settling's log read never comes (swallowed on the way): the request is given up
    after REQUEST_S, not after the whole deadline, and asked again on a new connection — the batch is found in time,
    not sent again as new."""
    monkeypatch.setattr(recovery, "REQUEST_S", 0.3, raising=False)  # none before the bound
    settler = Hanging(hangs=1, deadline=3)
    begun = time.monotonic()
    out = asyncio.run(asyncio.wait_for(settler.settle([_entry(1, 0)], {}), 5))
    assert [e.batch_id for e in out.found] == [1] and out.fallback == [] and out.resent == []
    assert settler.asked == 2 and settler.dropped == 1
    assert 0.3 <= time.monotonic() - begun < 2


def test_no_request_waits_past_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers never come: settling still ends at its deadline, everything falls back."""
    settler = Hanging(hangs=10**6, deadline=0.5)
    begun = time.monotonic()
    out = asyncio.run(asyncio.wait_for(settler.settle([_entry(1, 0)], {}), 5))
    assert [e.batch_id for e in out.fallback] == [1]
    assert time.monotonic() - begun < 1.5


def _find(logs: list[dict[tuple[int, int, int], int]], monkeypatch: pytest.MonkeyPatch) -> tuple[int | None, int]:
    """find_batch over scripted log reads (each read takes the next of ``logs``, the last one repeats)."""
    reads = []

    async def read(self: Settler, tp: Any, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
        reads.append(offset)
        return logs[min(len(reads), len(logs)) - 1]

    monkeypatch.setattr(Settler, "_read_log", read)
    found = asyncio.run(recovery.find_batch(None, ProducerConfig(retry_backoff_ms=10), TP, 7, (9, 0, 3)))  # type: ignore[arg-type]
    return found, len(reads)


def test_the_live_duplicate_check_reads_the_log_again_for_a_late_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """DUPLICATE_SEQUENCE_NUMBER for a batch whose write is still on its way into the log (tansu on object storage):
    not there at the first read, there at the third — found, not sent again as new."""
    assert _find([{}, {}, {(9, 0, 3): 12}], monkeypatch) == (12, 3)


def test_the_live_duplicate_check_gives_up_after_the_log_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recovery, "LOG_WAIT_S", 0.3)
    begun = time.monotonic()
    found, reads = _find([{(9, 0, 4): 12}], monkeypatch)
    assert found is None and reads > 1 and 0.25 <= time.monotonic() - begun < 2


def test_the_live_duplicate_check_waits_for_a_moved_leader_longer_than_one_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The partition's leader moved: its old address refuses connections until the producer's view has the new one,
    which can take a metadata request that hangs (request_timeout_ms) and the reconnect backoff. The check goes on
    trying for that long instead of sending a stored batch again as new (a duplicate)."""
    config = ProducerConfig(retry_backoff_ms=10, request_timeout_ms=200, reconnect_backoff_max_ms=100)
    begun = time.monotonic()

    async def read(self: Settler, tp: Any, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
        if time.monotonic() - begun < 0.3:  # past request_timeout_ms
            raise TransportError("cannot connect", reason=Failure.CONNECT_FAIL)
        return {(9, 0, 3): 12}

    monkeypatch.setattr(Settler, "_read_log", read)
    views = SimpleNamespace(cluster=lambda: None)
    assert asyncio.run(recovery.find_batch(views, config, TP, 7, (9, 0, 3))) == 12  # type: ignore[arg-type]
    assert recovery.check_timeout(config) == 0.5  # 2 * request_timeout_ms + reconnect_backoff_max_ms


def test_a_duplicate_answer_whose_log_cannot_be_read_is_sent_again_as_a_possible_duplicate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log stays unreadable: the messages are sent again as new, and reported as possible duplicates (the batch
    may be stored)."""
    from bruce.producer.idempotence import duplicates

    async def unreadable(*args: Any) -> int | None:
        raise TransportError("cannot connect", reason=Failure.CONNECT_FAIL)

    monkeypatch.setattr(duplicates, "find_batch", unreadable)
    calls: list[tuple[str, Any]] = []
    ledger = SimpleNamespace(possible_duplicates=lambda topic, ms: calls.append(("possible", list(ms))))
    d = SimpleNamespace(
        counters=SimpleNamespace(inc=lambda *a: None),
        ledger=ledger,
        give_back=lambda pq, ms, since: calls.append(("back", list(ms))),
        seq=None,
    )
    tasks: list[Any] = []
    check = duplicates.DuplicateCheck(d, None, ProducerConfig(), tasks.append)  # type: ignore[arg-type]
    pq = SimpleNamespace(topic="t", partition=0)
    batch = SimpleNamespace(producer_id=9, producer_epoch=0, base_sequence=3, known=7)
    check(pq, batch, ["m1", "m2"], 10, 0.0)  # type: ignore[arg-type]
    asyncio.run(tasks[0])
    assert calls == [("possible", ["m1", "m2"]), ("back", ["m1", "m2"])]


def test_log_identities_reads_whole_batches_of_the_producers_asked_about() -> None:
    one = with_producer_identity(
        build_record_batch([(None, b"a", 0, ())]), producer_id=9, producer_epoch=2, base_sequence=7
    )
    other = with_producer_identity(
        build_record_batch([(None, b"b", 0, ())]), producer_id=5, producer_epoch=0, base_sequence=0
    )
    at = bytearray(one)
    at[0:8] = (40).to_bytes(8, "big")  # base offset 40
    found, after = log_identities(bytes(at) + other + one[:20], {9})
    assert found == {(9, 2, 7): 40} and after == 1  # the second batch's offset 0 + 1; the partial third is ignored


def test_a_partition_the_cluster_does_not_have_falls_back_at_once() -> None:
    """Its topic was deleted (or the cluster is another one): nothing to wait for, whatever the deadline."""
    view = ClusterView({1: BrokerNode(1, "127.0.0.1", 1)}, {}, "cluster-b")
    settler = Settler(SimpleNamespace(cluster=lambda: view), ProducerConfig(), lambda e: e.payload, deadline=1e12)  # type: ignore[arg-type]
    began = time.monotonic()
    out = asyncio.run(settler.settle([_entry(1, 0), _entry(2, 1)], {}))
    assert [e.batch_id for e in out.fallback] == [1, 2] and time.monotonic() - began < 1


def test_batches_in_the_log_past_the_highest_journaled_sequence_say_the_journal_missed_sends() -> None:
    """The journal could not write (a read-only file system) while batches went on: the log holds the producer's
    batches after the last one journaled. Settling says so; it never takes them for the journaled ones."""
    settler = Scripted([{(9, 0, 0): 5, (9, 0, 1): 6, (9, 0, 7): 12}], [])
    out = asyncio.run(settler.settle([_entry(1, 0), _entry(2, 1)], {}, journaled={(*TP, 9, 0): 1}))
    assert [e.batch_id for e in out.found] == [1, 2] and out.unjournaled == [TP]
    clean = Scripted([{(9, 0, 0): 5, (9, 0, 1): 6}], [])
    assert asyncio.run(clean.settle([_entry(1, 0), _entry(2, 1)], {}, journaled={(*TP, 9, 0): 1})).unjournaled == []
