"""The producer library over TLS, mTLS and SASL (every mechanism, plaintext and TLS) against tansu behind the proven
peers, read back with confluent-kafka; and every refusal as a clear AUTHENTICATION_FAILED naming broker and mechanism.
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

import pytest

from bruce.producer import DeliveryError, DiscardReason, Producer, ProducerConfig
from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker

from .peers import USERS, Secured, bad_tls_front, confluent_read, start_stunnel
from .test_peers_confluent import WAYS

pytestmark = pytest.mark.e2e


def config(secured: Secured, bootstrap: str | None = None, **props) -> ProducerConfig:
    return ProducerConfig.from_mapping(
        {
            "bootstrap.servers": bootstrap or secured.bootstrap,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
            "connect.timeout.ms": 3000,
            **props,
        }
    )


async def produce(cfg: ProducerConfig, topic: str, values: list[bytes]) -> None:
    async with Producer(cfg) as producer:
        await producer.ready(15)
        handles = [producer.send(topic, v) for v in values]
        await asyncio.wait_for(asyncio.gather(*handles), 15)


@pytest.mark.parametrize(("way", "mechanism"), WAYS, ids=[f"{w}-{m}" if m else w for w, m in WAYS])
def test_the_producer_delivers_through_the_secured_peer(peers, way: str, mechanism: str | None) -> None:
    secured = peers.get(way)
    topic = f"bruce-{way}-{mechanism or 'tls'}".lower()
    secured.broker.create_topic(topic, 2)
    values = [f"{way}-{mechanism}-{i}".encode() for i in range(50)]
    asyncio.run(produce(config(secured, **secured.client(mechanism, user="bob")), topic, values))
    assert sorted(confluent_read(secured, topic, 50, partitions=2)) == sorted(values)
    if secured.front is not None:
        assert f"auth {mechanism} bob ok" in secured.front.auth_lines()


async def refused(cfg: ProducerConfig) -> tuple[DeliveryError, DeliveryError]:
    """ready() and a waiting message's handle both fail: (ready's error, the handle's error)."""
    async with Producer(cfg) as producer:
        handle = producer.send("any-topic", b"v")
        with pytest.raises(DeliveryError) as ready_error:
            await producer.ready(15)
        with pytest.raises(DeliveryError) as handle_error:
            await asyncio.wait_for(handle, 5)
        assert producer.authentication_failure is not None
    return ready_error.value, handle_error.value


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("who", ["wrong password", "unknown user"])
def test_a_refused_login_is_a_clear_error_without_the_password(peers, mechanism: str, who: str) -> None:
    secured = peers.get("SASL_PLAINTEXT")
    user, password = ("alice", "not-" + USERS["alice"]) if who == "wrong password" else ("mallory", "mallory-pw")
    ready, handle = asyncio.run(refused(config(secured, **secured.client(mechanism, user=user, password=password))))
    for error in (ready, handle):
        assert error.reason == DiscardReason.AUTHENTICATION_FAILED
        text = str(error)
        assert f"authentication failed: broker {secured.bootstrap}, {mechanism}" in text
        assert password not in text and password not in repr(error)
    assert "Authentication failed" in str(ready)  # the broker's own message is passed on


@pytest.mark.parametrize(
    ("which", "why"),
    [
        ("untrusted", "unable to get local issuer certificate"),
        ("wronghost", "IP address mismatch, certificate is not valid for '127.0.0.1'"),
        ("wronghost by name", "Hostname mismatch, certificate is not valid for 'localhost'"),
        ("expired", "certificate has expired"),
    ],
)
def test_a_refused_broker_certificate_is_a_clear_error(peers, tmp_path, which: str, why: str) -> None:
    secured = peers.get("SSL")
    with ExitStack() as stack:
        bootstrap = bad_tls_front(stack, tmp_path, peers.certs, secured.broker.port, which.split()[0])
        if which.endswith("by name"):
            bootstrap = bootstrap.replace("127.0.0.1", "localhost")
        ready, handle = asyncio.run(refused(config(secured, bootstrap, **secured.client())))
    assert ready.reason == handle.reason == DiscardReason.AUTHENTICATION_FAILED
    assert f"authentication failed: broker {bootstrap}, TLS: the broker's certificate is refused" in str(ready)
    assert why in str(ready)


def test_hostname_checks_can_be_turned_off_and_verification_disabled_only_with_a_warning(peers, tmp_path, caplog):
    secured = peers.get("SSL")
    topic = "bruce-no-hostname-check"
    secured.broker.create_topic(topic, 1)
    with ExitStack() as stack:
        wrong = bad_tls_front(stack, tmp_path, peers.certs, secured.broker.port, "wronghost")
        relaxed = {**secured.client(), "ssl.endpoint.identification.algorithm": "none"}
        asyncio.run(produce(config(secured, wrong, **relaxed), topic, [b"a"]))
        untrusted = bad_tls_front(stack, tmp_path, peers.certs, secured.broker.port, "untrusted")
        unverified = {"security.protocol": "SSL", "enable.ssl.certificate.verification": "false"}
        asyncio.run(produce(config(secured, untrusted, **unverified), topic, [b"b"]))
    assert confluent_read(secured, topic, 2) == [b"a", b"b"]
    assert "broker certificates are NOT verified" in caplog.text


