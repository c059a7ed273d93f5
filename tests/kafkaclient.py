"""A minimal blocking Kafka client for tests, built on bruce.wire: one TCP connection, requests and responses.

Rules:
- Every socket operation has a timeout (:class:`socket.timeout` / ``TimeoutError`` escapes to the test); frames are
  capped at :data:`MAX_FRAME`.
- :meth:`KafkaClient.connect` sends ApiVersions (v3, falling back to v0 when the broker answers UNSUPPORTED_VERSION)
  and keeps the broker's ranges and the chosen versions (:mod:`bruce.wire.versions`); requests without an explicit
  version use the chosen one.
- Responses are matched by correlation id. A response nobody waits for yet (tansu answers even acks=0 produces) is
  kept, at most :data:`MAX_UNCLAIMED` of them.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from bruce.wire.protocol import api_versions, create_topics, fetch, list_offsets
from bruce.wire.protocol.base import REGISTRY, decode_response, encode_request
from bruce.wire.records import Record, decode_records
from bruce.wire.versions import ProtocolChoice, choose_versions

MAX_FRAME = 64 << 20
MAX_UNCLAIMED = 64


def _api_key_of(body: Any) -> int:
    for spec in REGISTRY.values():
        if type(body) is spec.request_type:
            return spec.key
    raise AssertionError(f"{type(body).__name__} is not a registered request type")


class BrokerClosed(ConnectionError):
    """The broker closed the connection (what a pre-0.10 broker does on ApiVersions)."""


@dataclass(frozen=True, slots=True)
class Sent:
    correlation_id: int
    api_key: int
    version: int


class KafkaClient:
    """A blocking connection to one broker. Use :meth:`connect` (context manager)."""

    def __init__(self, host: str, port: int, *, timeout: float = 10.0, client_id: str = "bruce-tests") -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.client_id = client_id
        self.broker_versions: dict[int, tuple[int, int]] | None = None
        self.choice: ProtocolChoice | None = None
        self._next_id = 1
        self._sent: dict[int, Sent] = {}
        self._unclaimed: dict[int, bytes] = {}

    @classmethod
    def connect(cls, address: str, *, timeout: float = 10.0, negotiate: bool = True) -> KafkaClient:
        """Connect to ``host:port``; with ``negotiate``, run ApiVersions and choose versions."""
        host, _, port = address.rpartition(":")
        client = cls(host, int(port), timeout=timeout)
        if negotiate:
            try:
                client.negotiate()
            except BaseException:
                client.close()
                raise
        return client

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # ------------------------------------------------------------ requests

    def negotiate(self) -> api_versions.ApiVersionsResponse:
        """ApiVersions (v3, or v0 after UNSUPPORTED_VERSION); sets :attr:`broker_versions` and :attr:`choice`."""
        response = self.api_versions(3)
        if response.error_code == 35:
            response = self.api_versions(0)
        if response.error_code:
            raise AssertionError(f"ApiVersions failed with error {response.error_code}")
        self.broker_versions = response.ranges()
        self.choice = choose_versions(self.broker_versions)
        return response

    def api_versions(self, version: int) -> api_versions.ApiVersionsResponse:
        sent = self.send(api_versions.ApiVersionsRequest(), version=version)
        frame = self._frame_for(sent.correlation_id)
        return api_versions.decode_api_versions_response(version, frame)[1]

    def send(self, body: Any, *, version: int | None = None) -> Sent:
        """Send a request (at ``version``, or the negotiated one); returns what :meth:`receive` needs."""
        api_key = _api_key_of(body)
        if version is None:
            if self.choice is None:
                raise AssertionError("no version given and none negotiated")
            version = self.choice.version(api_key)
        sent = Sent(self._next_id, api_key, version)
        self._next_id += 1
        self.sock.sendall(
            encode_request(body, version=version, correlation_id=sent.correlation_id, client_id=self.client_id)
        )
        self._sent[sent.correlation_id] = sent
        return sent

    def receive(self, sent: Sent) -> Any:
        """The decoded response to ``sent``."""
        frame = self._frame_for(sent.correlation_id)
        correlation_id, body = decode_response(sent.api_key, sent.version, frame)
        assert correlation_id == sent.correlation_id
        return body

    def request(self, body: Any, *, version: int | None = None) -> Any:
        """Send and wait for the response."""
        return self.receive(self.send(body, version=version))

    def _frame_for(self, correlation_id: int) -> bytes:
        self._sent.pop(correlation_id, None)
        while correlation_id not in self._unclaimed:
            frame = self._read_frame()
            (cid,) = struct.unpack_from(">i", frame)
            if len(self._unclaimed) >= MAX_UNCLAIMED:
                raise AssertionError(f"more than {MAX_UNCLAIMED} unclaimed responses")
            self._unclaimed[cid] = frame
        return self._unclaimed.pop(correlation_id)

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise BrokerClosed(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def _read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exact(4))
        if not 4 <= size <= MAX_FRAME:
            raise AssertionError(f"response frame size {size} out of range")
        return self._read_exact(size)

    # ------------------------------------------------------------ conveniences

    def create_topic(
        self, name: str, partitions: int, *, version: int | None = None
    ) -> create_topics.CreatableTopicResult:
        request = create_topics.CreateTopicsRequest(
            topics=(create_topics.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1),)
        )
        (result,) = self.request(request, version=version).topics
        return result

    def list_offset(
        self, topic: str, partition: int, timestamp: int = list_offsets.LATEST, *, version: int | None = None
    ) -> list_offsets.ListOffsetsPartitionResponse:
        request = list_offsets.ListOffsetsRequest(
            topics=(list_offsets.ListOffsetsTopic(topic, (list_offsets.ListOffsetsPartition(partition, timestamp),)),)
        )
        ((result,),) = [t.partitions for t in self.request(request, version=version).topics]
        return result

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = 1 << 20,
        max_wait_ms: int = 100,
        version: int | None = None,
    ) -> fetch.FetchPartitionResponse:
        request = fetch.FetchRequest(
            topics=(fetch.FetchTopic(topic, (fetch.FetchPartition(partition, offset, max_bytes),)),),
            max_wait_ms=max_wait_ms,
            max_bytes=max_bytes,
        )
        ((result,),) = [t.partitions for t in self.request(request, version=version).responses]
        return result

    def fetch_all(
        self, topic: str, partition: int, *, expected: int, version: int | None = None, max_rounds: int = 50
    ) -> list[Record]:
        """Fetch from offset 0 until ``expected`` records arrived (bounded by ``max_rounds`` requests)."""
        records: list[Record] = []
        offset = 0
        for _ in range(max_rounds):
            result = self.fetch(topic, partition, offset, version=version)
            if result.error_code:
                raise AssertionError(f"fetch error {result.error_code}")
            new = [r for r in decode_records(result.records or b"") if r.offset >= offset]
            records.extend(new)
            if len(records) >= expected:
                return records
            if new:
                offset = new[-1].offset + 1
        raise AssertionError(f"fetched {len(records)} of {expected} records in {max_rounds} rounds")
