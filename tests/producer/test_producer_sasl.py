"""The SASL client against scripted broker answers: RFC 7677's SCRAM-SHA-256 test vector through our authenticate(),
RFC 5802's through the scramp client it uses, PLAIN's token, and every refusal as AuthenticationFailed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scramp import ScramClient

from bruce.producer.config.security import SecurityConfig
from bruce.producer.transport.sasl import AuthenticationFailed, authenticate
from bruce.wire.protocol.sasl_authenticate import SaslAuthenticateResponse
from bruce.wire.protocol.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from bruce.wire.versions import choose_versions

# RFC 7677 section 3 (SCRAM-SHA-256), user "user", password "pencil"
RFC7677_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC7677_CLIENT_FINAL = (
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


class ScriptedBroker:
    """Stands in for a BrokerConnection: records each request and answers from a script."""

    node = "broker-1:9093"

    def __init__(self, *answers: Any) -> None:
        self.versions = choose_versions({0: (0, 11), 3: (0, 12), 17: (0, 1), 36: (0, 2)})
        self.answers = list(answers)
        self.sent: list[tuple[Any, int]] = []

    async def request(self, body: Any, version: int) -> Any:
        self.sent.append((body, version))
        return self.answers.pop(0)


def sasl(mechanism: str, user: str = "user", password: str = "pencil") -> SecurityConfig:
    return SecurityConfig(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user, sasl_password=password
    )


def ok(token: str, lifetime_ms: int = 0) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(0, None, token.encode(), session_lifetime_ms=lifetime_ms)


def test_scram_sha_256_follows_rfc_7677s_test_vector() -> None:
    broker = ScriptedBroker(
        SaslHandshakeResponse(0, ("SCRAM-SHA-256",)), ok(RFC7677_SERVER_FIRST), ok(RFC7677_SERVER_FINAL, 60_000)
    )

    async def main() -> tuple[float | None, float]:
        due = await authenticate(broker, sasl("SCRAM-SHA-256"), nonce=RFC7677_NONCE)
        return due, asyncio.get_running_loop().time()

    due, now = asyncio.run(main())
    assert broker.sent[0] == (SaslHandshakeRequest("SCRAM-SHA-256"), 1)
    tokens = [body.auth_bytes.decode() for body, _ in broker.sent[1:]]
    assert tokens == [f"n,,n=user,r={RFC7677_NONCE}", RFC7677_CLIENT_FINAL]
    assert all(version == 2 for _, version in broker.sent[1:])  # the broker's highest SaslAuthenticate
    assert due is not None and 0 < due - now <= 60 * 0.85  # renewed at 85 % of the granted lifetime


def test_the_scram_library_follows_rfc_5802s_test_vector() -> None:
    client = ScramClient(["SCRAM-SHA-1"], "user", "pencil", c_nonce="fyko+d2lbbFgONRv9qkxdawL")
    assert client.get_client_first() == "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    client.set_server_first("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    assert client.get_client_final() == (
        "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )
    client.set_server_final("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")  # raises if the server signature were wrong


def test_a_server_signature_that_does_not_verify_is_refused() -> None:
    forged = "v=" + "A" * 43 + "="
    broker = ScriptedBroker(SaslHandshakeResponse(0, ()), ok(RFC7677_SERVER_FIRST), ok(forged))
    with pytest.raises(AuthenticationFailed, match=r"broker broker-1:9093, SCRAM-SHA-256: SCRAM exchange failed"):
        asyncio.run(authenticate(broker, sasl("SCRAM-SHA-256"), nonce=RFC7677_NONCE))


def test_plain_sends_one_token_and_passes_on_the_brokers_refusal() -> None:
    refusal = SaslAuthenticateResponse(58, "Authentication failed: Invalid username or password", b"")
    broker = ScriptedBroker(SaslHandshakeResponse(0, ("PLAIN",)), refusal)
    with pytest.raises(AuthenticationFailed) as caught:
        asyncio.run(authenticate(broker, sasl("PLAIN", "u", "hunter2")))
    assert broker.sent[1][0].auth_bytes == b"\0u\0hunter2"
    assert "hunter2" not in repr(broker.sent[1][0])
    text = str(caught.value)
    assert text.startswith("authentication failed: broker broker-1:9093, PLAIN: Authentication failed: Invalid")
    assert "hunter2" not in text and caught.value.reason == "AuthenticationFailed"


def test_a_mechanism_the_broker_does_not_enable_names_the_ones_it_does() -> None:
    broker = ScriptedBroker(SaslHandshakeResponse(33, ("SCRAM-SHA-512", "GSSAPI")))
    with pytest.raises(AuthenticationFailed, match=r"PLAIN: mechanism not enabled .*offers SCRAM-SHA-512, GSSAPI"):
        asyncio.run(authenticate(broker, sasl("PLAIN")))


def test_a_broker_without_sasl_apis_is_refused_clearly() -> None:
    broker = ScriptedBroker()
    broker.versions = choose_versions({0: (0, 11), 3: (0, 12)})
    with pytest.raises(AuthenticationFailed, match="does not offer SASL"):
        asyncio.run(authenticate(broker, sasl("SCRAM-SHA-512")))
