"""One loopback capture for the whole session, shared by bruce-wire's tests: independent clients talking to tansu.

``client_capture`` holds the pcap and what each client sent (``sent[client_id]``: the record values), so the tests
compare what bruce-wire decodes with what was produced. Clients, each with its own client id:
- confluent-kafka, idempotent (lz4, headers), and transactional: one transaction committed, one aborted;
- kafka-python, modern (gzip, read back by a kafka-python consumer) and held to old versions:
  ``api_version=(0, 10, 0)`` (magic 1, snappy) and ``(0, 8, 2)`` (magic 0, gzip), whose Produce requests tansu refuses
  (they are still captured, which is what the tests need);
- aiokafka reading the transactional topic with ``read_committed`` (control batches), and producing;
- ``tshark-range``: kafka-python held to ``(2, 1, 0)`` (Produce v7, Fetch v10), inside tshark 4.0's version table;
- the bruce daemon itself (in-process, its own producer) delivering datagrams;
- three consumer groups at once, each joining, fetching, committing and leaving (JoinGroup, SyncGroup, Heartbeat,
  OffsetFetch, OffsetCommit, LeaveGroup): confluent-kafka on the idempotent topic (``ck-group``: Fetch v16+, topics
  by id) and read_committed on the transactional topic (``ck-rc``: control batches), and kafka-python held to
  ``(2, 1, 0)`` on the ``tshark-range`` topic (``tshark-range-group``: group APIs inside tshark's table).
  ``consumed[client_id]`` holds the values each read.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from capturing import Capture

from bruce.proxy.daemon.embedded import EmbeddedBroker

HERE = Path(__file__).resolve().parent


@dataclass
class ClientCapture:
    path: Path
    port: int
    topics: dict[str, str]  # role -> topic name
    sent: dict[str, list[bytes]] = field(default_factory=dict)  # client id -> values produced
    consumed: dict[str, list[bytes]] = field(default_factory=dict)  # client id -> values read by a consumer group
    groups: dict[str, str] = field(default_factory=dict)  # client id -> consumer group


def _confluent(bootstrap: str, cap: ClientCapture) -> None:
    import confluent_kafka as ck

    topic = cap.topics["idempotent"]
    p = ck.Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4", "client.id": "ck-idem"}
    )
    values = [b"idem-%d" % i for i in range(30)]
    for i, v in enumerate(values):
        p.produce(topic, key=b"k%d" % (i % 3), value=v, headers=[("h", b"x%d" % i), ("bin", b"\xff\x00")])
        if i % 10 == 9:
            p.flush(10)
    assert p.flush(10) == 0
    cap.sent["ck-idem"] = values
    txn_topic = cap.topics["txn"]
    t = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "bruce-wire-txn", "client.id": "ck-txn"})
    t.init_transactions(10)
    t.begin_transaction()
    for i in range(5):
        t.produce(txn_topic, value=b"committed-%d" % i)
    t.commit_transaction(10)
    t.begin_transaction()
    for i in range(3):
        t.produce(txn_topic, value=b"aborted-%d" % i)
    t.flush(10)
    t.abort_transaction(10)
    cap.sent["ck-txn"] = [b"committed-%d" % i for i in range(5)] + [b"aborted-%d" % i for i in range(3)]


def _kafka_python(bootstrap: str, cap: ClientCapture) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    runs = [
        ("kp-modern", None, "gzip"),
        ("kp-0.10", (0, 10, 0), "snappy"),
        ("kp-0.8", (0, 8, 2), "gzip"),
        ("tshark-range", (2, 1, 0), None),
    ]
    for client_id, version, codec in runs:
        topic = cap.topics[client_id]
        extra: dict[str, Any] = {} if version is None else {"api_version": version}
        idempotence = {} if version is None else {"enable_idempotence": False}  # tansu: InitProducerId v1 fails
        p = KafkaProducer(
            bootstrap_servers=bootstrap, client_id=client_id, compression_type=codec, **extra, **idempotence
        )
        values = [b"%s-%d" % (client_id.encode(), i) for i in range(12)]
        for v in values:
            p.send(topic, key=b"key", value=v)
        p.flush(10)
        p.close()
        cap.sent[client_id] = values
        if version is not None and version < (0, 11):
            continue  # tansu refuses magic 0/1 sets (UNKNOWN_PRODUCER_ID): the requests are what the capture needs
        c = KafkaConsumer(bootstrap_servers=bootstrap, client_id=client_id, **extra)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)  # not seek_to_beginning: tansu answers ListOffsets v0 in v1's shape
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(got) < len(values) and time.monotonic() < deadline:
            for batch in c.poll(timeout_ms=300).values():
                got += [m.value for m in batch]
        c.close()
        assert got == values, client_id


def _aiokafka(bootstrap: str, cap: ClientCapture) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="aio")
        await p.start()
        values = [b"aio-%d" % i for i in range(7)]
        for v in values:
            await p.send_and_wait(cap.topics["aio"], v)
        await p.stop()
        cap.sent["aio"] = values
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id="aio-txn-reader", isolation_level="read_committed")
        await c.start()
        tp = TopicPartition(cap.topics["txn"], 0)
        c.assign([tp])
        await c.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(got) < 5 and time.monotonic() < deadline:
            for batch in (await c.getmany(timeout_ms=300)).values():
                got += [m.value for m in batch]
        await c.stop()
        assert got[:5] == [b"committed-%d" % i for i in range(5)], got  # tansu leaves the aborted ones in

    asyncio.run(run())


def _confluent_group(bootstrap: str, cap: ClientCapture, client_id: str, topic: str, isolation: str, want: int) -> None:
    import confluent_kafka as ck

    c = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": cap.groups[client_id],
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "check.crcs": True,
            "heartbeat.interval.ms": 100,  # heartbeats within the few seconds the group takes to form
            "session.timeout.ms": 6000,
        }
    )
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < want and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.commit(asynchronous=False)
    c.close()  # LeaveGroup
    cap.consumed[client_id] = got


def _kafka_python_group(bootstrap: str, cap: ClientCapture, client_id: str, topic: str, want: int) -> None:
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=client_id,
        group_id=cap.groups[client_id],
        api_version=(2, 1, 0),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=100,
        session_timeout_ms=6000,
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < want and time.monotonic() < deadline:
        for batch in c.poll(timeout_ms=200).values():
            got += [m.value for m in batch]
    c.commit()
    c.close()  # LeaveGroup
    cap.consumed[client_id] = got


def _consumer_groups(bootstrap: str, cap: ClientCapture) -> None:
    """The three groups at once (each takes the broker's few seconds of rebalance delay to form)."""
    cap.groups = {c: f"bruce-wire-{c}" for c in ("ck-group", "ck-rc", "tshark-range-group")}
    runs = [
        lambda: _confluent_group(bootstrap, cap, "ck-group", cap.topics["idempotent"], "read_uncommitted", 30),
        lambda: _confluent_group(bootstrap, cap, "ck-rc", cap.topics["txn"], "read_committed", 5),
        lambda: _kafka_python_group(bootstrap, cap, "tshark-range-group", cap.topics["tshark-range"], 12),
    ]
    failures: list[BaseException] = []

    def run(job: Any) -> None:
        try:
            job()
        except BaseException as e:  # re-raised below, in the fixture's thread
            failures.append(e)

    threads = [threading.Thread(target=run, args=(job,)) for job in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a consumer group did not finish within 60 s"
    if failures:
        raise failures[0]
    assert cap.consumed["ck-group"] == cap.sent["ck-idem"]
    assert cap.consumed["ck-rc"] == [b"committed-%d" % i for i in range(5)]
    assert cap.consumed["tshark-range-group"] == cap.sent["tshark-range"]


def _daemon(broker: EmbeddedBroker, cap: ClientCapture, workdir: Path) -> None:
    from e2e.daemon.harness import daemon_starter

    from bruce.client import BruceClient
    from bruce.proxy.config import Broker

    topic = cap.topics["daemon"]
    values = [b"daemon-%d" % i for i in range(10)]
    with daemon_starter(workdir, (Broker("127.0.0.1", broker.port),)) as start:
        daemon = start()
        client = BruceClient(str(workdir / "bruce.sock"))
        for v in values:
            client.send_any_partition(topic, v)
        deadline = time.monotonic() + 15
        while daemon.call(lambda: daemon.daemon.accounting()).delivered < len(values):
            assert time.monotonic() < deadline, daemon.call(lambda: daemon.daemon.accounting())
            time.sleep(0.1)
        daemon.stop()
    cap.sent["bruce"] = values


@pytest.fixture(scope="session")
def client_capture(tansu: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientCapture]:
    workdir = tmp_path_factory.mktemp("capture")
    roles = ["idempotent", "txn", "kp-modern", "kp-0.10", "kp-0.8", "tshark-range", "aio", "daemon"]
    topics = {role: f"wire-{role.replace('.', '')}-{time.monotonic_ns() % 10**6}" for role in roles}
    for topic in topics.values():
        tansu.create_topic(topic, 1)
    cap = ClientCapture(workdir / "clients.pcap", tansu.port, topics)
    capture = Capture(cap.path, [tansu.port])
    try:
        _confluent(tansu.address, cap)
        _kafka_python(tansu.address, cap)
        _aiokafka(tansu.address, cap)
        _consumer_groups(tansu.address, cap)
        _daemon(tansu, cap, Path(str(workdir)))
    finally:
        capture.stop()
    yield cap


def bruce_wire(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed command (as a user does), with a time limit."""
    script = Path(sys.executable).parent / "bruce-wire"
    return subprocess.run([str(script), *args], input=stdin, capture_output=True, timeout=120, check=False)


def plain_records(batch: Any) -> list[tuple[int, bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]]:
    """A :class:`bruce.tool.records.LogBatch`'s records as (offset, key, value, timestamp, headers), bytes again."""

    def raw(v: str | bytes | None) -> bytes | None:
        return v.encode() if isinstance(v, str) else v

    rows = batch.rows
    return [
        (
            rows.offsets[i],
            raw(rows.keys[i]),
            raw(rows.values[i]),
            rows.timestamps[i],
            [
                (rows.header_keys[h], raw(rows.header_values[h]))
                for h in range(rows.header_ends[i], rows.header_ends[i + 1])
            ],
        )
        for i in range(batch.first, batch.end)
    ]


def json_lines(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]
