"""The project's fake Kafka cluster for fault injection: real TCP on loopback, asyncio, scripted faults.

Rules:
- Several :class:`FakeBroker` form a :class:`FakeCluster` that owns the topics (partition → leader broker id) and the
  stored records. Every broker answers ApiVersions, Metadata and Produce from that shared state; a produce to a
  partition the broker does not lead gets NOT_LEADER_OR_FOLLOWER (6), to an unknown topic or partition
  UNKNOWN_TOPIC_OR_PARTITION (3), as real brokers (and Bruce's mock) do. Like Kafka, it refuses with
  MESSAGE_TOO_LARGE (10) a partition's records when one of their log entries (a record batch, or a magic 0/1 message
  or compressed wrapper, each with its 12-byte offset and size) is larger than :attr:`FakeCluster.message_max_bytes`.
- Once a test gives a partition a raw log (:attr:`FakeCluster.fetch_logs`, :mod:`.fetchlog`: transaction markers, a
  last stable offset, an aborted-transactions list or none), it advertises and answers Fetch from those logs (never
  from the records produced to it); without one, a Fetch is an unscripted request.
- It answers InitProducerId with a new producer id (epoch 0) per request, and checks every idempotent batch (a
  producer id set) as Kafka 2.5+ does, per producer id and partition (tests/fakebroker/sequences.py): a resend of one
  of the last 5 batches is answered with success and the original base offset and not stored again; an older epoch
  is INVALID_PRODUCER_EPOCH (47); a sequence that does not follow (or a new epoch not starting at 0) is
  OUT_OF_ORDER_SEQUENCE_NUMBER (45); a producer it holds no state for may start at any sequence. ``cluster.sequences``
  plays older brokers on demand (``duplicate_error``: Kafka 0.11.0's DUPLICATE_SEQUENCE_NUMBER (46);
  ``unknown_producer_error``: Kafka 1.0-2.4's UNKNOWN_PRODUCER_ID (59)) and forgets a partition's producers as
  retention would (:meth:`FakeCluster.forget_producers`). Producer state survives a broker's stop and start, as
  Kafka's snapshots do.
- Broker 1 is the transaction coordinator of every transactional id (tests/fakebroker/transactions.py).
- Faults are scripted per broker and API, consumed one per request in order (:class:`Fault`); a disconnect scripted
  for ApiVersions closes the connection on it, as Kafka 0.8 or a broker starting up does. A broker may play Kafka
  0.8 (``legacy=True``): it closes the connection on ApiVersions and speaks version 0 only.
- Every request is kept in :attr:`FakeCluster.history`. Any request of an API nobody scripted a handler for is a test
  failure: it is recorded in :attr:`FakeCluster.unexpected` (the connection is closed) and :meth:`FakeCluster.verify`
  raises with the request shown; so do faults scripted but never used.
- Requests are decoded with ``bruce.wire`` (``decode_request``, ``decode_records``); responses built with it.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import Any

from bruce.wire.protocol import api_versions, fetch, init_producer_id, metadata, produce
from bruce.wire.protocol.base import REGISTRY, decode_request, encode_response
from bruce.wire.recordbatch import RecordBatch, decode_record_batches
from bruce.wire.records import Record, decode_records, entry_spans

from .fetchlog import FetchLog, fetch_answer
from .sequences import DUPLICATE_SEQUENCE_NUMBER, SEQUENCE_MODULUS, SequenceTable
from .transactions import KEYS as TXN_KEYS
from .transactions import TxnCoordinator

SERVED = {api_versions.KEY, metadata.KEY, produce.KEY, init_producer_id.KEY} | TXN_KEYS
FIRST_PRODUCER_ID = 0x1000
KAFKA_MESSAGE_MAX_BYTES = 1_048_588  # Kafka's default message.max.bytes (1 MiB + the 12-byte log overhead)


@dataclass(frozen=True, slots=True)
class Fault:
    """One scripted fault. Use the constructors: ``Fault.error(6)``, ``Fault.disconnect()``, ``Fault.delay(0.5)``,
    ``Fault.ok()`` (answer normally: a placeholder to reach a later request)."""

    kind: str  # "ok" | "error" | "disconnect" | "delay" | "bad_correlation" | "garbage"
    code: int = 0
    topic: str | None = None  # error: only this topic (None = every topic in the request)
    seconds: float = 0.0
    store: bool = True  # produce + disconnect: whether the records were stored before the connection dropped

    @staticmethod
    def ok() -> Fault:
        return Fault("ok")

    @staticmethod
    def error(code: int, topic: str | None = None) -> Fault:
        return Fault("error", code=code, topic=topic)

    @staticmethod
    def disconnect(*, store: bool = True) -> Fault:
        return Fault("disconnect", store=store)

    @staticmethod
    def delay(seconds: float) -> Fault:
        return Fault("delay", seconds=seconds)

    @staticmethod
    def bad_correlation() -> Fault:
        """Answer normally but with a correlation id one higher than the request's."""
        return Fault("bad_correlation")

    @staticmethod
    def garbage() -> Fault:
        """Answer with a frame whose body does not decode."""
        return Fault("garbage")


