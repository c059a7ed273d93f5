"""One sender per broker: a task that turns the broker's ready partitions into produce requests.

Rules:
- It sends only while the producer is not paused, with at most ``max_in_flight_per_broker`` requests outstanding
  (and never two for one partition: the dispatcher marks partitions busy).
- It connects when it has work (connect timeout, version negotiation); a connect failure is a pause trigger.
- Each request's outcome (response or transport failure) goes to the dispatcher exactly once, from the connection's
  token; with acks=0 the messages are done once written (a response some brokers send anyway is tolerated).
- It never swallows an exception: anything unexpected ends the task and so the producer's task group.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bruce.wire.compression import Codec
from bruce.wire.versions import PRODUCE

from .acks import Failure
from .dispatcher import Dispatcher
from .errors import TransportError
from .request import Compression, CompressionPolicy, Part, assemble, build_request, encode_records
from .transport import BrokerConnection, Timeouts, open_connection


class Sender:
    def __init__(self, broker: int, dispatcher: Dispatcher, policy: CompressionPolicy, timeouts: Timeouts) -> None:
        self.broker = broker
        self.dispatcher = dispatcher
        self.policy = policy
        self.timeouts = timeouts
        self.config = dispatcher.config
        self.counters = dispatcher.counters
        self.connection: BrokerConnection | None = None
        self.in_flight: dict[int, list[Part]] = {}  # request number → parts
        self._request_numbers = 0
        self._wakeup = asyncio.Event()
        self._retry_timer: asyncio.TimerHandle | None = None

    def wake(self) -> None:
        self._wakeup.set()

    @property
    def outstanding(self) -> int:
        return len(self.in_flight)

    async def run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self._pump()

    def close_connection(self) -> None:
        """Close the connection (outstanding requests fail: their messages come back as possible duplicates)."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    async def _pump(self) -> None:
        d = self.dispatcher
        loop = asyncio.get_running_loop()
        while not d.paused and len(self.in_flight) < self.config.max_in_flight_per_broker:
            candidates, later = d.candidates(self.broker, loop.time())
            if later is not None:
                self._wake_at(later)
            if not candidates:
                return
            conn = self.connection
            if conn is None or not conn.alive:
                conn = await self._connect()
                if conn is None or d.paused:
                    return
                continue  # the wait may have changed what is ready
            self._send(conn, candidates)

    async def _connect(self) -> BrokerConnection | None:
        d = self.dispatcher
        broker = d.view.brokers.get(self.broker) if d.view is not None else None
        if broker is None:
            return None
        try:
            conn = await open_connection(
                broker.host,
                broker.port,
                self.config.wire_client_id,
                self.timeouts,
                self.config.protocol,
                tolerate_unsolicited=True,
            )
        except TransportError as e:
            self.counters.inc("ConnectorConnectFail", labels=(("broker", str(self.broker)),))
            d.request_pause(f"cannot connect to broker {self.broker}: {e}")
            return None
        self.connection = conn
        return conn

    def _send(self, conn: BrokerConnection, candidates: list[Any]) -> None:
        d = self.dispatcher
        config = self.config
        parts, chosen = assemble(
            candidates,
            data_limit=config.produce_request_data_limit,
            message_max_bytes=config.message_max_bytes,
            policy=self.policy,
        )
        if not parts:
            return
        choice = conn.versions
        assert choice is not None
        encoded = [self._encode(part, chosen[part.queue], choice.magic, choice.zstd) for part in parts]
        request = build_request(parts, encoded, acks=config.acks, timeout_ms=config.replication_timeout_ms)
        expect_ack = config.acks != 0
        number = self._request_numbers = self._request_numbers + 1
        legacy = choice.magic < 2
        if expect_ack:
            self.in_flight[number] = parts

            def on_result(result: Any) -> None:
                if self.in_flight.pop(number, None) is None:
                    return
                if isinstance(result, Failure):
                    self.counters.inc(f"Connector{result.value}", labels=(("broker", str(self.broker)),))
                    if self.connection is conn:
                        self.connection = None
                    d.on_failure(self.broker, parts, result, written=True)
                else:
                    d.on_response(self.broker, parts, result, legacy)
                self.wake()

        else:
            on_result = None  # type: ignore[assignment]
        try:
            conn.send(request, choice.version(PRODUCE), on_result, expect_response=expect_ack)
        except TransportError as e:
            self.in_flight.pop(number, None)
            self.connection = None
            d.on_failure(self.broker, parts, Failure(e.reason), written=False)
            return
        d.started(self.broker, parts, expect_ack)
        if not expect_ack:
            d.on_written_no_ack(self.broker, parts)

    def _encode(self, part: Part, compression: Compression, magic: int, zstd: bool) -> bytes:
        data, codec, note = encode_records(part.messages, compression, magic=magic, zstd=zstd)
        part.codec = codec
        if compression.codec != Codec.NONE:
            self.counters.inc("MsgSetCompression" + ("Yes" if codec != Codec.NONE else "No"))
            if note:
                self.counters.inc("MsgSetCompression" + note, labels=(("codec", compression.codec.name.lower()),))
        return data

    def _wake_at(self, when: float) -> None:
        if self._retry_timer is not None and not self._retry_timer.cancelled():
            self._retry_timer.cancel()
        self._retry_timer = asyncio.get_running_loop().call_at(when, self.wake)

    def parts_in_flight(self) -> list[list[Part]]:
        return list(self.in_flight.values())
