"""Interop with kafka-python, an independent implementation: it decodes what we encode and we decode what it encodes
(Produce v0 requests with message sets of every codec and both magics; Produce and Metadata of every version; and
every request and response of every API at every version kafka-python declares, field by field: its protocol classes
are generated from Kafka's own JSON message specifications)."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import uuid

import kafka.protocol.sasl
import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest as KMetadataRequest
from kafka.protocol.metadata import MetadataResponse as KMetadataResponse
from kafka.protocol.old.produce import ProduceRequest_v0 as KProduceRequestV0
from kafka.protocol.producer import ProduceRequest as KProduceRequest
from kafka.protocol.producer import ProduceResponse as KProduceResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bruce.wire.compression import Codec
from bruce.wire.messageset import build_message_set, decode_message_set
from bruce.wire.primitives import build
from bruce.wire.protocol import metadata as m
from bruce.wire.protocol import produce as p
from bruce.wire.protocol.base import (
    API_VERSIONS_KEY,
    REGISTRY,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

from .builders import IMPLEMENTATIONS, builders
from .strategies import distinct_value

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]
MESSAGES = [(b"key-0x123", b"value-0x444" * 20, 1_700_000_000_123), (None, b"v2", 5), (b"k3", None, 6), (b"", b"", 7)]


def _their_records(data: bytes) -> list[tuple]:
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            assert r.validate_crc()
            out.append((r.offset, r.timestamp if batch.magic else -1, r.key, r.value))
    return out


def _ours(data: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value) for r in decode_message_set(data)]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_decodes_our_produce_v0_request(codec: Codec, magic: int, implementation: str) -> None:
    with builders(implementation):
        records = build_message_set(MESSAGES, magic=magic, codec=codec)
    request = p.ProduceRequest(
        topic_data=(p.TopicProduceData("topic-0x123", (p.PartitionProduceData(0x444, records),)),),
        acks=1,
        timeout_ms=0x555,
    )
    frame = encode_request(request, version=0, correlation_id=0x123, client_id="bruce")
    theirs = KProduceRequestV0.decode(frame, header=True, framed=True)
    assert (theirs.header.api_key, theirs.header.correlation_id, theirs.header.client_id) == (0, 0x123, "bruce")
    assert (theirs.acks, theirs.timeout_ms) == (1, 0x555)
    ((name, ((index, their_records),)),) = theirs.topic_data  # the classic decoder yields plain tuples
    assert (name, index, their_records) == ("topic-0x123", 0x444, records)
    decoded = _their_records(their_records)
    assert [(k, v) for _, _, k, v in decoded] == [(k, v) for k, v, _ in MESSAGES]
    assert decoded == _ours(records)
    if magic:
        assert [ts for _, ts, _, _ in decoded] == [ts for *_, ts in MESSAGES]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_we_decode_sets_kafka_python_builds(codec: Codec, magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 20)
    for offset, (key, value, ts) in enumerate(MESSAGES):
        builder.append(offset, timestamp=ts, key=key, value=value)
    data = bytes(builder.build())
    ours = _ours(data)
    assert [(k, v) for _, _, k, v in ours] == [(k, v) for k, v, _ in MESSAGES]
    assert ours == _their_records(data)


# ---------------------------------------------------------------- every version, both directions


def _produce_request() -> p.ProduceRequest:
    return p.ProduceRequest(
        topic_data=(
            p.TopicProduceData("t1", (p.PartitionProduceData(0, b"\x01\x02"), p.PartitionProduceData(3, None))),
            p.TopicProduceData("t2", (p.PartitionProduceData(0x444, b"x" * 30),)),
        ),
        acks=-1,
        timeout_ms=0x123,
    )


@pytest.mark.parametrize("version", range(12))
def test_produce_request_every_version(version: int) -> None:
    ours = encode_request(_produce_request(), version=version, correlation_id=0x123, client_id="c")
    theirs = KProduceRequest.decode(ours, version=version, header=True, framed=True)
    assert [(t.name, [(q.index, q.records) for q in t.partition_data]) for t in theirs.topic_data] == [
        ("t1", [(0, b"\x01\x02"), (3, None)]),
        ("t2", [(0x444, b"x" * 30)]),
    ]
    assert (theirs.acks, theirs.timeout_ms) == (-1, 0x123)
    rebuilt = KProduceRequest(acks=-1, timeout_ms=0x123, transactional_id=None, topic_data=theirs.topic_data)
    rebuilt.with_header(correlation_id=0x123, client_id="c")
    assert decode_request(rebuilt.encode(version=version, header=True))[1] == _produce_request()


def _their_produce_response(version: int):
    kind = KProduceResponse
    topic_cls = kind.TopicProduceResponse
    partition_cls = topic_cls.PartitionProduceResponse
    partition = partition_cls(
        index=7,
        error_code=6,
        base_offset=0x444,
        log_append_time_ms=0x123,
        log_start_offset=0x111,
        record_errors=[],
        error_message=None,
    )
    return kind(responses=[topic_cls(name="t", partition_responses=[partition])], throttle_time_ms=9)


@pytest.mark.parametrize("version", range(12))
def test_produce_response_every_version(version: int) -> None:
    theirs = _their_produce_response(version).encode(version=version)
    _, ours = decode_response(0, version, (0x123).to_bytes(4, "big") + (b"\x00" if version >= 9 else b"") + theirs)
    partition = ours.responses[0].partition_responses[0]
    assert (ours.responses[0].name, partition.index, partition.error_code, partition.base_offset) == ("t", 7, 6, 0x444)
    assert partition.log_append_time_ms == (0x123 if version >= 2 else -1)
    assert partition.log_start_offset == (0x111 if version >= 5 else -1)
    assert ours.throttle_time_ms == (9 if version >= 1 else 0)
    back = KProduceResponse.decode(
        _response_body(encode_response(ours, version=version, correlation_id=1), version), version=version
    )
    assert back.responses[0].partition_responses[0].base_offset == 0x444


def _response_body(frame: bytes, version: int) -> bytes:
    """A response frame without its size, correlation id and (flexible versions, here empty) header tags."""
    assert frame[8:9] == b"\x00" or version < 9
    return frame[9:] if version >= 9 else frame[8:]


METADATA_RESPONSE = m.MetadataResponse(
    brokers=(m.MetadataResponseBroker(0x444, "host", 9092, "rack"),),
    topics=(
        m.MetadataResponseTopic(
            0,
            "t",
            (m.MetadataResponsePartition(0, 1, 0x444, (0x444, 5), (0x444,), leader_epoch=3, offline_replicas=(5,)),),
            topic_id=bytes(range(16)),
            is_internal=False,
            topic_authorized_operations=7,
        ),
    ),
    throttle_time_ms=2,
    cluster_id="cluster",
    controller_id=0x444,
)


def _their_metadata_response():
    broker_cls = KMetadataResponse.MetadataResponseBroker
    topic_cls = KMetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    (topic,) = METADATA_RESPONSE.topics
    return KMetadataResponse(
        throttle_time_ms=2,
        brokers=[broker_cls(node_id=0x444, host="host", port=9092, rack="rack")],
        cluster_id="cluster",
        controller_id=0x444,
        topics=[
            topic_cls(
                error_code=0,
                name="t",
                topic_id=uuid.UUID(bytes=topic.topic_id),
                is_internal=False,
                partitions=[
                    partition_cls(
                        error_code=0,
                        partition_index=1,
                        leader_id=0x444,
                        leader_epoch=3,
                        replica_nodes=[0x444, 5],
                        isr_nodes=[0x444],
                        offline_replicas=[5],
                    )
                ],
                authorized_operations=None,  # kafka-python: topic_authorized_operations, as a set of ACL operations
            )
        ],
        authorized_operations=None,
        error_code=0,
    )


@pytest.mark.parametrize("version", range(13))
def test_metadata_every_version(version: int) -> None:
    request = m.metadata_request(["a", "b"], version=version)
    theirs = KMetadataRequest.decode(
        encode_request(request, version=version, correlation_id=1), version=version, header=True, framed=True
    )
    assert [t.name for t in theirs.topics] == ["a", "b"]
    frame = encode_response(METADATA_RESPONSE, version=version, correlation_id=0x123)
    response = KMetadataResponse.decode(_response_body(frame, version), version=version)
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0x444, "host", 9092)]
    (topic,) = response.topics
    (partition,) = topic.partitions
    assert (topic.name, partition.partition_index, partition.leader_id) == ("t", 1, 0x444)
    assert (list(partition.replica_nodes), list(partition.isr_nodes)) == ([0x444, 5], [0x444])
    if version >= 7:
        assert partition.leader_epoch == 3
    if version >= 2:
        assert response.cluster_id == "cluster"
    again = _their_metadata_response().encode(version=version)
    prefix = (0x123).to_bytes(4, "big") + (b"\x00" if version >= 9 else b"")
    assert _comparable(decode_response(3, version, prefix + again)[1]) == _comparable(
        decode_response(3, version, frame[4:])[1]
    )


def _comparable(response: m.MetadataResponse) -> m.MetadataResponse:
    """Without the fields kafka-python's encoder represents differently (ACL sets, UUID objects)."""
    topics = tuple(
        dataclasses.replace(t, topic_id=m.NO_TOPIC_ID, topic_authorized_operations=0) for t in response.topics
    )
    return dataclasses.replace(response, topics=topics)