@dataclass(slots=True)
class Seen:
    """One request as the fake cluster saw it."""

    broker: int
    api: str
    version: int
    correlation_id: int
    body: Any
    outcome: str = "ok"  # "ok", "error <code>", "disconnect", "no response"
    produced: list[tuple[str, int, list[Record]]] = field(default_factory=list)
    entry_sizes: list[int] = field(default_factory=list)  # produce: the size of each log entry received
    sequences: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # produce: (topic, partition,
    # producer id, epoch, base sequence) of each idempotent batch received
    duplicates: int = 0  # produce: batches recognised as resends of stored ones

    def __str__(self) -> str:
        return f"broker {self.broker}: {self.api} v{self.version} (correlation {self.correlation_id}) → {self.outcome}"


class FakeBroker:
    def __init__(self, cluster: FakeCluster, node_id: int, *, legacy: bool = False) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.legacy = legacy
        self.port = 0
        self.faults: dict[int, list[Fault]] = {}
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def script(self, api_key: int, *faults: Fault) -> None:
        """Queue faults for the next requests of ``api_key`` to this broker (one per request)."""
        self.faults.setdefault(api_key, []).extend(faults)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Broker down: stop listening and drop every connection (same port on the next :meth:`start`)."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                frame = await reader.readexactly(size)
                if not await self._handle(frame, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    async def _handle(self, frame: bytes, writer: asyncio.StreamWriter) -> bool:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        spec = REGISTRY.get(api_key)
        name = spec.name if spec is not None else f"api{api_key}"
        if api_key not in self.cluster.served or (self.legacy and api_key != api_versions.KEY and version != 0):
            try:
                _, body = decode_request(frame)
            except Exception as e:  # the request is shown raw when it does not even decode
                body = f"{frame[:64].hex()}… ({e})"
            self.cluster.unexpected.append(Seen(self.node_id, name, version, correlation_id, body, "unexpected"))
            return False
        _, body = decode_request(frame)
        seen = Seen(self.node_id, name, version, correlation_id, body)
        self.cluster.history.append(seen)
        if api_key == api_versions.KEY and self.legacy:
            seen.outcome = "disconnect (0.8 broker)"
            return False
        queue = self.faults.get(api_key)
        if not queue and api_key == metadata.KEY:
            queue = self.cluster.metadata_faults
        fault = queue.pop(0) if queue else Fault.ok()
        if fault.kind == "delay":
            await asyncio.sleep(fault.seconds)
        if api_key == api_versions.KEY:
            if fault.kind == "disconnect":  # as a broker that is starting up, or Kafka 0.8
                seen.outcome = "disconnect"
                return False
            answer = self.cluster.api_versions_answer()
        elif api_key in TXN_KEYS:
            answer = self.cluster.txn.answer(api_key, body, fault, seen)
        elif api_key == init_producer_id.KEY and body.transactional_id is not None:
            answer = self.cluster.txn.init_producer_id(body, fault, seen)
        elif api_key == fetch.KEY:  # raw logs the test gave (tests/fakebroker/fetchlog.py)
            answer = fetch_answer(self.cluster, self.node_id, body)
        elif api_key in (metadata.KEY, init_producer_id.KEY):
            if fault.kind == "disconnect":
                seen.outcome = "disconnect"
                return False
            if api_key == metadata.KEY:
                answer = self.cluster.metadata_answer(body, fault)
            else:
                answer = self.cluster.init_producer_id_answer(fault, seen)
        else:
            answer = self.cluster.produce(self.node_id, version, body, fault, seen)
            if fault.kind == "disconnect":
                seen.outcome = "disconnect"
                return False
            if body.acks == 0:
                seen.outcome += " (no response: acks=0)"
                return True
        if fault.kind == "garbage":
            seen.outcome = "garbage"
            writer.write(struct.pack(">ii", 8, correlation_id) + b"\xff\xff\xff\xff")
        else:
            if fault.kind == "bad_correlation":
                seen.outcome = "bad correlation id"
                correlation_id += 1
            writer.write(encode_response(answer, version=version, correlation_id=correlation_id))
        await writer.drain()
        return True


class FakeCluster:
    """Brokers, topics and stored records. ``async with FakeCluster(brokers=2) as c: c.add_topic("t", [1, 2])``."""

    def __init__(
        self,
        brokers: int = 2,
        *,
        legacy: bool = False,
        autocreate: bool = False,
        message_max_bytes: int = KAFKA_MESSAGE_MAX_BYTES,
    ) -> None:
        self.autocreate = autocreate  # like auto.create.topics.enable: a Metadata request for a topic creates it
        self.message_max_bytes = message_max_bytes  # like message.max.bytes: the largest log entry accepted
        self.brokers = {i: FakeBroker(self, i, legacy=legacy) for i in range(1, brokers + 1)}
        self.topics: dict[str, dict[int, int]] = {}  # topic → partition → leader (-1: none)
        self.log: dict[tuple[str, int], list[Record]] = {}
        self.fetch_logs: dict[tuple[str, int], FetchLog] = {}  # what Fetch answers from (fetchlog.py)
        self.fetch_produced = False  # True: the record batches produced are kept in fetch_logs too, Fetch served
        self.history: list[Seen] = []
        self.unexpected: list[Seen] = []
        self.metadata_faults: list[Fault] = []  # cluster-wide: one per Metadata request, whichever broker gets it
        self.sequences = SequenceTable()  # idempotent producers' state per partition
        self.producer_ids: list[int] = []  # allocated by InitProducerId, in order
        self.advertised: dict[int, tuple[int, int]] = {}  # extra ApiVersions ranges (APIs it does not serve)
        self.txn = TxnCoordinator(self)  # transactional ids (tests/fakebroker/transactions.py)

    async def __aenter__(self) -> FakeCluster:
        for broker in self.brokers.values():
            await broker.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for broker in self.brokers.values():
            await broker.stop()

    @property
    def bootstrap(self) -> tuple[str, ...]:
        return tuple(b.address for b in self.brokers.values())

    def add_topic(self, name: str, leaders: list[int]) -> None:
        """A topic whose partition i is led by broker ``leaders[i]``."""
        self.topics[name] = dict(enumerate(leaders))

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        self.topics[topic][partition] = broker

    def records(self, topic: str, partition: int | None = None) -> list[Record]:
        if partition is not None:
            return list(self.log.get((topic, partition), []))
        return [r for (t, _), rs in sorted(self.log.items()) if t == topic for r in rs]

    def values(self, topic: str) -> list[bytes | None]:
        return [r.value for r in self.records(topic)]

    def forget_producers(self, topic: str, partition: int) -> None:
        """The partition's idempotent producers' state is gone, as when retention removed their records."""
        self.sequences.forget(topic, partition)

    def requests(self, api: str) -> list[Seen]:
        return [s for s in self.history if s.api == api]

    def verify(self) -> None:
        """Fail on any request nobody scripted and on scripted faults never used (call at the end of each test)."""
        problems = [f"unscripted request: {s} {s.body!r}" for s in self.unexpected]
        for broker in self.brokers.values():
            for api, faults in broker.faults.items():
                if faults:
                    problems.append(f"broker {broker.node_id}: {len(faults)} fault(s) for API {api} never used")
        if self.metadata_faults:
            problems.append(f"{len(self.metadata_faults)} metadata fault(s) never used")
        if problems:
            raise AssertionError("fake broker:\n  " + "\n  ".join(problems))

    # ---------------------------------------------------------------- answers

    @property
    def served(self) -> set[int]:
        """The APIs answered: :data:`SERVED`, and Fetch once a test gave a partition a raw log."""
        return SERVED | {fetch.KEY} if self.fetch_logs or self.fetch_produced else SERVED

    def api_versions_answer(self) -> api_versions.ApiVersionsResponse:
        ranges = tuple(
            api_versions.ApiVersionRange(key, min(REGISTRY[key].versions), max(REGISTRY[key].versions))
            for key in sorted(self.served)
        ) + tuple(api_versions.ApiVersionRange(key, *r) for key, r in sorted(self.advertised.items()))
        return api_versions.ApiVersionsResponse(error_code=0, api_keys=ranges)

    def metadata_answer(self, request: metadata.MetadataRequest, fault: Fault) -> metadata.MetadataResponse:
        brokers = tuple(
            metadata.MetadataResponseBroker(b.node_id, "127.0.0.1", b.port)
            for b in self.brokers.values()
            if b._server is not None
        )
        wanted = None if not request.topics else {t.name for t in request.topics}
        error = fault if fault.kind == "error" else None
        topics = []
        for name, partitions in sorted(self.topics.items()):
            if wanted is not None and name not in wanted:
                continue
            code = error.code if error is not None and error.topic in (None, name) else 0
            up = {b.node_id for b in self.brokers.values() if b._server is not None}
            parts = tuple(
                metadata.MetadataResponsePartition(
                    error_code=0 if leader in up else 5,  # a down broker's partitions have no leader
                    partition_index=p,
                    leader_id=leader if leader in up else -1,
                    replica_nodes=(leader,),
                    isr_nodes=(leader,) if leader in up else (),
                )
                for p, leader in sorted(partitions.items())
            )
            topics.append(metadata.MetadataResponseTopic(error_code=code, name=name, partitions=parts))
            if code:
                self._note(f"error {code}")
        for name in sorted((wanted or set()) - set(self.topics)):
            if self.autocreate and request.allow_auto_topic_creation:
                self.add_topic(name, [min(self.brokers)])
                topics.append(metadata.MetadataResponseTopic(error_code=5, name=name, partitions=()))
                self._note("created")
            else:
                topics.append(metadata.MetadataResponseTopic(error_code=3, name=name, partitions=()))
        return metadata.MetadataResponse(brokers=brokers, topics=tuple(topics))

    def init_producer_id_answer(self, fault: Fault, seen: Seen) -> init_producer_id.InitProducerIdResponse:
        if fault.kind == "error":
            seen.outcome = f"error {fault.code}"
            return init_producer_id.InitProducerIdResponse(error_code=fault.code)
        pid = FIRST_PRODUCER_ID + len(self.producer_ids)
        self.producer_ids.append(pid)
        seen.outcome = f"producer id {pid:#x}"
        return init_producer_id.InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=0)

    def _note(self, outcome: str) -> None:
        if self.history and self.history[-1].api == "Metadata":
            self.history[-1].outcome = outcome

    def produce(self, node: int, version: int, request: produce.ProduceRequest, fault: Fault, seen: Seen) -> Any:
        topics = []
        codes = set()
        for t in request.topic_data:
            parts = []
            for p in t.partition_data:
                data = p.records or b""
                records = decode_records(data)
                spans = list(entry_spans(data))
                batches = decode_record_batches(data) if spans and all(m == 2 for *_, m in spans) else []
                leader = self.topics.get(t.name, {}).get(p.index)
                sizes = [end - start for start, end, _ in spans]
                seen.entry_sizes.extend(sizes)
                seen.sequences.extend(
                    (t.name, p.index, b.producer_id, b.producer_epoch, b.base_sequence)
                    for b in batches
                    if b.producer_id >= 0
                )
                original = -1
                if fault.kind == "error" and fault.topic in (None, t.name):
                    code = fault.code
                elif leader is None:
                    code = 3
                elif leader != node:
                    code = 6
                elif max(sizes, default=0) > self.message_max_bytes:
                    code = 10
                else:
                    code, original = self._check_sequences(t.name, p.index, batches)
                base = -1
                seen.duplicates += original >= 0 or code == DUPLICATE_SEQUENCE_NUMBER
                if original >= 0:
                    base = original  # a resend of a stored batch: its offset, nothing stored
                elif code == 0 and (fault.kind != "disconnect" or fault.store):
                    log = self.log.setdefault((t.name, p.index), [])
                    base = len(log)
                    log.extend(records)
                    offset = base
                    for b in batches:
                        self.sequences.stored(t.name, p.index, b.producer_id, b.producer_epoch, *_span(b), offset)
                        offset += len(b.records)
                    if self.fetch_produced and batches:
                        self._keep_entries(t.name, p.index, data, spans, batches, base)
                seen.produced.append((t.name, p.index, records))
                codes.add(code)
                parts.append(produce.PartitionProduceResponse(index=p.index, error_code=code, base_offset=base))
            topics.append(produce.TopicProduceResponse(name=t.name, partition_responses=tuple(parts)))
        seen.outcome = "ok" if codes <= {0} else "error " + ",".join(map(str, sorted(codes)))
        if seen.duplicates:
            seen.outcome += f" ({seen.duplicates} duplicate)"
        return produce.ProduceResponse(responses=tuple(topics))

    def _keep_entries(
        self, topic: str, partition: int, data: bytes, spans: list[Any], batches: list[RecordBatch], base: int
    ) -> None:
        """Keep the record batches just stored at ``base`` (their base offsets set) for Fetch answers."""
        old = self.fetch_logs.get((topic, partition))
        entries = list(old.entries) if old is not None else []
        offset = base
        for (start, end, _), b in zip(spans, batches, strict=True):
            n = len(b.records)
            entries.append((offset, offset + n - 1, offset.to_bytes(8, "big", signed=True) + data[start + 8 : end]))
            offset += n
        self.fetch_logs[(topic, partition)] = FetchLog(tuple(entries), last_stable=offset)

    def _check_sequences(self, topic: str, partition: int, batches: list[RecordBatch]) -> tuple[int, int]:
        """(error code, original base offset of a duplicate or -1) for a partition's idempotent batches."""
        for b in batches:
            code, original = self.sequences.check(topic, partition, b.producer_id, b.producer_epoch, *_span(b))
            if code or original >= 0:
                return code, original
        return 0, -1


def _span(batch: RecordBatch) -> tuple[int, int]:
    """A batch's first and last sequence."""
    return batch.base_sequence, (batch.base_sequence + batch.last_offset_delta) % SEQUENCE_MODULUS