def test_mtls_without_a_client_certificate_is_refused(peers) -> None:
    secured = peers.get("mTLS")
    ready, handle = asyncio.run(
        refused(config(secured, **{"security.protocol": "SSL", "ssl.ca.location": peers.certs.ca}))
    )
    assert ready.reason == handle.reason == DiscardReason.AUTHENTICATION_FAILED
    assert f"authentication failed: broker {secured.bootstrap}, TLS: the broker refused us: " in str(ready)
    assert "CERTIFICATE_REQUIRED" in str(ready)


def test_refused_logins_back_off_doubling_and_are_counted(peers) -> None:
    """librdkafka's reconnect backoff (100 ms doubling, jittered, to 10 s by default) spaces the retries while
    messages wait for a broker that refuses the password: not a flat two attempts a second."""
    secured = peers.get("SASL_PLAINTEXT")
    cfg = ProducerConfig.from_mapping(
        {"bootstrap.servers": secured.bootstrap, **secured.client("SCRAM-SHA-256", password="wrong")}
    )
    assert (cfg.reconnect_backoff_ms, cfg.reconnect_backoff_max_ms) == (100, 10_000)

    def attempts() -> int:
        return sum("SCRAM-SHA-256 alice failed" in line for line in secured.front.auth_lines())

    async def run() -> tuple[int, int, int]:
        # as the daemon: the message waits and the broker is probed
        async with Producer(cfg, keep_on_auth_failure=True) as producer:
            producer.send("any-topic", b"v")
            start = attempts()
            await asyncio.sleep(3)
            first = attempts() - start
            await asyncio.sleep(3)
            second = attempts() - start - first
            counted = producer.counters.get("ConnectorAuthenticationFailed")
            await producer.close(0)  # the message cannot go: no waiting shutdown_max_delay_ms (30 s) for it
            return first, second, counted

    first, second, counted = asyncio.run(run())
    # attempts at about 0, 0, 0.1, 0.3, 0.7, 1.5, 3.1 s (±20 %): a flat 0.5 s probe would make 6 in each window
    assert 3 <= first <= 7, first
    assert second <= 2, second
    assert counted >= first + second


def test_tls_to_a_plaintext_port_says_why(peers) -> None:
    """tansu's plaintext port closes on a TLS hello: the error says so and suggests the likely cause."""
    secured = peers.get("SSL")

    async def run() -> str:
        async with Producer(config(secured, secured.plain, **secured.client())) as producer:
            with pytest.raises(TimeoutError) as raised:
                await producer.ready(3)
            return str(raised.value)

    text = asyncio.run(run())
    assert f"no cluster metadata within 3 s: {secured.plain}: " in text
    assert f"is {secured.plain} a plaintext port?" in text


def test_an_advertised_broker_with_a_bad_certificate_fails_messages_as_authentication(peers, tmp_path) -> None:
    """The bootstrap broker's certificate is good, the broker it advertises presents an untrusted one: the messages
    for it fail as AUTHENTICATION_FAILED with the refusal, not as a bare MESSAGE_TIMEOUT."""
    with ExitStack() as stack:
        advertised = free_port()
        broker = stack.enter_context(EmbeddedBroker(advertised_port=advertised, log_path=tmp_path / "tansu.log"))
        broker.create_topic("bad-leader", 1)
        start_stunnel(stack, tmp_path, advertised, broker.port, peers.certs.untrusted, peers.certs.untrusted_key)
        good = free_port()
        start_stunnel(stack, tmp_path, good, broker.port, peers.certs.server, peers.certs.server_key)
        cfg = ProducerConfig.from_mapping(
            {
                "bootstrap.servers": f"127.0.0.1:{good}",
                "security.protocol": "SSL",
                "ssl.ca.location": peers.certs.ca,
                "message.timeout.ms": 2000,
                "reconnect.backoff.max.ms": 200,
            }
        )

        async def run() -> DeliveryError:
            async with Producer(cfg) as producer:
                await producer.ready(10)
                handle = producer.send("bad-leader", b"v")
                with pytest.raises(DeliveryError) as raised:
                    await asyncio.wait_for(handle, 10)
                return raised.value

        error = asyncio.run(run())
    assert error.reason == DiscardReason.AUTHENTICATION_FAILED, error
    assert f"authentication failed: broker 127.0.0.1:{advertised}, TLS: the broker's certificate is refused" in str(
        error
    )
