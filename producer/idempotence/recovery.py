"""Settling the batches an earlier process journaled and did not see acknowledged (bruce.producer.idempotence.journal),
by asking the broker what it holds — never by trusting its cache of a producer's last 5 batches (docs/producer.md,
"Exactly once across restarts").

Rules:
- Per partition with unsettled batches: the partition's log is read (Fetch) from the lowest offset known as
  acknowledged when one of them was sent (its SENT record's; the log start when none is known, or when that offset
  was deleted) up to the high watermark taken at the first answer — never from the highest offset acknowledged since:
  a batch whose answer never came (a DUPLICATE_SEQUENCE_NUMBER being checked, a lost answer) may sit below batches
  acknowledged after it. Only record batch headers are looked at: producer id, epoch, base sequence. A journaled
  batch whose identity is found there is **delivered** (stored once: nothing to do).
- The partition's batches of its newest identity (producer id and epoch) that are not found must be the tail of that
  identity's sequence on the partition: the broker appends a producer's batches in sequence order, so a found batch
  after a missing one is a **gap**. The log is read again (after the backoff) for up to :data:`LOG_WAIT_S`, as a
  write of the dead process may still be on its way in (tansu on object storage makes batches visible out of order);
  a gap still there is logged as an error, and every missing batch of the partition falls back. Without
  a gap the missing batches are **resent**, in order, with the same producer id and epoch, the first at its original
  base sequence and each next one right after the previous one (a batch rebuilt with fewer records — messages that
  were not spooled — shifts the next ones), to the same partition, one at a time (acks=all). An acknowledgement
  makes it delivered. An error answer (DUPLICATE_SEQUENCE_NUMBER too: a broker has said it for a batch it never
  stored; UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, ...) makes the log be read
  again: found now, delivered; else it and the partition's later batches fall back — after DUPLICATE_SEQUENCE_NUMBER
  only once the log did not show it for :data:`LOG_WAIT_S` (the broker holds the sequence: it is on its way in).
- :func:`find_batch` is the same log read for one batch, for the live producer's DUPLICATE_SEQUENCE_NUMBER answers;
  a batch not there is looked for again (after the backoff) for up to :data:`LOG_WAIT_S`, like a settling gap.
- A batch of the newest identity in the log with a base sequence above every one the journal names was sent
  unjournaled (the journal could not write, and could not record that either): the partition is listed in
  ``unjournaled`` and logged, so the caller cannot take the journal for complete.
- **Fallback** batches go back to the caller, who sends them as new batches (a new producer id): they were not found
  in the log, so they are duplicates only if a send of the dead process lands after the read; they are reported as
  possible duplicates. Batches of an older identity that are not found fall back too (their sequence cannot be
  continued), as do those the caller cannot rebuild and those left when ``deadline`` passes (brokers unreachable).
- Bounded: one Fetch of at most 1 MiB at a time (doubled up to 64 MiB while not even one batch fits), the read ends at
  the high watermark of its first answer (an empty answer below it is asked again with a 5 s wait: tansu on object
  storage answers nothing when reading its batches outlasts the wait), transport failures are retried with the
  producer's backoff; everything until ``deadline``. A partition the cluster view does not have at all (its topic
  deleted) is not waited for: its batches fall back at once. Each request waits for its answer at most
  :data:`REQUEST_S` (the Fetch wait plus a margin; less when ``request_timeout_ms`` is less) and never past
  ``deadline``: an answer that never comes (lost on the way) costs that much, and the request is asked again on a new
  connection, instead of eating the whole deadline.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bruce.wire import (
    FETCH,
    PRODUCE,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
    errorcodes,
    with_producer_identity,
)

from ..config import ProducerConfig
from ..errors import TransportError
from ..metadata import ClusterView
from ..transport import BrokerConnection, Timeouts, open_connection
from .journal import JournalEntry, TopicPartition
from .sequence_state import next_sequence

log = logging.getLogger("bruce.producer")


class ClusterSource(Protocol):
    """Where settling finds the current cluster view (:meth:`~bruce.producer.views.ProducerViews.cluster`)."""

    def cluster(self) -> ClusterView | None: ...


FETCH_BYTES = 1 << 20
MAX_FETCH_BYTES = 64 << 20
EMPTY_WAIT_MS = 5000  # the Fetch wait after an empty answer below the high watermark
LOG_WAIT_S = 5.0  # how long a batch the broker says it holds may take to show in its log before falling back
REQUEST_S = EMPTY_WAIT_MS / 1000 + 5.0  # the longest wait for one answer (a lost answer is asked again after it)
DUPLICATE_SEQUENCE_NUMBER = 46
_HEAD = struct.Struct(">qi")  # base offset, batch length
_IDENTITY = struct.Struct(">iqqqhi")  # last offset delta, base/max timestamp, producer id, epoch, base sequence
_IDENTITY_AT = 23
Rebuild = Callable[[JournalEntry], bytes | None]  # the batch to resend (any identity stamped), None: cannot


class Unsettled(Exception):
    """A retriable failure while settling (transport, leader moving)."""


class Missing(Unsettled):
    """The partition is not on the cluster (its topic deleted, or another cluster): nothing to wait for."""


@dataclass(slots=True)
class Settlement:
    """What :func:`settle` decided for each unsettled batch."""

    found: list[JournalEntry] = field(default_factory=list)  # in the log already
    resent: list[JournalEntry] = field(default_factory=list)  # resent with their identity, acknowledged
    fallback: list[JournalEntry] = field(default_factory=list)  # for the caller to send again as new
    acked: dict[TopicPartition, int] = field(default_factory=dict)  # highest offset known acknowledged
    gaps: int = 0
    unjournaled: list[TopicPartition] = field(default_factory=list)  # logs holding batches the journal never saw


def log_identities(data: bytes, producer_ids: set[int]) -> tuple[dict[tuple[int, int, int], int], int | None]:
    """The ``(producer id, epoch, base sequence) -> base offset`` of the whole v2 batches in ``data`` written by one of
    ``producer_ids``, and the offset after the last whole batch (None: no whole batch)."""
    found: dict[tuple[int, int, int], int] = {}
    after = None
    at = 0
    while at + _HEAD.size <= len(data):
        base, length = _HEAD.unpack_from(data, at)
        end = at + _HEAD.size + length
        if end > len(data) or length < 49:
            break
        if data[at + 16] == 2:
            delta, _, _, pid, epoch, seq = _IDENTITY.unpack_from(data, at + _IDENTITY_AT)
            if pid in producer_ids:
                found[(pid, epoch, seq)] = base
            after = base + delta + 1
        else:
            after = base + 1
        at = end
    return found, after


class Settler:
    """Settles a :class:`JournalState` through the cluster ``views`` sees (see the module rules)."""

    def __init__(self, views: ClusterSource, config: ProducerConfig, rebuild: Rebuild, *, deadline: float) -> None:
        self.views = views
        self.config = config
        self.rebuild = rebuild
        self.deadline = deadline  # time.monotonic()
        self.request_s = min(config.request_timeout_ms / 1000, REQUEST_S)
        self.timeouts = Timeouts(
            connect=min(config.connect_timeout_ms / 1000, self.request_s),
            socket=config.socket_timeout_ms / 1000,
            request=self.request_s,
        )
        self._conns: dict[int, BrokerConnection] = {}
        self._journaled: dict[tuple[str, int, int, int], int] = {}
        self._log_wait: dict[TopicPartition, float] = {}  # until when a partition's log may still catch up

    async def settle(
        self,
        entries: list[JournalEntry],
        acked: dict[TopicPartition, int],
        journaled: dict[tuple[str, int, int, int], int] | None = None,
    ) -> Settlement:
        """Settle ``entries`` (batches sent, not known as acknowledged); ``acked``: per partition the highest offset
        known as acknowledged (the log is read from there); ``journaled``: (topic, partition, producer id, epoch) ->
        the highest base sequence journaled (:func:`highest_sequences`), to find batches sent unjournaled."""
        self._journaled = journaled or {}
        out = Settlement(acked=dict(acked))
        by_tp: dict[TopicPartition, list[JournalEntry]] = {}
        for entry in entries:
            by_tp.setdefault(entry.tp, []).append(entry)
        try:
            for tp, entries in by_tp.items():
                await self._partition(tp, entries, out)
        finally:
            for conn in self._conns.values():
                conn.close()
        return out

    async def _partition(self, tp: TopicPartition, entries: list[JournalEntry], out: Settlement) -> None:
        backoff = max(self.config.retry_backoff_ms, 10) / 1000
        todo = list(entries)
        while True:
            try:
                await self._try_partition(tp, todo, out)
                return
            except Missing as e:
                log.warning("settling %s/%d: %s; %d batches fall back (sent again as new)", *tp, e, len(todo))
                out.fallback += todo
                return
            except (Unsettled, TransportError) as e:
                if time.monotonic() + backoff >= self.deadline:
                    log.warning("settling %s/%d: %s; %d batches fall back (sent again as new)", *tp, e, len(todo))
                    out.fallback += todo
                    return
                log.info("settling %s/%d: %s; retrying", *tp, e)
                self._drop_connection(tp)
                await asyncio.sleep(backoff)

    async def _try_partition(self, tp: TopicPartition, todo: list[JournalEntry], out: Settlement) -> None:
        """Settle ``todo`` (entries leave it as they are decided, so a retry goes on from where this stopped)."""
        newest = max(todo, key=lambda e: e.batch_id)
        current = (newest.producer_id, newest.producer_epoch)
        start = min(out.acked.get(tp, -1), *(e.known_offset for e in todo))
        in_log = await self._read_log(tp, max(start, 0), {e.producer_id for e in todo})
        high = self._journaled.get((*tp, *current))
        if high is not None and tp not in out.unjournaled and any(k[:2] == current and k[2] > high for k in in_log):
            out.unjournaled.append(tp)
            log.error(
                "settling %s/%d: the log holds batches of producer id %d epoch %d after the last one journaled "
                "(sequence %d): the earlier process sent batches its journal could not record",
                *tp,
                *current,
                high,
            )
        for entry in list(todo):
            offset = in_log.get((entry.producer_id, entry.producer_epoch, entry.base_sequence))
            if offset is not None:
                todo.remove(entry)
                out.found.append(entry)
                out.acked[tp] = max(out.acked.get(tp, -1), offset)
        old = [e for e in todo if (e.producer_id, e.producer_epoch) != current]
        for entry in old:
            todo.remove(entry)
            out.fallback.append(entry)
        todo.sort(key=lambda e: e.base_sequence)
        if todo:
            first = todo[0].base_sequence
            later = [e for e in out.found if e.tp == tp and (e.producer_id, e.producer_epoch) == current]
            if any(e.base_sequence > first for e in later):
                self._wait_for_log(tp, f"producer id {current[0]} has batches after sequence {first}, not there yet")
                out.gaps += 1
                log.error(
                    "settling %s/%d: producer id %d epoch %d has batches in the log after sequence %d, which is not "
                    "there (a gap: the log lost records, or it is not the log the batches were sent to); %d batches "
                    "fall back (sent again as new)",
                    *tp,
                    *current,
                    first,
                    len(todo),
                )
                out.fallback += todo
                todo.clear()
        sequence = todo[0].base_sequence if todo else 0
        while todo:
            entry = todo[0]
            data = self.rebuild(entry)
            if data is None:
                out.fallback += todo
                todo.clear()
                return
            code, offset = await self._produce(tp, entry, data, sequence)
            if code == 0:
                todo.pop(0)
                out.resent.append(entry)
                out.acked[tp] = max(out.acked.get(tp, -1), offset)
                sequence = next_sequence(sequence, _count(data))
                continue
            error = errorcodes.lookup(code)
            if error.retriable and not error.name.endswith(("SEQUENCE_NUMBER", "PRODUCER_ID", "PRODUCER_EPOCH")):
                raise Unsettled(f"produce answered {error}")
            again = await self._read_log(tp, max(start, 0), {entry.producer_id})
            if (entry.producer_id, entry.producer_epoch, sequence) in again:
                todo.pop(0)
                out.resent.append(entry)
                sequence = next_sequence(sequence, _count(data))
                continue
            if code == DUPLICATE_SEQUENCE_NUMBER:
                self._wait_for_log(tp, f"resending sequence {sequence} answered {error}, not in the log yet")
            log.warning(
                "settling %s/%d: resending sequence %d answered %s and it is not in the log; %d batches fall back "
                "(sent again as new, possible duplicates)",
                *tp,
                sequence,
                error,
                len(todo),
            )
            out.fallback += todo
            todo.clear()

    async def _leader(self, tp: TopicPartition) -> BrokerConnection:
        view = self.views.cluster()
        leader = None if view is None else view.leader(*tp)
        if view is not None and leader is None:
            topic = view.topic(tp[0])
            if topic is None or tp[1] >= topic.partition_count:
                raise Missing(f"the partition is not on the cluster {view.cluster_id or ''}".rstrip())
        if view is None or leader is None:
            raise Unsettled(f"no leader known for {tp[0]}/{tp[1]}")
        conn = self._conns.get(leader)
        if conn is None or not conn.alive:
            broker = view.brokers[leader]
            config = self.config
            conn = await open_connection(
                broker.host, broker.port, config.client_id or "bruce", self.timeouts, config.protocol,
                security=config.security,
            )  # fmt: skip
            self._conns[leader] = conn
        return conn

    def _wait_for_log(self, tp: TopicPartition, why: str) -> None:
        """The broker says a batch is stored that its log does not show yet (a gap, a DUPLICATE_SEQUENCE_NUMBER
        answer): a write of the dead process may still be on its way into the log (tansu on object storage makes
        batches visible out of order). Raise :class:`Unsettled` — the partition is read again after the backoff —
        until :data:`LOG_WAIT_S` passed since the first time for this partition; then return (the caller falls back)."""
        until = self._log_wait.setdefault(tp, time.monotonic() + LOG_WAIT_S)
        if time.monotonic() < until:
            raise Unsettled(why)

    def _drop_connection(self, tp: TopicPartition) -> None:
        view = self.views.cluster()
        leader = None if view is None else view.leader(*tp)
        conn = self._conns.pop(leader, None) if leader is not None else None
        if conn is not None:
            conn.close()

    async def _read_log(self, tp: TopicPartition, offset: int, pids: set[int]) -> dict[tuple[int, int, int], int]:
        """The identities of ``pids``' batches in ``tp``'s log from ``offset`` to the high watermark."""
        found: dict[tuple[int, int, int], int] = {}
        end = None
        max_bytes = FETCH_BYTES
        wait_ms = 1  # the first answer tells the high watermark; then an empty answer below it is asked again, longer
        while end is None or offset < end:
            if time.monotonic() >= self.deadline:
                raise Unsettled("the deadline passed while reading the log")
            conn = await self._leader(tp)
            request = FetchRequest(
                topics=(FetchTopic(tp[0], (FetchPartition(tp[1], offset, max_bytes),)),),
                max_wait_ms=wait_ms,
                min_bytes=1,
                max_bytes=max_bytes,
            )
            answer = await self._ask(conn, request, FETCH)
            part = next((p for t in answer.responses for p in t.partitions if p.partition_index == tp[1]), None)
            if part is None:
                raise Unsettled("the Fetch answer does not mention the partition")
            if part.error_code == 1 and part.log_start_offset > offset:  # OFFSET_OUT_OF_RANGE: deleted
                offset = part.log_start_offset
                continue
            if part.error_code:
                raise Unsettled(f"Fetch answered {errorcodes.lookup(part.error_code)}")
            if end is None:
                end = part.high_watermark
            batches, after = log_identities(part.records or b"", pids)
            found.update(batches)
            if after is None or after <= offset:
                if part.records and max_bytes < MAX_FETCH_BYTES:
                    max_bytes *= 2
                    continue
                if not part.records and offset < end:
                    wait_ms = EMPTY_WAIT_MS  # tansu on object storage: the read outlasted the wait, nothing sent
                    continue
                break  # nothing more before the high watermark
            offset = after
        return found

    async def _ask(self, conn: BrokerConnection, request: object, api: int) -> Any:
        """``request``'s answer on ``conn``, waited for at most :attr:`request_s` and never past the deadline; else
        :class:`Unsettled` (the caller's retry asks again on a new connection)."""
        wait = min(self.request_s, self.deadline - time.monotonic())
        if wait <= 0:
            raise Unsettled("the deadline passed")
        try:
            return await asyncio.wait_for(conn.request(request, conn.versions.version(api)), wait)  # type: ignore[union-attr]  # negotiated
        except TimeoutError:
            conn.close()
            raise Unsettled(f"no answer within {wait:.1f} s") from None

    async def _produce(self, tp: TopicPartition, entry: JournalEntry, data: bytes, sequence: int) -> tuple[int, int]:
        conn = await self._leader(tp)
        data = with_producer_identity(
            data, producer_id=entry.producer_id, producer_epoch=entry.producer_epoch, base_sequence=sequence
        )
        request = ProduceRequest(
            topic_data=(TopicProduceData(tp[0], (PartitionProduceData(tp[1], data),)),),
            acks=-1,
            timeout_ms=min(self.config.request_timeout_ms, EMPTY_WAIT_MS),
        )
        answer = await self._ask(conn, request, PRODUCE)
        for t in answer.responses:
            for p in t.partition_responses:
                if p.index == tp[1]:
                    return p.error_code, p.base_offset
        raise Unsettled("the Produce answer does not mention the partition")


async def find_batch(
    views: ClusterSource, config: ProducerConfig, tp: TopicPartition, start: int, identity: tuple[int, int, int]
) -> int | None:
    """The base offset of the batch written with ``identity`` (producer id, epoch, base sequence) in ``tp``'s log,
    read from ``start`` to the high watermark; None: not there. A batch not there is looked for again (after the
    backoff) for up to :data:`LOG_WAIT_S` (a write may still be on its way into the log). Transport failures and a
    leader moving are retried (the producer's backoff) for up to :func:`check_timeout`; then :class:`Unsettled` or
    the transport error."""
    begun = time.monotonic()
    settler = Settler(views, config, lambda _: None, deadline=begun + check_timeout(config))
    backoff = max(config.retry_backoff_ms, 10) / 1000
    try:
        while True:
            try:
                found = await settler._read_log(tp, max(start, 0), {identity[0]})
            except (Unsettled, TransportError):
                if time.monotonic() + backoff >= settler.deadline:
                    raise
                settler._drop_connection(tp)
                await asyncio.sleep(backoff)
                continue
            now = time.monotonic()
            if identity in found or now + backoff >= min(begun + LOG_WAIT_S, settler.deadline):
                return found.get(identity)
            await asyncio.sleep(backoff)
    finally:
        for conn in settler._conns.values():
            conn.close()


def highest_sequences(entries: list[JournalEntry]) -> dict[tuple[str, int, int, int], int]:
    """(topic, partition, producer id, epoch) -> the highest base sequence the journal names (for
    :meth:`Settler.settle`)."""
    high: dict[tuple[str, int, int, int], int] = {}
    for e in entries:
        key = (e.topic, e.partition, e.producer_id, e.producer_epoch)
        high[key] = max(high.get(key, -1), e.base_sequence)
    return high


def check_timeout(config: ProducerConfig) -> float:
    """How long :func:`find_batch` tries to read the log, in seconds: ``2 * request_timeout_ms +
    reconnect_backoff_max_ms``. A leader that moved is unreachable at its old address until the producer's view has
    its new one: one metadata request that may hang for ``request_timeout_ms``, the reconnect backoff, then the read
    itself. Giving up sooner sends a stored batch again as new: a duplicate."""
    return (2 * config.request_timeout_ms + config.reconnect_backoff_max_ms) / 1000


def _count(batch: bytes) -> int:
    """The record count of an encoded v2 batch."""
    return int.from_bytes(batch[57:61], "big")
