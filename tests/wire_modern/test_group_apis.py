"""Consumer-group APIs, golden vectors written by hand from Kafka's message specifications (classic and flexible
versions, nullable fields, the batched OffsetFetch, KIP-848's nullable assignment), each decoded back and cut at every
byte. Every version round trips in tests/wire/test_protocol_round_trips; every field is checked against kafka-python
in tests/wire/test_interop_kafka_python."""

from __future__ import annotations

from bruce.wire.protocol import consumer_group_heartbeat as cgh
from bruce.wire.protocol import join_group as jg
from bruce.wire.protocol import offset_commit as oc
from bruce.wire.protocol import offset_fetch as of

from .golden import request_frame, response_frame


def test_join_group_v5_request() -> None:
    body = jg.JoinGroupRequest(
        group_id="g",
        session_timeout_ms=0x123,
        rebalance_timeout_ms=0x444,
        member_id="m",
        group_instance_id="i",
        protocol_type="consumer",
        protocols=(jg.JoinGroupRequestProtocol("range", b"\x00\x01"),),
    )
    request_frame(
        body,
        5,
        "000b" "0005" "00000007" "0001" "63"  # header v1: JoinGroup v5, correlation id 7, client id "c"
        "0001" "67"  # group id "g"
        "00000123" "00000444"  # session timeout, rebalance timeout (v1+)
        "0001" "6d"  # member id "m"
        "0001" "69"  # group instance id "i" (v5+)
        "0008" + b"consumer".hex()  # protocol type
        + "00000001" "0005" + b"range".hex()  # 1 protocol: "range"
        + "00000002" "0001",  # its metadata: 2 bytes
    )  # fmt: skip


def test_join_group_v9_response() -> None:
    member = jg.JoinGroupResponseMember(member_id="m1", group_instance_id=None, metadata=b"\x07")
    body = jg.JoinGroupResponse(
        throttle_time_ms=0x10,
        error_code=0,
        generation_id=0x444,
        protocol_type="consumer",
        protocol_name="range",
        leader="m1",
        skip_assignment=True,
        member_id="m1",
        members=(member,),
    )
    response_frame(
        jg.KEY,
        9,
        body,
        "00000009" "00"  # response header v1: correlation id 9, no tags
        "00000010" "0000" "00000444"  # throttle, no error, generation
        "09" + b"consumer".hex()  # protocol type (v7+, compact nullable string)
        + "06" + b"range".hex()  # protocol name
        + "03" "6d31"  # leader "m1"
        "01"  # skip assignment (v9)
        "03" "6d31"  # member id "m1"
        "02" "03" "6d31" "00" "02" "07" "00"  # 1 member: "m1", no instance id, metadata 07, no tags
        "00",  # no tags
    )  # fmt: skip


def test_offset_commit_v2_request_with_retention_time() -> None:
    partition = oc.OffsetCommitRequestPartition(partition_index=3, committed_offset=0x123, committed_metadata=None)
    body = oc.OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=5,
        member_id="m",
        retention_time_ms=-1,
        topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(partition,)),),
    )
    request_frame(
        body,
        2,
        "0008" "0002" "00000007" "0001" "63"  # header v1: OffsetCommit v2
        "0001" "67" "00000005" "0001" "6d"  # group "g", generation 5, member "m"
        "ffffffffffffffff"  # retention time -1 (v2-v4)
        "00000001" "0001" "74"  # 1 topic "t"
        "00000001" "00000003" "0000000000000123" "ffff",  # 1 partition: 3, offset 0x123, null metadata
    )  # fmt: skip


def test_offset_commit_v10_request_names_topics_by_id() -> None:
    partition = oc.OffsetCommitRequestPartition(
        partition_index=1, committed_offset=0x444, committed_leader_epoch=7, committed_metadata=""
    )
    body = oc.OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=9,
        member_id="m",
        topics=(oc.OffsetCommitRequestTopic(topic_id=bytes(range(16)), partitions=(partition,)),),
    )
    request_frame(
        body,
        10,
        "0008" "000a" "00000007" "0001" "63" "00"  # header v2: OffsetCommit v10, no tags
        "0267" "00000009" "026d"  # group "g", member epoch 9, member "m"
        "00"  # group instance id null (v7+)
        "02" "000102030405060708090a0b0c0d0e0f"  # 1 topic, by id (v10)
        "02" "00000001" "0000000000000444" "00000007" "01" "00"  # 1 partition: 1, 0x444, leader epoch 7, "", tags
        "00" "00",  # topic tags, tags
    )  # fmt: skip


