"""The Produce frame written as buffers (bruce.wire.protocol.produce_frame) equals the general encoder's frame."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bruce.wire.errors import UsageError
from bruce.wire.protocol.base import decode_request, encode_request
from bruce.wire.protocol.produce import TOPIC_IDS, PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.protocol.produce_frame import INLINE, produce_frame

records = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=INLINE, max_size=INLINE + 50))
partitions = st.builds(PartitionProduceData, st.integers(0, 2**31 - 1), records)
topics = st.builds(TopicProduceData, st.text(min_size=1, max_size=20), st.lists(partitions, max_size=3).map(tuple))
requests = st.builds(
    ProduceRequest,
    st.lists(topics, max_size=3).map(tuple),
    st.sampled_from([-1, 0, 1]),
    st.integers(0, 2**31 - 1),
    st.one_of(st.none(), st.text(max_size=10)),
)


@settings(max_examples=300, deadline=None)
@given(
    requests, st.sampled_from(range(TOPIC_IDS)), st.integers(0, 2**31 - 1), st.one_of(st.none(), st.text(max_size=8))
)
def test_the_buffers_join_to_the_general_encoders_frame(
    body: ProduceRequest, version: int, correlation_id: int, client_id: str | None
) -> None:
    if version < 3:
        body = ProduceRequest(body.topic_data, body.acks, body.timeout_ms)  # no transactional id before v3
    pieces = produce_frame(body, version=version, correlation_id=correlation_id, client_id=client_id)
    expected = encode_request(body, version=version, correlation_id=correlation_id, client_id=client_id)
    assert b"".join(pieces) == expected
    large = [p.records for t in body.topic_data for p in t.partition_data if p.records and len(p.records) >= INLINE]
    assert all(any(piece is r for piece in pieces) for r in large)  # referred to, not copied


def test_large_records_are_their_own_buffers_and_the_frame_decodes() -> None:
    batch = bytes(range(256)) * 40
    body = ProduceRequest((TopicProduceData("t", (PartitionProduceData(0, batch), PartitionProduceData(1, b"x"))),))
    pieces = produce_frame(body, version=9, correlation_id=7, client_id="bruce")
    assert len(pieces) == 3 and pieces[1] is batch
    frame = b"".join(pieces)
    header, decoded = decode_request(frame[4:])
    assert header.correlation_id == 7 and decoded.topic_data[0].partition_data[0].records == batch


def test_tagged_fields_topic_ids_and_bad_values_take_the_general_encoder() -> None:
    tagged = ProduceRequest((TopicProduceData("t", (PartitionProduceData(0, b"r", tags={3: b"x"}),)),))
    pieces = produce_frame(tagged, version=9, correlation_id=1, client_id=None)
    assert pieces == [encode_request(tagged, version=9, correlation_id=1, client_id=None)]
    by_id = ProduceRequest(
        (TopicProduceData(topic_id=bytes(range(16)), partition_data=(PartitionProduceData(0, b"r"),)),)
    )
    pieces = produce_frame(by_id, version=TOPIC_IDS, correlation_id=1, client_id=None)
    assert pieces == [encode_request(by_id, version=TOPIC_IDS, correlation_id=1, client_id=None)]
    assert decode_request(pieces[0][4:])[1] == by_id
    with pytest.raises(UsageError):
        produce_frame(ProduceRequest((), acks=2**20), version=3, correlation_id=1, client_id="c")
