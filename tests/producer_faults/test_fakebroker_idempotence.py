"""The fake broker's idempotent produce, proven against an independent client: confluent-kafka (librdkafka) with
``enable.idempotence=true`` gets its producer id from the fake broker, and a batch whose acknowledgement was lost is
resent by librdkafka with the same sequence and recognised by the fake broker, so every message is stored once, in
order. The broker's rules themselves (every error code) are tested in test_fakebroker_sequences.py."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError, Producer
from fakebroker import FakeCluster, Fault
from fakebroker.cluster import FIRST_PRODUCER_ID
from fakebroker.harness import scenario
from kafkaclient import KafkaClient

from bruce.wire.protocol import fetch, init_producer_id, produce
from bruce.wire.recordbatch import build_record_batch

VALUES = [b"m%03d" % i for i in range(40)]


def _produce_with_librdkafka(cluster: FakeCluster, partitions: int) -> list[tuple[int, int, bytes]]:
    """Produce VALUES round-robin over ``partitions`` with an idempotent librdkafka producer; returns the delivery
    reports (partition, offset, value); every report must be a success."""
    reports: list[tuple[int, int, bytes]] = []
    errors: list[KafkaError] = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            reports.append((msg.partition(), msg.offset(), msg.value()))

    producer = Producer(
        {
            "bootstrap.servers": ",".join(cluster.bootstrap),
            "enable.idempotence": True,
            "linger.ms": 20,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "socket.timeout.ms": 5000,
            "message.timeout.ms": 20000,
            "log_level": 0,
        }
    )
    for i, value in enumerate(VALUES):
        producer.produce("t", value, partition=i % partitions, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    return reports


def _cluster_for_librdkafka(cluster: FakeCluster) -> None:
    """librdkafka writes record batches (and can be idempotent) only when the broker also advertises Fetch v4+:
    advertised, not served (a Fetch would fail the test as unscripted)."""
    cluster.advertised[fetch.KEY] = (0, 12)
    cluster.add_topic("t", [1, 2][: len(cluster.brokers)])


def _values(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return [r.value for r in cluster.records("t", partition)]


def test_librdkafka_gets_a_producer_id_and_sends_sequences_the_fake_broker_accepts() -> None:
    async def body(cluster: FakeCluster) -> None:
        _cluster_for_librdkafka(cluster)
        reports = await asyncio.to_thread(_produce_with_librdkafka, cluster, 2)
        assert sorted(v for _, _, v in reports) == VALUES
        for p in (0, 1):
            assert _values(cluster, p) == VALUES[p::2]  # each message once, in order
        assert [s.outcome for s in cluster.requests("InitProducerId")] == [f"producer id {FIRST_PRODUCER_ID:#x}"]
        sequences = [s for seen in cluster.requests("Produce") for s in seen.sequences]
        assert {(pid, epoch) for *_, pid, epoch, _ in sequences} == {(FIRST_PRODUCER_ID, 0)}
        counts = [(p, len(records)) for seen in cluster.requests("Produce") for _, p, records in seen.produced]
        for p in (0, 1):  # each partition's batches continue each other from 0
            sizes = [n for q, n in counts if q == p]
            assert [seq for _, q, _, _, seq in sequences if q == p] == [sum(sizes[:i]) for i in range(len(sizes))]

    scenario(body, brokers=2)


@pytest.mark.parametrize("kafka_0_11", [False, True], ids=["kafka-1.0+", "kafka-0.11.0"])
def test_a_lost_acknowledgement_is_resent_with_its_sequence_and_stored_once(kafka_0_11: bool) -> None:
    """The first produce request is stored but its connection drops before the answer; librdkafka resends the
    batch with the same producer id, epoch and sequence, and the fake broker answers it as a duplicate: success with
    the original offset (Kafka 1.0+), or DUPLICATE_SEQUENCE_NUMBER (Kafka 0.11.0), which librdkafka takes as success."""

    async def body(cluster: FakeCluster) -> None:
        _cluster_for_librdkafka(cluster)
        cluster.sequences.duplicate_error = kafka_0_11
        cluster.brokers[1].script(produce.KEY, Fault.disconnect(store=True))
        reports = await asyncio.to_thread(_produce_with_librdkafka, cluster, 1)
        assert sorted(v for _, _, v in reports) == VALUES
        assert _values(cluster, 0) == VALUES  # stored once, in order
        first, resent = cluster.requests("Produce")[:2]
        assert first.outcome == "disconnect" and first.sequences == resent.sequences  # the same identity
        assert resent.duplicates == 1
        assert resent.outcome == ("error 46 (1 duplicate)" if kafka_0_11 else "ok (1 duplicate)")
        if not kafka_0_11:  # the original offsets, as Kafka answers a duplicate
            assert sorted(offset for _, offset, _ in reports)[: len(first.produced[0][2])] == list(
                range(len(first.produced[0][2]))
            )

    scenario(body, brokers=1)


def test_init_producer_id_faults_and_a_forgotten_producer_over_the_wire() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        cluster.brokers[1].script(init_producer_id.KEY, Fault.error(15), Fault.disconnect())
        cluster.sequences.unknown_producer_error = True  # plays Kafka 1.0-2.4

        def client_side() -> list:
            seen = []
            with KafkaClient.connect(cluster.bootstrap[0], timeout=5) as client:
                seen.append(client.request(init_producer_id.InitProducerIdRequest()).error_code)
                with pytest.raises(OSError):  # the scripted disconnect
                    client.request(init_producer_id.InitProducerIdRequest())
            with KafkaClient.connect(cluster.bootstrap[0], timeout=5) as client:
                granted = client.request(init_producer_id.InitProducerIdRequest())
                seen.append((granted.error_code, granted.producer_id, granted.producer_epoch))
                seen.append(_produce(client, granted.producer_id, 0))
                cluster.forget_producers("t", 0)  # as retention would; no request is being handled meanwhile
                seen.append(_produce(client, granted.producer_id, 5))
                seen.append(_produce(client, granted.producer_id, 0))
            return seen

        assert await asyncio.to_thread(client_side) == [15, (0, FIRST_PRODUCER_ID, 0), 0, 59, 0]
        assert [s.outcome for s in cluster.requests("InitProducerId")] == [
            "error 15",
            "disconnect",
            f"producer id {FIRST_PRODUCER_ID:#x}",
        ]
        assert _values(cluster, 0) == [b"seq0", b"seq0"]

    scenario(body, brokers=1)


def _produce(client: KafkaClient, pid: int, seq: int) -> int:
    batch = build_record_batch([(None, b"seq%d" % seq, 0, None)], producer_id=pid, producer_epoch=0, base_sequence=seq)
    request = produce.ProduceRequest((produce.TopicProduceData("t", (produce.PartitionProduceData(0, batch),)),))
    return client.request(request).responses[0].partition_responses[0].error_code