# ---------------------------------------------------------------- every API, every version both know

# Names kafka-python gives differently, per struct (its class name): theirs -> ours.
RENAMED = {
    "AddPartitionsToTxnRequest": {
        "v3_and_below_transactional_id": "transactional_id",
        "v3_and_below_producer_id": "producer_id",
        "v3_and_below_producer_epoch": "producer_epoch",
        "v3_and_below_topics": "topics",
    },
    "AddPartitionsToTxnResponse": {"results_by_topic_v3_and_below": "results_by_topic"},
    "InitProducerIdRequest": {"enable2_pc": "enable_2pc"},
    "MetadataResponse": {"authorized_operations": "cluster_authorized_operations"},  # kafka-python's own names
    "MetadataResponseTopic": {"authorized_operations": "topic_authorized_operations"},
    "DescribeClusterResponse": {"authorized_operations": "cluster_authorized_operations"},
}


def _their_messages() -> dict[tuple[int, bool], type]:
    """kafka-python's message class of every API it declares: ``{(api key, is request): class}``."""
    found: dict[tuple[int, bool], type] = {}
    modules = [kafka.protocol.sasl]
    for package in ("admin", "consumer", "metadata", "producer"):
        parent = importlib.import_module(f"kafka.protocol.{package}")
        modules += [
            importlib.import_module(f"{parent.__name__}.{m.name}") for m in pkgutil.iter_modules(parent.__path__)
        ]
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ApiMessage) and getattr(value, "_json", None):
                found[(value.API_KEY, value.is_request())] = value
    return found


