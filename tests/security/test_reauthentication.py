"""KIP-368: the SASL front grants 1.5 s sessions and hangs up on any request after one expired; the producer renews
its session on the same connection before that, so a stream of messages over several lifetimes all arrive."""

from __future__ import annotations

import asyncio

import pytest

from bruce.producer import Producer, ProducerConfig, Timeouts, TransportError, open_connection
from bruce.wire.protocol.metadata import metadata_request
from bruce.wire.versions import METADATA

from .peers import confluent_read

pytestmark = pytest.mark.e2e
LIFETIME_MS = 1500


def test_the_producer_reauthenticates_before_the_session_expires(peers) -> None:
    secured = peers.get("SASL_PLAINTEXT", lifetime_ms=LIFETIME_MS)
    topic = "bruce-reauth"
    secured.broker.create_topic(topic, 1)
    cfg = ProducerConfig.from_mapping({"bootstrap.servers": secured.bootstrap, **secured.client("SCRAM-SHA-256")})
    values = [f"r{i}".encode() for i in range(16)]
    seen_before = len(secured.front.lines())

    async def main() -> int:
        async with Producer(cfg) as producer:
            await producer.ready(10)
            for v in values:  # 16 x 0.25 s: over two and a half session lifetimes
                await asyncio.wait_for(producer.send(topic, v), 10)
                await asyncio.sleep(0.25)
            return sum(n for name, _, n in producer.counters.items() if name == "ConnectorReauthenticated")

    renewed = asyncio.run(main())
    assert renewed >= 2
    assert not [line for line in secured.front.lines()[seen_before:] if "after expiry" in line]
    assert confluent_read(secured, topic, len(values)) == values


def test_the_front_hangs_up_on_a_session_that_was_not_renewed(peers) -> None:
    secured = peers.get("SASL_PLAINTEXT", lifetime_ms=LIFETIME_MS)
    cfg = ProducerConfig.from_mapping({"bootstrap.servers": secured.bootstrap, **secured.client("PLAIN")})
    host, port = cfg.brokers[0]

    async def main() -> None:
        conn = await open_connection(host, port, "t", Timeouts(5, 5, 5), "modern", security=cfg.security)
        version = conn.versions.version(METADATA)
        await conn.request(metadata_request(None, version=version), version)  # within the session: answered
        await asyncio.sleep(LIFETIME_MS / 1000 + 0.2)
        with pytest.raises(TransportError):
            await conn.request(metadata_request(None, version=version), version)
        conn.close()

    asyncio.run(main())
    assert any("after expiry" in line for line in secured.front.lines())
