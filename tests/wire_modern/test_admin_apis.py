"""Later versions and admin APIs, golden vectors written by hand from Kafka's message specifications: Produce v13 and
Fetch v18 (topic ids, tagged fields decoded by name), ApiVersions v3's feature tags, DescribeConfigs, DescribeCluster,
the telemetry APIs and ConsumerGroupDescribe (the last two unknown to kafka-python); each decoded back and cut at
every byte. Every version round trips in
tests/wire/test_protocol_round_trips; every field is checked against kafka-python in
tests/wire/test_interop_kafka_python."""

from __future__ import annotations

from bruce.wire.protocol import api_versions as av
from bruce.wire.protocol import consumer_group_describe as cgd
from bruce.wire.protocol import describe_cluster as dcl
from bruce.wire.protocol import describe_configs as dc
from bruce.wire.protocol import fetch as f
from bruce.wire.protocol import get_telemetry_subscriptions as gts
from bruce.wire.protocol import produce as p
from bruce.wire.protocol import push_telemetry as pt

from .golden import request_frame, response_frame

TOPIC_ID = bytes(range(16))
TOPIC_ID_HEX = "000102030405060708090a0b0c0d0e0f"


def test_produce_v13_request_names_topics_by_id() -> None:
    body = p.ProduceRequest(
        topic_data=(
            p.TopicProduceData(topic_id=TOPIC_ID, partition_data=(p.PartitionProduceData(2, b"\x01\x02\x03"),)),
        ),
        acks=-1,
        timeout_ms=0x444,
        transactional_id="tx",
    )
    request_frame(
        body,
        13,
        "0000" "000d" "00000007" "0001" "63" "00"  # header v2: Produce v13
        "03" "7478" "ffff" "00000444"  # transactional id "tx", acks -1, timeout
        "02" + TOPIC_ID_HEX  # 1 topic, by id (v13: no name)
        + "02" "00000002" "04" "010203" "00"  # 1 partition: 2, 3 bytes of records, no tags
        "00" "00",  # topic tags, tags
    )  # fmt: skip


def test_fetch_v18_request_tagged_fields_by_name() -> None:
    partition = f.FetchPartition(
        partition=1,
        fetch_offset=0x123,
        partition_max_bytes=0x444,
        current_leader_epoch=5,
        last_fetched_epoch=4,
        replica_directory_id=b"\xaa" * 16,
        high_watermark=0x999,
    )
    body = f.FetchRequest(
        topics=(f.FetchTopic(topic_id=TOPIC_ID, partitions=(partition,)),),
        cluster_id="k",
        replica_state=f.ReplicaState(replica_id=3, replica_epoch=0x77),
        max_wait_ms=0x55,
        min_bytes=0x66,
        max_bytes=0x777,
        isolation_level=1,
    )
    request_frame(
        body,
        18,
        "0001" "0012" "00000007" "0001" "63" "00"  # header v2: Fetch v18 (no replica id since v15)
        "00000055" "00000066" "00000777" "01" "00000000" "ffffffff"  # waits, bytes, read committed, session 0/-1
        "02" + TOPIC_ID_HEX  # 1 topic, by id (v13+)
        + "02" "00000001" "00000005" "0000000000000123"  # 1 partition: 1, current leader epoch 5, offset 0x123
        "00000004" "ffffffffffffffff" "00000444"  # last fetched epoch, log start offset, max bytes
        "02" "00" "10" + "aa" * 16  # 2 tagged fields: 0 replica directory id (v17),
        + "01" "08" "0000000000000999"  # 1 high watermark (v18)
        "00"  # topic tags
        "01" "01"  # no forgotten topics, rack id ""
        "02" "00" "02" "026b"  # 2 tagged fields: 0 cluster id "k",
        "01" "0d" "00000003" "0000000000000077" "00",  # 1 replica state (v15): replica 3, epoch 0x77, no tags
    )  # fmt: skip


def test_api_versions_v3_response_feature_tags() -> None:
    body = av.ApiVersionsResponse(
        error_code=0,
        api_keys=(av.ApiVersionRange(0, 3, 13),),
        supported_features=(av.SupportedFeatureKey("metadata.version", 1, 27),),
        finalized_features_epoch=0x444,
    )
    frame = (
        "00000009"  # response header v0, even for flexible ApiVersions
        "0000" "02" "0000" "0003" "000d" "00" "00000000"  # no error; Produce v3-v13; throttle 0
        "02"  # 2 tagged fields:
        "00" "17" "02" "11" + b"metadata.version".hex() + "0001" "001b" "00"  # 0 supported features: 1..27
        + "01" "08" "0000000000000444"  # 1 finalized features epoch
    )  # fmt: skip
    response_frame(av.KEY, 3, body, frame)
    assert av.decode_api_versions_response(3, bytes.fromhex(frame)) == (9, body)


