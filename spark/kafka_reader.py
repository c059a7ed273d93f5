"""A small blocking client for reading topics: Metadata (leaders), ListOffsets (earliest/latest), Fetch by partition.

Rules:
- Built on bruce.wire and the producer's public connection (``open_connection``: ApiVersions negotiation through
  ``bruce.wire.versions``, the Kafka 0.8 fallback, connect/request timeouts). One connection per leader, opened on
  demand; each public call runs its own coroutine on the reader's event loop, and no request is ever left in flight
  between calls (the loop does not run while Spark consumes what a call returned).
- Latest offsets: the larger of ListOffsets(latest) and the high watermark a Fetch at that offset reports. A
  well-behaved broker gives the same number twice; tansu under-reports ListOffsets after multi-record batches.
- Offsets by timestamp (Spark's ``...ByTimestamp`` options): ListOffsets(timestamp) (v1+) gives a first candidate,
  then the records from there are read until one's timestamp reaches the one asked for (the answer) or the log ends
  (None). A well-behaved broker's candidate is the answer (one Fetch); tansu answers the log start for any
  timestamp, so there the lookup reads the partition from its start (docs/kafka-versions.md).
- :meth:`KafkaReader.read` yields the records of ``[start, end)`` batch by batch: records below ``start`` (a batch
  begins earlier) and from ``end`` on are dropped, control batches are stepped over, a partial batch at the end of a
  response is fetched again whole (``max.partition.fetch.bytes`` doubles, up to 64 MiB, when not even one batch fits),
  and an empty answer at the log end stops the read early (the range asked for more than exists).
- Failures: a transport failure or a retriable error (leader moved, not available, ...) refreshes metadata and retries
  after ``retry.backoff.ms``, at most ``retries`` times in a row; then — and at once for any other error (unknown
  topic, offset out of range, a record batch whose CRC does not match) — :class:`KafkaReadError` names the topic,
  partition, offset and Kafka's error name.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import pyarrow as pa

from bruce.producer import (
    AuthenticationFailed,
    BadMetadata,
    BrokerConnection,
    ClusterView,
    Timeouts,
    TransportError,
    build_view,
    client_context,
    new_event_loop,
    open_connection,
    parse_host_port,
)
from bruce.wire import (
    EARLIEST,
    FETCH,
    LATEST,
    LIST_OFFSETS,
    METADATA,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    BruceError,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    MalformedInput,
    Record,
    RecordColumns,
    errorcodes,
    metadata_request,
)

from .client_options import ClientConfig
from .columns import first_at_or_after, to_arrow
from .committed import FetchedBatch, Markers, by_aborted_list, decode_batches

T = TypeVar("T")
MAX_FETCH_BYTES = 64 << 20


class KafkaReadError(BruceError):
    """Reading from Kafka failed; the message names what was being read and Kafka's error."""

    reason = "KAFKA_READ"


class Retry(Exception):
    """A failure worth a metadata refresh and another try."""


