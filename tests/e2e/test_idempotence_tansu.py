"""Idempotent produce against tansu, the test broker: what it enforces and what it does not (pinned, so a change in
tansu shows here; docs/kafka-versions.md lists the same), confluent-kafka's idempotent producer on it, and a lost
acknowledgement through the cut-connection proxy (tests/netproxy.py) settled by the idempotence state's resends
with our wire codecs, every record read back once by confluent-kafka with CRC checks."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from kafkaclient import KafkaClient, Sent
from netproxy import proxy_in_thread

from bruce.producer.acks import Action, classify
from bruce.producer.idempotence.sequence_state import Idempotence
from bruce.wire.protocol import find_coordinator as fc
from bruce.wire.protocol import init_producer_id as ipi
from bruce.wire.protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.recordbatch import build_record_batch
from bruce.wire.versions import FIND_COORDINATOR, INIT_PRODUCER_ID

pytestmark = pytest.mark.e2e

TS = 1_700_000_000_000


def _request(topic: str, pid: int, epoch: int, seq: int, values: list[bytes]) -> ProduceRequest:
    batch = build_record_batch(
        [(None, v, TS, None) for v in values], producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )
    return ProduceRequest(topic_data=(TopicProduceData(topic, (PartitionProduceData(0, batch),)),), timeout_ms=5000)


def _produce(client: KafkaClient, topic: str, pid: int, epoch: int, seq: int, values: list[bytes]) -> int:
    ((answer,),) = [t.partition_responses for t in client.request(_request(topic, pid, epoch, seq, values)).responses]
    return answer.error_code


def _values(consume, topic: str, expected: int) -> list[bytes | None]:
    messages, errors = consume(topic, 0, expected)
    assert errors == []
    return [m.value for m in messages]


def test_tansu_init_producer_id_and_find_coordinator(client: KafkaClient) -> None:
    assert client.broker_versions[INIT_PRODUCER_ID] == (0, 5) and client.choice.epoch_bump
    answers = [client.request(ipi.InitProducerIdRequest(), version=v) for v in range(6)]
    assert [a.error_code for a in answers[:3]] == [-1, -1, -1]  # quirk: v0-v2 answer UNKNOWN_SERVER_ERROR
    granted = answers[3:]
    assert [a.error_code for a in granted] == [0, 0, 0] and {a.producer_epoch for a in granted} == {0}
    assert granted[0].producer_id < granted[1].producer_id < granted[2].producer_id  # a new id per request
    resume = ipi.InitProducerIdRequest(producer_id=granted[0].producer_id, producer_epoch=0)
    # quirk: an idempotent producer may not pass its id (Kafka ignores it)
    assert client.request(resume).error_code == -1
    version = client.choice.version(FIND_COORDINATOR)
    request = fc.find_coordinator_request(["tx"], key_type=fc.TRANSACTION, version=version)
    (coordinator,) = client.request(request, version=version).by_key(request).values()
    assert coordinator.error_code == 0 and coordinator.port > 0


def test_tansu_sequence_checks(client: KafkaClient, new_topic, confluent_consume) -> None:
    """What tansu enforces per producer id and partition, next to what Kafka 2.5+ answers."""
    topic, other, third = new_topic(), new_topic(), new_topic()
    pid = client.request(ipi.InitProducerIdRequest()).producer_id
    steps = [  # (topic, producer id, epoch, base sequence, values, tansu's answer, Kafka's answer)
        (topic, pid, 0, 0, [b"a", b"b"], 0, 0),
        (topic, pid, 0, 0, [b"a", b"b"], 46, 0),  # a resend: DUPLICATE_SEQUENCE_NUMBER; Kafka: success + offset
        (topic, pid, 0, 2, [b"c"], 0, 0),
        (topic, pid, 0, 10, [b"x"], 45, 45),  # a gap
        (topic, pid, 0, 1, [b"y"], 46, 45),  # below the last sequence, not a stored batch: still "duplicate"
        (topic, pid, 0, 3, [b"d"], 0, 0),
        (topic, pid, 1, 0, [b"e"], 90, 0),  # a new epoch of our own: PRODUCER_FENCED; Kafka accepts it at 0
        (topic, pid, 1, 5, [b"e"], 90, 45),
        (topic, pid, 0, 4, [b"f"], 0, 0),  # the refused epoch changed nothing
        (other, pid, 0, 7, [b"g"], 45, 0),  # a partition must start at 0; Kafka 2.5+ takes any first sequence
        (other, 0x7FFF_0000, 0, 0, [b"h"], 59, 0),  # a producer id tansu did not allocate: UNKNOWN_PRODUCER_ID
    ]
    answers = [_produce(client, t, p, e, s, v) for t, p, e, s, v, *_ in steps]
    assert answers == [tansu for *_, tansu, _ in steps]
    for seq in range(7):  # seven batches: a resend of the first is older than Kafka's window of 5
        assert _produce(client, third, pid, 0, seq, [b"%d" % seq]) == 0
    assert _produce(client, third, pid, 0, 0, [b"0"]) == 46  # tansu: a duplicate still (Kafka: 45)
    assert _values(confluent_consume, topic, 5) == [b"a", b"b", b"c", b"d", b"f"]  # each accepted batch once


def test_confluent_idempotent_producer_on_tansu(tansu, new_topic, confluent_consume) -> None:
    topic = new_topic()
    errors: list = []
    producer = Producer({"bootstrap.servers": tansu.address, "enable.idempotence": True, "linger.ms": 5})
    values = [b"idem-%d" % i for i in range(50)]
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=lambda err, _: errors.append(err) if err else None)
    assert producer.flush(30) == 0 and errors == []
    assert _values(confluent_consume, topic, len(values)) == values


def _wait_stored(direct: KafkaClient, topic: str, count: int) -> None:
    """Until tansu holds ``count`` records of ``topic`` (read on a direct connection; bounded)."""
    for _ in range(200):
        if len(direct.fetch_all(topic, 0, expected=0, max_rounds=1)) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"tansu never stored {count} records")


def test_answers_lost_in_a_cut_connection_are_settled_by_resending(tansu, client, new_topic, confluent_consume) -> None:
    """Three batches pipelined through the proxy are stored, their answers swallowed, the connection cut. The
    idempotence state keeps them for a resend with the same producer id, epoch and sequences: tansu recognises each
    one (DUPLICATE_SEQUENCE_NUMBER, which is success), and every record is stored once, in order."""
    topic = new_topic()
    idem = Idempotence()
    idem.init_request()
    idem.on_init_response(client.request(ipi.InitProducerIdRequest()))
    tp = (topic, 0)
    host, _, port = tansu.address.rpartition(":")

    def send(conn: KafkaClient, batch) -> Sent:
        return conn.send(_request(topic, batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.records))

    def settle(conn: KafkaClient, batch, sent: Sent) -> Action:
        ((answer,),) = [t.partition_responses for t in conn.receive(sent).responses]
        return idem.on_answer(batch, classify(answer.error_code, legacy=False, idempotent=True)).action

    with proxy_in_thread(host, int(port)) as proxy:
        conn = KafkaClient.connect(proxy.address)
        first = idem.assign(tp, 1, [b"r0"])
        assert settle(conn, first, send(conn, first)) is Action.OK  # the partition is known: pipelining allowed
        batches = [idem.assign(tp, 2, [b"r%d" % (2 * i + 1), b"r%d" % (2 * i + 2)]) for i in range(3)]
        proxy.set_drop_answers(True)
        for batch in batches:
            send(conn, batch)
        _wait_stored(client, topic, 7)
        assert proxy.cut() == 1
        conn.close()
        for batch in batches:
            idem.on_unknown_outcome(batch)
        proxy.set_drop_answers(False)
        conn = KafkaClient.connect(proxy.address)
        resent = []
        while (batch := idem.to_resend(tp)) is not None:
            idem.resend(batch)
            resent.append((batch, send(conn, batch)))
        assert [b.base_sequence for b, _ in resent] == [1, 3, 5]  # same identity as before the cut
        assert [settle(conn, b, sent) for b, sent in resent] == [Action.OK] * 3
        last = idem.assign(tp, 1, [b"r7"])
        assert settle(conn, last, send(conn, last)) is Action.OK
        conn.close()
    assert not idem.bump_needed and idem.bumps == 0
    assert _values(confluent_consume, topic, 8) == [b"r%d" % i for i in range(8)]
