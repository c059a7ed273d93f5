"""bruce.wire's consumer-group and admin APIs against a real broker (tansu): a classic group's whole conversation
(FindCoordinator, JoinGroup with the member id it asks for, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch in both
shapes, DescribeGroups, ListGroups, LeaveGroup) at the newest versions tansu speaks and at old classic ones, each
request accepted and each answer decoded; the committed offsets read back by confluent-kafka, an independent client.
DescribeConfigs and DescribeCluster answers decode too."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafkaclient import KafkaClient

from bruce.wire.protocol import describe_cluster as dcl
from bruce.wire.protocol import describe_configs as dc
from bruce.wire.protocol import describe_groups as dg
from bruce.wire.protocol import find_coordinator as fc
from bruce.wire.protocol import heartbeat as hb
from bruce.wire.protocol import join_group as jg
from bruce.wire.protocol import leave_group as lv
from bruce.wire.protocol import list_groups as lg
from bruce.wire.protocol import offset_commit as oc
from bruce.wire.protocol import offset_fetch as of
from bruce.wire.protocol import sync_group as sg

pytestmark = pytest.mark.e2e

MEMBER_ID_REQUIRED = 79
OFFSETS = {0: 0x123, 1: 0x444}  # partition -> committed offset

# api -> version: the newest tansu 0.6 speaks, and old classic ones (JoinGroup v1: the first with a rebalance timeout)
VERSIONS = {
    "newest": {"join": 9, "sync": 5, "heartbeat": 4, "commit": 9, "fetch": 9, "describe": 5, "list": 5, "leave": 5},
    "classic": {"join": 1, "sync": 0, "heartbeat": 0, "commit": 2, "fetch": 1, "describe": 0, "list": 0, "leave": 0},
}


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _subscription(topic: str) -> bytes:
    """The consumer protocol's subscription v0 (JoinGroup metadata): the topics, no user data."""
    return b"\x00\x00" + struct.pack(">i", 1) + _string(topic) + b"\xff\xff\xff\xff"


def _assignment(topic: str) -> bytes:
    """The consumer protocol's assignment v0 (SyncGroup): every partition of ``topic``, no user data."""
    return b"\x00\x00" + struct.pack(">i", 1) + _string(topic) + struct.pack(">iii", 2, 0, 1) + b"\xff\xff\xff\xff"


def _join(client: KafkaClient, group: str, topic: str, version: int) -> jg.JoinGroupResponse:
    request = jg.JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=1_000,
        member_id="",
        protocol_type="consumer",
        protocols=(jg.JoinGroupRequestProtocol("range", _subscription(topic)),),
        reason="wire test",
    )
    answer = client.request(request, version=version)
    if answer.error_code == MEMBER_ID_REQUIRED:  # join again with the id the coordinator chose (Kafka: v4+; tansu: all)
        assert answer.member_id
        answer = client.request(dataclasses.replace(request, member_id=answer.member_id), version=version)
    assert answer.error_code == 0, answer
    return answer


def _committed_offsets(client: KafkaClient, group: str, topic: str, version: int, member: str, generation: int):
    if version >= 8:  # several groups per request
        wanted = of.OffsetFetchRequestGroup(group_id=group, member_id=member, member_epoch=generation, topics=None)
        answer = client.request(of.OffsetFetchRequest(groups=(wanted,)), version=version)
        (result,) = answer.groups
        assert (result.group_id, result.error_code) == (group, 0)
        topics = result.topics
    else:
        request = of.OffsetFetchRequest(group_id=group, topics=(of.OffsetFetchRequestTopic(topic, (0, 1)),))
        topics = client.request(request, version=version).topics
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in topics for p in t.partitions}


@pytest.mark.parametrize("which", list(VERSIONS))
def test_a_classic_group_conversation(tansu, new_topic, which: str) -> None:
    versions = VERSIONS[which]
    topic = new_topic(partitions=2)
    group = f"group-{topic}"
    with KafkaClient.connect(tansu.address, timeout=30) as client:
        (coordinator,) = client.request(fc.find_coordinator_request([group], version=6), version=6).coordinators
        assert (coordinator.key, coordinator.error_code, coordinator.port) == (group, 0, tansu.port)

        joined = _join(client, group, topic, versions["join"])
        member, generation = joined.member_id, joined.generation_id
        assert joined.leader == member and [m.metadata for m in joined.members] == [_subscription(topic)]
        assert joined.protocol_name == "range"

        sync = sg.SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(sg.SyncGroupRequestAssignment(member, _assignment(topic)),),
        )
        synced = client.request(sync, version=versions["sync"])
        assert (synced.error_code, synced.assignment) == (0, _assignment(topic))
        beat = hb.HeartbeatRequest(group_id=group, generation_id=generation, member_id=member)
        assert client.request(beat, version=versions["heartbeat"]).error_code == 0

        partitions = tuple(
            oc.OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_metadata=None)
            for p, o in OFFSETS.items()
        )
        commit = oc.OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member,
            topics=(oc.OffsetCommitRequestTopic(name=topic, partitions=partitions),),
        )
        (committed,) = client.request(commit, version=versions["commit"]).topics
        assert [(p.partition_index, p.error_code) for p in committed.partitions] == [(0, 0), (1, 0)]
        expected = {(topic, p): (o, 0) for p, o in OFFSETS.items()}
        assert _committed_offsets(client, group, topic, versions["fetch"], member, generation) == expected

        described = client.request(dg.DescribeGroupsRequest(groups=(group,)), version=versions["describe"])
        (state,) = described.groups
        assert (state.error_code, state.group_id, state.protocol_type) == (0, group, "consumer")
        assert [m.member_id for m in state.members] == [member]
        listed = client.request(lg.ListGroupsRequest(), version=versions["list"])
        assert listed.error_code == 0 and group in {g.group_id for g in listed.groups}

        if versions["leave"] >= 3:
            leave = lv.LeaveGroupRequest(group_id=group, members=(lv.MemberIdentity(member_id=member, reason="done"),))
        else:
            leave = lv.LeaveGroupRequest(group_id=group, member_id=member)
        left = client.request(leave, version=versions["leave"])
        assert left.error_code == 0 and all(m.error_code == 0 for m in left.members)

    consumer = Consumer({"bootstrap.servers": tansu.address, "group.id": group, "enable.auto.commit": False})
    try:
        read = consumer.committed([TopicPartition(topic, p) for p in OFFSETS], timeout=20)
    finally:
        consumer.close()
    assert {tp.partition: tp.offset for tp in read} == OFFSETS


def test_admin_answers_decode(client: KafkaClient, new_topic, tansu) -> None:
    topic = new_topic(partitions=1)
    resource = dc.DescribeConfigsResource(resource_type=2, resource_name=topic, configuration_keys=None)
    request = dc.DescribeConfigsRequest(resources=(resource,), include_synonyms=True, include_documentation=True)
    (result,) = client.request(request, version=4).results
    assert (result.error_code, result.resource_type, result.resource_name) == (0, 2, topic)
    cluster = client.request(dcl.DescribeClusterRequest(include_cluster_authorized_operations=False), version=1)
    assert cluster.error_code == 0 and cluster.endpoint_type == 1
    assert [(b.host, b.port) for b in cluster.brokers] == [("127.0.0.1", tansu.port)]
    assert cluster.controller_id in {b.broker_id for b in cluster.brokers}