def test_describe_configs_v1_request_every_key() -> None:
    body = dc.DescribeConfigsRequest(
        resources=(dc.DescribeConfigsResource(resource_type=2, resource_name="t", configuration_keys=None),),
        include_synonyms=True,
    )
    request_frame(
        body,
        1,
        "0020" "0001" "00000007" "0001" "63"  # header v1: DescribeConfigs (32) v1
        "00000001" "02" "0001" "74" "ffffffff"  # 1 resource: topic "t", null keys: every config
        "01",  # include synonyms (v1+)
    )  # fmt: skip


def test_describe_cluster_v2_response() -> None:
    broker = dcl.DescribeClusterBroker(broker_id=1, host="h", port=9092, rack=None, is_fenced=True)
    body = dcl.DescribeClusterResponse(
        throttle_time_ms=0, error_code=0, endpoint_type=1, cluster_id="c1", controller_id=0x444, brokers=(broker,)
    )
    response_frame(
        dcl.KEY,
        2,
        body,
        "00000009" "00"  # response header v1
        "00000000" "0000" "00"  # throttle, no error, no message
        "01" "03" "6331" "00000444"  # endpoint type 1 (brokers, v1+), cluster id "c1", controller
        "02" "00000001" "0268" "00002384" "00" "01" "00"  # 1 broker: 1, "h", 9092, no rack, fenced (v2), no tags
        "80000000" "00",  # authorized operations not asked for, tags
    )  # fmt: skip


def test_push_telemetry_v0_request() -> None:
    body = pt.PushTelemetryRequest(
        client_instance_id=TOPIC_ID, subscription_id=0x123, terminating=False, compression_type=4, metrics=b"\x0a\x0b"
    )
    request_frame(
        body,
        0,
        "0048" "0000" "00000007" "0001" "63" "00"  # header v2: PushTelemetry (72) v0, flexible
        + TOPIC_ID_HEX  # client instance id
        + "00000123" "00" "04"  # subscription, not terminating, zstd
        "03" "0a0b" "00",  # metrics (2 bytes, raw), tags
    )  # fmt: skip


def test_get_telemetry_subscriptions_v0_response() -> None:
    body = gts.GetTelemetrySubscriptionsResponse(
        throttle_time_ms=0,
        error_code=0,
        client_instance_id=TOPIC_ID,
        subscription_id=0x123,
        accepted_compression_types=(4, 1),
        push_interval_ms=30_000,
        telemetry_max_bytes=1 << 20,
        delta_temporality=True,
        requested_metrics=("org.apache.kafka.producer.",),
    )
    response_frame(
        gts.KEY,
        0,
        body,
        "00000009" "00" "00000000" "0000"  # response header v1, throttle, no error
        + TOPIC_ID_HEX  # the client instance id given
        + "00000123" "03" "04" "01"  # subscription id, compression types zstd and gzip
        "00007530" "00100000" "01"  # push every 30 s, at most 1 MiB, deltas
        "02" "1b" + b"org.apache.kafka.producer.".hex()  # 1 metric prefix
        + "00",  # tags
    )  # fmt: skip


def test_consumer_group_describe_v1_response_member_type() -> None:
    assigned = cgd.ConsumerGroupDescribeAssignment(
        (cgd.ConsumerGroupDescribeTopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=(0,)),)
    )
    member = cgd.Member(
        member_id="m",
        member_epoch=5,
        client_id="c",
        client_host="/h",
        subscribed_topic_names=("t",),
        assignment=assigned,
        target_assignment=cgd.ConsumerGroupDescribeAssignment(()),
        member_type=1,
    )
    group = cgd.ConsumerGroupDescription(
        error_code=0,
        group_id="g",
        group_state="Stable",
        group_epoch=5,
        assignment_epoch=5,
        assignor_name="uniform",
        members=(member,),
    )
    response_frame(
        cgd.KEY,
        1,
        cgd.ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=(group,)),
        "00000009" "00" "00000000"  # response header v1, throttle
        "02" "0000" "00" "0267"  # 1 group: no error, no message, "g"
        "07" + b"Stable".hex() + "00000005" "00000005"  # state, group epoch, assignment epoch
        + "08" + b"uniform".hex()  # assignor
        + "02" "026d" "00" "00" "00000005"  # 1 member: "m", no instance id, no rack, epoch 5
        "0263" "032f68" "02" "0274" "00"  # client "c", host "/h", subscribed ["t"], no regex
        "02" + TOPIC_ID_HEX + "0274" "02" "00000000" "00" "00"  # assignment: topic id, "t", partition 0
        + "01" "00"  # target assignment: nothing
        "01" "00"  # member type 1: consumer (v1), member tags
        "80000000" "00" "00",  # authorized operations not asked for, group tags, tags
    )  # fmt: skip
