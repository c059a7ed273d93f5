"""Produce frames written directly (wire/protocol/produce_frame.py) equal the construct schema's, byte for byte; what
the direct writer leaves to the schema still encodes (or fails) as the schema does."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bruce.wire import UsageError
from bruce.wire.protocol import FRAME_ENCODERS
from bruce.wire.protocol.base import encode_request, encode_request_by_schema
from bruce.wire.protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.protocol.produce_frame import encode_produce_frame

_text = st.text(max_size=40)
_records = st.one_of(st.none(), st.binary(max_size=300), st.binary(min_size=128, max_size=200).map(bytearray))
_partition = st.builds(PartitionProduceData, index=st.integers(-(2**31), 2**31 - 1), records=_records)
_topic = st.builds(TopicProduceData, name=_text, partition_data=st.lists(_partition, max_size=4).map(tuple))
_request = st.builds(
    ProduceRequest,
    topic_data=st.lists(_topic, max_size=4).map(tuple),
    acks=st.sampled_from([-1, 0, 1]) | st.integers(-(2**15), 2**15 - 1),
    timeout_ms=st.integers(-(2**31), 2**31 - 1),
    transactional_id=st.none() | _text,
)


def test_produce_requests_take_the_direct_writer() -> None:
    assert FRAME_ENCODERS[ProduceRequest] is encode_produce_frame


@given(
    body=_request,
    version=st.integers(0, 11),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=st.none() | _text,
)
def test_direct_frames_equal_the_schema(body: ProduceRequest, version: int, correlation_id: int, client_id) -> None:
    direct = encode_produce_frame(body, version, correlation_id, client_id)
    assert direct is not None
    assert direct == encode_request_by_schema(body, version=version, correlation_id=correlation_id, client_id=client_id)


def test_tagged_fields_are_left_to_the_schema() -> None:
    tagged = ProduceRequest(topic_data=(TopicProduceData("t", (PartitionProduceData(0, b"x", tags={5: b"ab"}),)),))
    assert encode_produce_frame(tagged, 9, 1, "c") is None
    assert encode_request(tagged, version=9, correlation_id=1) == encode_request_by_schema(
        tagged, version=9, correlation_id=1
    )
    top = ProduceRequest(topic_data=(), tags={1: b"z"})
    assert encode_produce_frame(top, 9, 1, "c") is None


@pytest.mark.parametrize(
    "body",
    [
        ProduceRequest(topic_data=(), acks=2**15),  # acks out of int16
        ProduceRequest(topic_data=(TopicProduceData("t", (PartitionProduceData(0, "text"),)),)),  # type: ignore[arg-type]
        ProduceRequest(topic_data=(TopicProduceData(b"t", ()),)),  # type: ignore[arg-type]
        ProduceRequest(topic_data=(TopicProduceData("t", (PartitionProduceData(2**31, b"x"),)),)),
    ],
)
def test_bad_input_fails_as_the_schema_fails(body: ProduceRequest) -> None:
    assert encode_produce_frame(body, 3, 1, "c") is None
    with pytest.raises(UsageError) as direct:
        encode_request(body, version=3, correlation_id=1)
    with pytest.raises(UsageError) as schema:
        encode_request_by_schema(body, version=3, correlation_id=1)
    assert str(direct.value) == str(schema.value)


def test_a_direct_frame_leaves_no_reference_cycle() -> None:
    body = ProduceRequest(topic_data=(TopicProduceData("t", (PartitionProduceData(0, b"x" * 1000),)),))
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        encode_request(body, version=9, correlation_id=1)
        gc.collect()
        assert gc.garbage == []
        encode_request_by_schema(body, version=9, correlation_id=1)  # the schema's build contexts are cycles
        gc.collect()
        assert gc.garbage != []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