class KafkaReader:
    """``with KafkaReader(config) as kafka: kafka.partitions("t"); kafka.read("t", 0, 0, 100)``."""

    def __init__(self, config: ClientConfig) -> None:
        client_context(config.security)  # certificates and keys load now: a bad one fails the read at once
        self.config = config
        self.timeouts = Timeouts(
            connect=config.connect_timeout_ms / 1000,
            socket=config.request_timeout_ms / 1000,
            request=config.request_timeout_ms / 1000,
        )
        self._loop = new_event_loop()  # run_until_complete, not asyncio.Runner: no SIGINT handler swapped per call
        self._view: ClusterView | None = None
        self._connections: dict[int, BrokerConnection] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        self._loop.run_until_complete(asyncio.sleep(0))  # one turn: the closed transports release their sockets
        self._loop.close()

    # ---------------------------------------------------------------- the public calls

    def partitions(self, topic: str) -> tuple[int, ...]:
        """Every partition id of ``topic``, sorted; :class:`KafkaReadError` if the topic does not exist."""
        view = self._call(f"metadata of topic {topic!r}", lambda: self._metadata(topic))
        info = view.topic(topic)
        assert info is not None
        return tuple(p.id for p in info.partitions)

    def topic_names(self) -> list[str]:
        """Every topic the brokers know, sorted, internal topics left out (as Java's consumer leaves them out of a
        pattern subscription)."""
        return self._call("the list of topics", self._topic_names)

    def offsets_for_times(self, topic: str, timestamps: Mapping[int, int]) -> dict[int, int | None]:
        """Per partition, the first offset whose record timestamp is ≥ the partition's timestamp (epoch ms), or
        None when no record is that recent (see the module rules)."""
        partitions = sorted(timestamps)
        return self._call(f"offsets by timestamp of {topic!r}", lambda: self._by_time(topic, partitions, timestamps))

    def earliest_offsets(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        """The first offset of each partition (the log start)."""
        return self._call(f"earliest offsets of {topic!r}", lambda: self._list_offsets(topic, partitions, EARLIEST))

    def latest_offsets(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        """The offset after the last record of each partition (see the module rules)."""
        return self._call(f"latest offsets of {topic!r}", lambda: self._latest(topic, partitions))

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[list[Record]]:
        """The records with ``start <= offset < end``, in order, one list per Fetch answer (under read_committed:
        the committed ones, below the last stable offset; see :mod:`bruce.spark.committed`)."""
        for fetched in self.fetched(topic, partition, start, end):
            records = fetched.records()
            if records:
                yield records

    def read_arrow(
        self, topic: str, partition: int, start: int, end: int, *, include_headers: bool = True
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`read` as Arrow batches in the read schema (:mod:`bruce.spark.columns`: no Python object per
        record), one per Fetch answer that holds rows."""
        for f in self.fetched(topic, partition, start, end):
            headers = include_headers
            batch = to_arrow(
                topic, partition, f.columns, start=f.start, end=f.end, dropped=f.dropped, include_headers=headers
            )
            if batch.num_rows:
                yield batch

    def fetched(self, topic: str, partition: int, start: int, end: int) -> Iterator[Fetched]:
        """The Fetch answers of ``[start, end)`` (see the module rules), decoded into columns."""
        offset = start
        max_bytes = self.config.max_partition_fetch_bytes
        empty_answers = 0
        committed = self.config.isolation == "read_committed"
        markers = Markers()
        while offset < end:
            where = f"{topic}/{partition} at offset {offset}"
            answer = self._call(f"fetch {where}", lambda o=offset, n=max_bytes: self._fetch(topic, partition, o, n))  # type: ignore[misc]  # mypy cannot type defaults that bind the loop's values
            data = answer.records or b""
            try:
                columns, batches = decode_batches(data)
                after = columns.end_offset
                if committed and after is not None:
                    dropped = self._dropped(topic, partition, answer, batches, after, markers)
                else:
                    dropped = [b.index for b in batches if b.marker is not None]  # control batches
            except MalformedInput as e:
                raise KafkaReadError(f"fetch {where}: {e}", reason=e.reason) from None
            if committed and 0 <= answer.last_stable_offset <= offset:
                return  # the stable part of the log ends before `end` (a transaction is still open)
            if after is None:  # no complete batch
                if data and max_bytes < MAX_FETCH_BYTES:
                    max_bytes = min(max_bytes * 2, MAX_FETCH_BYTES)
                    continue
                if data:
                    raise KafkaReadError(f"fetch {where}: one record batch is larger than {MAX_FETCH_BYTES} bytes")
                if answer.high_watermark <= offset:
                    return  # the log ends before `end`
                empty_answers += 1
                if empty_answers > self.config.retries:
                    raise KafkaReadError(
                        f"fetch {where}: no records returned though the high watermark is {answer.high_watermark}"
                    )
                continue
            empty_answers = 0
            if after <= offset:
                raise KafkaReadError(f"fetch {where}: the broker returned only records before the offset asked for")
            if committed and answer.last_stable_offset >= 0:
                end = min(end, answer.last_stable_offset)  # never past the stable part, whatever the broker sends
            yield Fetched(columns, offset, end, tuple(dropped), after)
            offset = after

    def _dropped(
        self,
        topic: str,
        partition: int,
        answer: FetchPartitionResponse,
        batches: list[FetchedBatch],
        after: int,
        markers: Markers,
    ) -> list[int]:
        """The batches of one read_committed answer left out (markers, aborted transactions)."""
        if answer.aborted_transactions:
            return by_aborted_list(batches, answer.aborted_transactions)
        high_watermark = answer.high_watermark

        def look_ahead() -> bool:  # markers of the log from markers.scanned on, read uncommitted (they may be > LSO)
            offset = markers.scanned
            if offset >= high_watermark:
                return False
            size = self.config.max_partition_fetch_bytes
            while True:
                where = f"fetch {topic}/{partition} at offset {offset} (transaction markers)"
                ahead = self._call(where, lambda n=size: self._fetch(topic, partition, offset, n, committed=False))  # type: ignore[misc]  # mypy cannot type defaults that bind the loop's values
                columns, found = decode_batches(ahead.records or b"")
                if columns.end_offset is not None:
                    markers.add(found, columns.end_offset)
                    return True
                if not ahead.records or size >= MAX_FETCH_BYTES:
                    return False
                size = min(size * 2, MAX_FETCH_BYTES)

        return markers.dropped(batches, after, look_ahead)

    # ---------------------------------------------------------------- retries

    def _call(self, what: str, attempt: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``attempt()`` on the loop, retrying :class:`Retry` failures per the module rules."""
        retries = self.config.retries
        for n in range(retries + 1):
            try:
                return self._loop.run_until_complete(attempt())
            except (Retry, TransportError) as e:
                if n == retries:
                    raise KafkaReadError(f"{what}: {e} (gave up after {retries} retries)") from None
                self._view = None  # refresh metadata: the leader may have moved
                time.sleep(self.config.retry_backoff_ms / 1000 * (n + 1))
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- coroutines

    async def _metadata(self, topic: str) -> ClusterView:
        view = self._view
        if view is not None and view.topic(topic) is not None:
            return view
        problems: list[str] = []
        async with contextlib.aclosing(self._metadata_answers([topic], problems)) as answers:
            async for where, answer in answers:
                for t in answer.topics:
                    if t.name == topic and t.error_code:
                        error = errorcodes.lookup(t.error_code)
                        if t.error_code == 3:
                            raise KafkaReadError(f"topic {topic!r} does not exist ({error})", reason=error.name)
                        if error.retriable:
                            raise Retry(f"metadata of topic {topic!r}: {error}")
                        raise KafkaReadError(f"metadata of topic {topic!r}: {error}", reason=error.name)
                try:
                    view = build_view(answer.brokers, answer.topics)
                except BadMetadata as e:
                    problems.append(f"{where}: {e}")
                    continue
                if view.topic(topic) is None:
                    raise KafkaReadError(
                        f"topic {topic!r} is not in the brokers' metadata", reason="UNKNOWN_TOPIC_OR_PARTITION"
                    )
                self._view = view
                return view
        raise Retry("no broker answered Metadata: " + "; ".join(problems))

    async def _topic_names(self) -> list[str]:
        problems: list[str] = []
        async with contextlib.aclosing(self._metadata_answers(None, problems)) as answers:
            async for _, answer in answers:
                return sorted(t.name for t in answer.topics if t.name and not t.is_internal and not t.error_code)
        raise Retry("no broker answered Metadata: " + "; ".join(problems))

    async def _metadata_answers(self, topics: list[str] | None, problems: list[str]) -> AsyncGenerator[tuple[str, Any]]:
        """A Metadata answer from each broker in turn (known ones first, then the bootstrap servers), until the
        caller stops; transport failures are noted in ``problems``."""
        servers = [parse_host_port(s) for s in self.config.bootstrap_servers]
        if self._view is not None:
            servers = [(b.host, b.port) for b in self._view.brokers.values()] + servers
        refused = 0
        for host, port in servers:
            try:
                conn = await self._open(host, port)
            except TransportError as e:
                refused += isinstance(e, AuthenticationFailed)
                problems.append(str(e))
                continue
            try:
                version = conn.versions.version(METADATA)  # type: ignore[union-attr]  # open_connection sets it
                request = metadata_request(topics, version=version, allow_auto_topic_creation=False)
                answer = await conn.request(request, version)
            except TransportError as e:
                problems.append(str(e))
                continue
            finally:
                conn.close()
            yield f"{host}:{port}", answer
        if refused == len(servers):  # retrying cannot help: the credentials or certificates are wrong
            raise KafkaReadError("; ".join(problems), reason="AUTHENTICATION_FAILED")

    async def _leader(self, topic: str, partition: int) -> BrokerConnection:
        view = await self._metadata(topic)
        info = view.topic(topic)
        assert info is not None
        if partition not in {p.id for p in info.partitions}:
            raise KafkaReadError(f"topic {topic!r} has no partition {partition}")
        leader = info.leaders.get(partition)
        if leader is None:
            raise Retry(f"partition {topic}/{partition} has no leader")
        conn = self._connections.get(leader)
        if conn is None or not conn.alive:
            broker = view.brokers[leader]
            conn = self._connections[leader] = await self._open(broker.host, broker.port)
        return conn

    async def _open(self, host: str, port: int) -> BrokerConnection:
        config = self.config
        return await open_connection(
            host, port, config.client_id, self.timeouts, config.protocol, security=config.security
        )

    async def _list_offsets(
        self, topic: str, partitions: Sequence[int], timestamp: int | Mapping[int, int]
    ) -> dict[int, int]:
        by_leader: dict[BrokerConnection, list[int]] = {}
        for p in partitions:
            by_leader.setdefault(await self._leader(topic, p), []).append(p)
        offsets: dict[int, int] = {}
        for conn, parts in by_leader.items():
            version = conn.versions.version(LIST_OFFSETS)  # type: ignore[union-attr]  # open_connection sets it
            asked = tuple(
                ListOffsetsPartition(p, timestamp if isinstance(timestamp, int) else timestamp[p]) for p in parts
            )
            answer = await conn.request(ListOffsetsRequest(topics=(ListOffsetsTopic(topic, asked),)), version)
            for t in answer.topics:
                for p in t.partitions:
                    _check(p.error_code, f"list offsets of {topic}/{p.partition_index}")
                    offsets[p.partition_index] = p.first_offset
        missing = set(partitions) - set(offsets)
        if missing:
            raise Retry(f"list offsets of {topic!r}: no answer for partitions {sorted(missing)}")
        return offsets

    async def _by_time(self, topic: str, partitions: Sequence[int], when: Mapping[int, int]) -> dict[int, int | None]:
        for p in partitions:
            conn = await self._leader(topic, p)
            if conn.versions.version(LIST_OFFSETS) == 0:  # type: ignore[union-attr]  # open_connection sets it
                raise KafkaReadError(f"offsets by timestamp of {topic!r}: the broker speaks ListOffsets v0 only")
        listed = await self._list_offsets(topic, partitions, when)
        latest = await self._latest(topic, partitions)
        found: dict[int, int | None] = {}
        for p in partitions:
            found[p] = None if listed[p] < 0 else await self._first_at(topic, p, listed[p], latest[p], when[p])
        return found

    async def _first_at(self, topic: str, partition: int, offset: int, end: int, timestamp: int) -> int | None:
        """The first offset in ``[offset, end)`` whose record timestamp is ≥ ``timestamp`` (None: none is)."""
        max_bytes = self.config.max_partition_fetch_bytes
        while offset < end:
            answer = await self._fetch(topic, partition, offset, max_bytes)
            try:
                columns, batches = decode_batches(answer.records or b"")
            except MalformedInput as e:
                raise KafkaReadError(f"fetch {topic}/{partition} at offset {offset}: {e}", reason=e.reason) from None
            after = columns.end_offset
            if after is None or after <= offset:
                if answer.records and max_bytes < MAX_FETCH_BYTES:
                    max_bytes = min(max_bytes * 2, MAX_FETCH_BYTES)
                    continue
                return None
            control = [b.index for b in batches if b.marker is not None]
            rows = to_arrow(topic, partition, columns, start=offset, end=end, dropped=control, include_headers=False)
            found = first_at_or_after(rows, timestamp)
            if found is not None:
                return found
            offset = after
        return None

    async def _latest(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        listed = await self._list_offsets(topic, partitions, LATEST)
        latest = {}
        for p in partitions:
            answer = await self._fetch(topic, p, listed[p], 1, wait_ms=1)  # tansu omits the partition at 0 ms
            if self.config.isolation == "read_committed" and answer.last_stable_offset >= 0:
                latest[p] = answer.last_stable_offset  # the end of the stable part of the log
            else:
                latest[p] = max(listed[p], answer.high_watermark)
        return latest

    async def _fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        *,
        wait_ms: int | None = None,
        committed: bool | None = None,
    ) -> FetchPartitionResponse:
        conn = await self._leader(topic, partition)
        version = conn.versions.version(FETCH)  # type: ignore[union-attr]  # open_connection sets it
        if committed is None:
            committed = self.config.isolation == "read_committed"
        if committed and version < 4:
            raise KafkaReadError(
                f"kafka.isolation.level=read_committed needs Fetch v4 (Kafka 0.11+); the broker of {topic}/{partition} "
                f"speaks v{version}",
                reason="UNSUPPORTED_VERSION",
            )
        config = self.config
        request = FetchRequest(
            topics=(FetchTopic(topic, (FetchPartition(partition, offset, max_bytes),)),),
            max_wait_ms=config.fetch_max_wait_ms if wait_ms is None else wait_ms,
            min_bytes=1 if wait_ms is not None else config.fetch_min_bytes,
            max_bytes=max(max_bytes, config.fetch_max_bytes),
            isolation_level=READ_COMMITTED if committed else READ_UNCOMMITTED,
        )
        return partition_answer(await conn.request(request, version), topic, partition, offset)


def partition_answer(answer: FetchResponse, topic: str, partition: int, offset: int) -> FetchPartitionResponse:
    """The part of a Fetch answer about ``topic``/``partition``; raises for its errors (see the module rules)."""
    where = f"fetch {topic}/{partition} at offset {offset}"
    _check(answer.error_code, where)
    for t in answer.responses:
        for p in t.partitions:
            if t.topic == topic and p.partition_index == partition:
                if p.error_code == 1:
                    raise KafkaReadError(
                        f"{where}: OFFSET_OUT_OF_RANGE(1) — the records were deleted (retention) or the offset is "
                        f"past the log end (log start {p.log_start_offset}, high watermark {p.high_watermark})",
                        reason="OFFSET_OUT_OF_RANGE",
                    )
                _check(p.error_code, where)
                return p
    raise Retry(f"{where}: the answer does not mention the partition")


def _check(code: int, what: str) -> None:
    if code == 0:
        return
    error = errorcodes.lookup(code)
    if error.retriable or error.invalid_metadata:
        raise Retry(f"{what}: {error}")
    raise KafkaReadError(f"{what}: {error}", reason=error.name)


@dataclass(frozen=True, slots=True)
class Fetched:
    """One Fetch answer's records as ``columns``: of them, those with ``start <= offset < end`` outside the
    ``dropped`` batches (control batches, aborted transactions) are the ones asked for; ``after``: where the next
    Fetch starts."""

    columns: RecordColumns
    start: int
    end: int
    dropped: tuple[int, ...]
    after: int

    def records(self) -> list[Record]:
        """The records asked for, as :class:`~bruce.wire.Record` objects (one per record)."""
        dropped = set(self.dropped)
        kept = [i for i in range(self.columns.batches.count) if i not in dropped]
        return [r for r in self.columns.records(kept) if self.start <= r.offset < self.end]
