"""The secured peers are right before anything of ours meets them: confluent-kafka (librdkafka, an independent client)
produces through each of them and reads back from tansu directly, and is refused with a wrong password."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from .peers import confluent_produce, confluent_read

WAYS = [("SSL", None), ("mTLS", None)] + [
    (way, mechanism)
    for way in ("SASL_PLAINTEXT", "SASL_SSL")
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
]


@pytest.mark.e2e
@pytest.mark.parametrize(("way", "mechanism"), WAYS, ids=[f"{w}-{m}" if m else w for w, m in WAYS])
def test_confluent_kafka_produces_through_the_secured_peer(peers, way: str, mechanism: str | None) -> None:
    secured = peers.get(way)
    topic = f"ck-{way}-{mechanism or 'tls'}".lower()
    secured.broker.create_topic(topic, 1)
    values = [f"{way}-{i}".encode() for i in range(5)]
    results, errors = confluent_produce(secured, topic, values, secured.client(mechanism))
    assert results == [None] * 5, errors
    assert confluent_read(secured, topic, 5) == values
    if secured.front is not None:
        assert f"auth {mechanism} alice ok" in secured.front.auth_lines()


@pytest.mark.e2e
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_is_refused_a_wrong_password(peers, mechanism: str) -> None:
    secured = peers.get("SASL_PLAINTEXT")
    results, errors = confluent_produce(
        secured, "ck-refused", [b"x"], {**secured.client(mechanism, password="wrong"), "message.timeout.ms": 2000}
    )
    assert results and results[0] is not None and results[0].code() == KafkaError._MSG_TIMED_OUT
    assert any("Authentication failed" in e for e in errors), errors
