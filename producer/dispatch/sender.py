"""One sender per broker: a task that turns the broker's ready partitions into produce requests.

Rules:
- It sends only while the producer is not paused, with at most ``max_in_flight_per_broker`` requests outstanding
  (and never two for one partition: the dispatcher marks partitions busy), and only while the connection's write
  buffer is below its high-water mark. Idempotent (:mod:`bruce.producer.idempotence.sequencer`): up to
  ``max_in_flight_requests_per_connection`` requests and batches per partition; each new connection tells the
  sequencer what the broker takes; nothing is produced before the producer id, which the sender asks for
  (InitProducerId on its connection) when it is due. A *warm* sender (the producer's start, idempotence wanted)
  connects and asks before it has messages; a failed connect ends that.
- It connects when it has work (connect timeout, version negotiation, reconnect backoff: at most
  ``reconnect_backoff_max_ms`` between attempts while it has work). A connect failure does not pause the producer
  (nothing was written; the other brokers keep sending): the broker is probed again after the backoff, a metadata
  refresh is requested (rate-limited) in case its partitions moved, and the failure goes to the trouble log.
- Each request's outcome (response or transport failure) goes to its RequestOutcomes exactly once, from the connection's
  token; with acks=0 the messages are done once written (a response some brokers send anyway is tolerated).
- SASL sessions are renewed before the broker's lifetime runs out (KIP-368): before the next request, once nothing is
  outstanding on the connection; a staged request is not written past that point.
- Staging (at-least-once, one request in flight per broker): while a request is outstanding, the next one for the
  same partitions is assembled and encoded, so encoding overlaps the broker's work. It is written only when the
  outstanding request was acknowledged without error for every partition, on the same live connection, to partitions
  this broker still leads; on anything else its messages go back to the front of their queues *before* the
  outstanding request's messages are given back, so per-partition order is kept.
- It never swallows an exception: an error inside a connection callback is re-raised by the sender's task, which ends
  the producer's task group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bruce.wire import INIT_PRODUCER_ID, PRODUCE, Codec, ProduceRequest

from ..acks import Failure
from ..errors import TransportError
from ..queues import Compression, CompressionPolicy, Part, PartitionQueue, assemble, build_request, encode_part
from ..transport import (
    AUTH_FAILED,
    CONNECT_FAILED,
    CONNECTED,
    DISCONNECTED,
    AuthenticationFailed,
    BrokerConnection,
    BrokerHealth,
    BrokerTrouble,
    ExponentialBackoff,
    Timeouts,
    open_connection,
    reauthenticate,
)
from .dispatcher import Dispatcher
from .responses import RequestOutcomes


@dataclass(slots=True)
class Prepared:
    """A produce request assembled and encoded for one connection."""

    conn: BrokerConnection
    parts: list[Part]
    request: ProduceRequest


class Sender:
    def __init__(
        self,
        broker: int,
        dispatcher: Dispatcher,
        outcomes: RequestOutcomes,
        policy: CompressionPolicy,
        timeouts: Timeouts,
        trouble: BrokerTrouble | None = None,
        refresh: Callable[[], None] = lambda: None,
    ) -> None:
        self.broker = broker
        self.trouble = trouble or BrokerTrouble()
        self._connect_failing = False  # a connect failed since the last connection: later ones are one episode
        self.refresh = refresh  # asks for a metadata refresh
        self.dispatcher = dispatcher
        self.outcomes = outcomes  # where each request's start and outcome go
        self.policy = policy
        self.timeouts = timeouts
        self.config = dispatcher.config
        self.counters = dispatcher.counters
        self.connection: BrokerConnection | None = None
        self.in_flight: dict[int, list[Part]] = {}  # request number → parts
        self.staged: Prepared | None = None
        self._stage = self.config.max_in_flight_per_broker == 1 and self.config.acks != 0  # at-least-once only
        self._request_numbers = 0
        self._wakeup = asyncio.Event()
        self._retry_timer: asyncio.TimerHandle | None = None
        self._reconnect = ExponentialBackoff(self.config.reconnect_backoff_ms, self.config.reconnect_backoff_max_ms)
        self._next_connect = 0.0
        self._crash: BaseException | None = None  # raised by run(): callbacks must not swallow errors
        self.health = BrokerHealth()
        self.auth_failure: str | None = None  # the broker refused authentication on the last connect
        self.warm = False  # connect (and ask for the producer id) before any message: the producer's start

    def wake(self) -> None:
        self._wakeup.set()

    @property
    def outstanding(self) -> int:
        return len(self.in_flight)

    async def run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            if self._crash is not None:
                raise self._crash
            await self._pump()

    def close_connection(self) -> None:
        """Close the connection (outstanding requests fail: their messages come back as possible duplicates)."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        self.unstage()

    def unstage(self) -> None:
        """Give the staged request's messages back to the front of their queues."""
        staged, self.staged = self.staged, None
        if staged is not None:
            for part in staged.parts:
                part.queue.staged = 0
                self.dispatcher.give_back(part.queue, part.messages, part.since)

    def take_all(self) -> list[Part]:
        """Remove and return every part outstanding or staged (the close deadline passed); their outcomes are the
        caller's from now on."""
        parts = [part for parts in self.in_flight.values() for part in parts]
        self.in_flight.clear()
        if self.staged is not None:
            parts += self.staged.parts
            self.staged = None
        return parts

    # ---------------------------------------------------------------- sending

    async def _pump(self) -> None:
        d = self.dispatcher
        loop = asyncio.get_running_loop()
        while not d.paused and len(self.in_flight) < self._limit():
            if self.connection is not None and not self.connection.writable:
                return  # flow control: woken again when the write buffer drains
            candidates, later = d.candidates(self.broker, loop.time())
            if later is not None:
                self._wake_at(later)
            if not candidates and not self.warm:
                return
            conn = self.connection
            if conn is None or not conn.alive:
                conn = await self._connect()
                if conn is None or d.paused:
                    return
                continue  # the wait may have changed what is ready
            if _reauth_due(conn):
                if self.in_flight or not await self._reauthenticate(conn):
                    return  # renewed once the outstanding request is answered (its outcome wakes us)
                continue
            seq = d.seq
            if seq is not None and not seq.may_produce():
                self._ask_producer_id(conn, loop.time())
                self.warm = False
                return  # woken when the producer id comes (or idempotence ends)
            self.warm = False
            if not candidates:
                return
            prepared = self._prepare(conn, candidates)
            if prepared is None:
                return
            self._write(prepared)

    async def _connect(self) -> BrokerConnection | None:
        d = self.dispatcher
        broker = d.view.brokers.get(self.broker) if d.view is not None else None
        if broker is None:
            return None
        now = asyncio.get_running_loop().time()
        if now < self._next_connect:
            self._wake_at(self._next_connect)
            return None
        node = f"{broker.host}:{broker.port}"
        try:
            conn = await open_connection(
                broker.host,
                broker.port,
                self.config.wire_client_id,
                self.timeouts,
                self.config.protocol,
                security=self.config.security,
                tolerate_unsolicited=True,
                on_writable=self.wake,
            )
            seq = d.seq
            if seq is not None and conn.versions is not None and not seq.connected(self.broker, conn.versions):
                conn.close()
                raise TransportError(
                    f"{node} closed the connection on ApiVersions (starting up?); the idempotent producer waits for it",
                    reason=Failure.BROKER_CLOSE,
                )
        except TransportError as e:
            labels = (("broker", str(self.broker)),)
            self.counters.inc("ConnectorConnectAttemptFail", labels=labels)
            if not self._connect_failing:  # Bruce's count: once per episode, not per retry
                self._connect_failing = True
                self.counters.inc("ConnectorConnectFail", labels=labels)
            if isinstance(e, AuthenticationFailed):  # reachable, but refusing us: not broker trouble
                self.auth_failure = self.dispatcher.refused[self.broker] = str(e)
                self.counters.inc("ConnectorAuthenticationFailed", labels=(("broker", str(self.broker)),))
                self.health.note(AUTH_FAILED, str(e))
            else:
                self.trouble.failed(node, str(e))
                self.health.note(CONNECT_FAILED, f"cannot connect: {e}")
            self.dispatcher.unreachable.add(self.broker)
            self.warm = False  # the producer id is asked for with the first messages instead
            self._next_connect = now + self._reconnect.next_delay() / 1000
            self._wake_at(self._next_connect)
            self.refresh()
            return None
        self.dispatcher.unreachable.discard(self.broker)
        self.dispatcher.refused.pop(self.broker, None)
        self._connect_failing = False
        self.trouble.reachable(node)
        self.auth_failure = None
        self._reconnect.reset()
        self.connection = conn
        self.health.note(CONNECTED)
        return conn

    async def _reauthenticate(self, conn: BrokerConnection) -> bool:
        """KIP-368: renew the SASL session before the broker's lifetime runs out; a failure closes the connection."""
        try:
            await reauthenticate(conn, self.config.security)
        except TransportError as e:
            self.counters.inc("ConnectorReauthenticationFailed", labels=(("broker", str(self.broker)),))
            self.auth_failure = str(e) if isinstance(e, AuthenticationFailed) else None
            if self.connection is conn:
                self.connection = None
            self.dispatcher.request_pause(f"re-authentication with broker {self.broker} failed: {e}")
            return False
        self.counters.inc("ConnectorReauthenticated", labels=(("broker", str(self.broker)),))
        return True

    def _limit(self) -> int:
        seq = self.dispatcher.seq
        return seq.max_in_flight if seq is not None else self.config.max_in_flight_per_broker

    def _ask_producer_id(self, conn: BrokerConnection, now: float) -> None:
        """Send InitProducerId on ``conn`` when one is due; its answer goes to the sequencer."""
        seq = self.dispatcher.seq
        request = seq.init_request(now) if seq is not None else None
        if request is None:
            return
        choice = conn.versions
        assert choice is not None and seq is not None

        def on_result(result: Any) -> None:
            try:
                seq.on_init(result, failed=isinstance(result, Failure))
            except BaseException as e:  # a bug: end the producer through this task, loudly
                self._crash = e
                self.wake()

        conn.send(request, choice.version(INIT_PRODUCER_ID), on_result)

    def _prepare(self, conn: BrokerConnection, queues: list[PartitionQueue]) -> Prepared | None:
        config = self.config
        choice = conn.versions
        assert choice is not None
        seq = self.dispatcher.seq
        if seq is not None:
            parts, encoded = seq.assemble(
                queues, choice.magic, self.policy, lambda part, c: self._encode(part, c, choice.magic, choice.zstd)
            )
            if not parts:
                return None
            timeout, tid = config.replication_timeout_ms, config.transactional_id
            request = build_request(parts, encoded, acks=config.acks, timeout_ms=timeout, transactional_id=tid)
            return Prepared(conn, parts, request)
        parts, chosen = assemble(
            queues,
            data_limit=config.produce_request_data_limit,
            message_max_bytes=config.message_max_bytes,
            policy=self.policy,
            magic=choice.magic,
        )
        if not parts:
            return None
        encoded = [self._encode(part, chosen[part.queue], choice.magic, choice.zstd) for part in parts]
        request = build_request(parts, encoded, acks=config.acks, timeout_ms=config.replication_timeout_ms)
        return Prepared(conn, parts, request)

    def _write(self, prepared: Prepared) -> None:
        d = self.dispatcher
        conn, parts = prepared.conn, prepared.parts
        choice = conn.versions
        assert choice is not None
        expect_ack = self.config.acks != 0
        number = self._request_numbers = self._request_numbers + 1
        legacy = choice.magic < 2
        on_result = None
        if expect_ack:
            self.in_flight[number] = parts

            def on_result(result: Any) -> None:
                if self.in_flight.pop(number, None) is None:
                    return
                try:
                    self._outcome(conn, parts, result, legacy)
                except BaseException as e:  # a bug: end the producer through this task, loudly
                    self._crash = e
                self.wake()

        # conn is alive (checked by the caller, nothing awaited since): send cannot fail
        conn.send(prepared.request, choice.version(PRODUCE), on_result, expect_response=expect_ack)
        outcomes = self.outcomes
        outcomes.started(self.broker, parts, expect_ack)
        if not expect_ack:
            outcomes.on_written_no_ack(self.broker, parts)
        elif self._stage and self.staged is None and d.seq is None:
            self._stage_next(conn, parts)

    def _stage_next(self, conn: BrokerConnection, sent: list[Part]) -> None:
        queues = [p.queue for p in sent if p.queue.ready_count and p.queue.leader == self.broker]
        if queues:
            self.staged = self._prepare(conn, queues)
            if self.staged is not None:
                for part in self.staged.parts:
                    part.queue.staged = len(part.messages)

    def _outcome(self, conn: BrokerConnection, parts: list[Part], result: Any, legacy: bool) -> None:
        d = self.dispatcher
        if isinstance(result, Failure):
            self.unstage()
            self.counters.inc(f"Connector{result.value}", labels=(("broker", str(self.broker)),))
            if self.connection is conn:
                self.connection = None
                self.health.note(DISCONNECTED, f"connection lost: {result.value}")
            self.outcomes.on_failure(self.broker, parts, result, written=True)
            return
        if self.staged is not None and not _all_acknowledged(parts, result):
            self.unstage()
        self.outcomes.on_response(self.broker, parts, result, legacy)
        staged, self.staged = self.staged, None
        if staged is None:
            return
        for part in staged.parts:
            part.queue.staged = 0
        sendable = (
            staged.conn is self.connection
            and staged.conn.alive
            and not _reauth_due(staged.conn)
            and staged.conn.writable
            and not d.paused
            and all(p.queue.leader == self.broker and not p.queue.busy for p in staged.parts)
        )
        if sendable:
            self._write(staged)
        else:
            self.staged = staged
            self.unstage()

    def _encode(self, part: Part, compression: Compression, magic: int, zstd: bool) -> bytes:
        config = self.config
        data, note = encode_part(
            part,
            compression,
            magic=magic,
            zstd=zstd,
            max_bytes=config.message_max_bytes,
            empty_as_null=config.empty_as_null,
        )
        if compression.codec != Codec.NONE:
            self.counters.inc("MsgSetCompression" + ("Yes" if part.codec != Codec.NONE else "No"))
            if note:
                self.counters.inc("MsgSetCompression" + note, labels=(("codec", compression.codec.name.lower()),))
        return data

    def _wake_at(self, when: float) -> None:
        if self._retry_timer is not None and not self._retry_timer.cancelled():
            self._retry_timer.cancel()
        self._retry_timer = asyncio.get_running_loop().call_at(when, self.wake)


def _reauth_due(conn: BrokerConnection) -> bool:
    due = conn.reauthenticate_at
    return due is not None and asyncio.get_running_loop().time() >= due


def _all_acknowledged(parts: list[Part], response: Any) -> bool:
    """Every part answered, with error 0, and nothing else answered."""
    answered = {(t.name, p.index) for t in response.responses for p in t.partition_responses if p.error_code == 0}
    return len(answered) == len(parts) and all((p.queue.topic, p.queue.partition) in answered for p in parts)