THEIRS = _their_messages()
BOTH = [
    (spec, version, request)
    for key, spec in sorted(REGISTRY.items())
    for request in (True, False)
    if (key, request) in THEIRS
    for version in spec.versions
    if version <= THEIRS[(key, request)].max_version
]


def _plain(value: object) -> object:
    """A decoded value as plain data: UUIDs as their 16 bytes, buffers as bytes, sequences as lists, a set of
    operations (kafka-python's authorized operations) as the bit mask it stands for."""
    if isinstance(value, (set, frozenset)):
        return sum(1 << bit for bit in value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _same(ours: dict, theirs: object, version: int, path: str) -> None:
    """Our parsed struct and kafka-python's hold the same fields with the same values (an absent tagged field of ours
    is their default)."""
    renamed = RENAMED.get(type(theirs).__name__, {})
    fields = [f for f in theirs._struct._fields if f.for_version_q(version)]
    assert {renamed.get(f.name, f.name) for f in fields} == {k for k in ours if k != "tags" and k[0] != "_"}, path
    for field in fields:
        mine, their = ours[renamed.get(field.name, field.name)], getattr(theirs, field.name)
        where = f"{path}.{field.name}"
        if mine is None and field.tagged_field_q(version):
            assert their in (None, field.default), where
        elif field.is_struct():
            assert (mine is None) == (their is None), where
            if mine is not None:
                _same(mine, their, version, where)
        elif field.is_struct_array():
            assert (mine is None) == (their is None) and len(mine or ()) == len(their or ()), where
            for i, (m, t) in enumerate(zip(mine or (), their or (), strict=True)):
                _same(m, t, version, f"{where}[{i}]")
        else:
            assert _plain(mine) == _plain(their), where


@pytest.mark.parametrize(
    ("spec", "version", "request_"), BOTH, ids=[f"{s.name}-v{v}-{'request' if r else 'response'}" for s, v, r in BOTH]
)
def test_every_version_kafka_python_knows(spec, version: int, request_: bool) -> None:
    """Encoded by us, decoded by kafka-python: the same fields with the same values; re-encoded by kafka-python,
    decoded by us: the same again. Every field holds a value no other field holds."""
    schema = (spec.requests if request_ else spec.responses)[version]
    theirs_cls = THEIRS[(spec.key, request_)]
    value = distinct_value(schema)
    if spec.key == API_VERSIONS_KEY and not request_:
        value["error_code"] = 0  # kafka-python reads an ApiVersions answer with an error as v0
    ours = build(schema, value, spec.name)
    theirs = theirs_cls.decode(ours, version=version)
    _same(schema.parse(ours), theirs, version, theirs_cls.name)
    flexible = theirs_cls.flexible_version_q(version)  # a decoded message has no header: encode its body alone
    again = bytes(theirs_cls._struct.encode(theirs, version=version, compact=flexible, tagged=flexible))
    _same(schema.parse(again), theirs_cls.decode(again, version=version), version, theirs_cls.name)
    if again != ours:  # kafka-python leaves out tagged fields holding their default; nothing else may differ
        assert len(again) < len(ours), theirs_cls.name