def test_offset_fetch_v8_request_asks_for_several_groups() -> None:
    body = of.OffsetFetchRequest(
        groups=(
            of.OffsetFetchRequestGroup(group_id="g1", topics=None),
            of.OffsetFetchRequestGroup(
                group_id="g2", topics=(of.OffsetFetchRequestTopics(name="t", partition_indexes=(0, 0x444)),)
            ),
        ),
        require_stable=True,
    )
    request_frame(
        body,
        8,
        "0009" "0008" "00000007" "0001" "63" "00"  # header v2: OffsetFetch v8
        "03"  # 2 groups (v8+; no group id or topics at the top any more)
        "03" "6731" "00" "00"  # "g1", null topics: every topic, no tags
        "03" "6732" "02" "0274" "03" "00000000" "00000444" "00" "00"  # "g2": topic "t", partitions 0 and 0x444
        "01" "00",  # require stable (v7+), tags
    )  # fmt: skip


def test_offset_fetch_v1_response() -> None:
    partition = of.OffsetFetchResponsePartition(partition_index=2, committed_offset=0x123, metadata="x", error_code=0)
    body = of.OffsetFetchResponse(topics=(of.OffsetFetchResponseTopic(name="t", partitions=(partition,)),))
    response_frame(
        of.KEY,
        1,
        body,
        "00000009"  # correlation id
        "00000001" "0001" "74"  # 1 topic "t"
        "00000001" "00000002" "0000000000000123" "0001" "78" "0000",  # partition 2, offset 0x123, "x", no error
    )  # fmt: skip


def test_consumer_group_heartbeat_v1_request_joining() -> None:
    body = cgh.ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=0,
        rack_id="r",
        rebalance_timeout_ms=0x444,
        subscribed_topic_names=("t",),
        server_assignor="uniform",
        topic_partitions=(),
    )
    request_frame(
        body,
        1,
        "0044" "0001" "00000007" "0001" "63" "00"  # header v2: ConsumerGroupHeartbeat (68) v1
        "0267" "026d" "00000000"  # group "g", member "m", epoch 0: joining
        "00" "0272"  # no instance id, rack "r"
        "00000444"  # rebalance timeout
        "02" "0274"  # subscribed topics ["t"]
        "00"  # no regex (v1)
        "08" + b"uniform".hex()  # server assignor
        + "01"  # owned partitions: none
        "00",  # tags
    )  # fmt: skip


def test_consumer_group_heartbeat_v0_response_with_and_without_an_assignment() -> None:
    assigned = cgh.ConsumerGroupHeartbeatTopicPartitions(topic_id=bytes(range(16)), partitions=(0, 2))
    body = cgh.ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=0,
        member_id="m",
        member_epoch=3,
        heartbeat_interval_ms=5000,
        assignment=cgh.ConsumerGroupHeartbeatAssignment(topic_partitions=(assigned,)),
    )
    head = "000000090000000000000000026d0000000300001388"  # error message null, interval 5000
    response_frame(
        cgh.KEY,
        0,
        body,
        head + "01"  # the assignment is there (a nullable struct: int8 1, then the struct)
        "02" "000102030405060708090a0b0c0d0e0f" "03" "00000000" "00000002" "00"  # 1 topic id: partitions 0, 2
        "00" "00",  # assignment tags, tags
    )  # fmt: skip
    unchanged = cgh.ConsumerGroupHeartbeatResponse(0, 0, None, "m", 3, 5000, None)
    response_frame(cgh.KEY, 0, unchanged, head + "ff00")  # int8 -1: no assignment (unchanged)
