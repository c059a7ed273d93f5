"""Producer settings: defaults, validation naming the setting, librdkafka's dotted names."""

from __future__ import annotations

import pytest

from bruce.producer import ProducerConfig
from bruce.producer.errors import ConfigError


def test_defaults_are_bruces_and_librdkafkas() -> None:
    config = ProducerConfig()
    assert config.wire_client_id == "bruce"
    assert (config.acks, config.replication_timeout_ms, config.max_failed_delivery_attempts) == (-1, 10_000, 5)
    assert (config.min_pause_delay_ms, config.pause_rate_limit_initial_ms, config.pause_rate_limit_max_double) == (
        5000,
        5000,
        4,
    )
    assert config.socket_timeout_ms == 60_000 and config.metadata_refresh_interval_ms == 15 * 60_000
    assert config.max_in_flight_per_broker == 1 and config.linger_ms == 5


def test_bootstrap_servers_from_a_comma_separated_string() -> None:
    config = ProducerConfig(bootstrap_servers="a:1, b:2")  # type: ignore[arg-type]
    assert config.brokers == (("a", 1), ("b", 2))


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"bootstrap_servers": ()}, "bootstrap_servers"),
        ({"bootstrap_servers": ("nohost",)}, "bootstrap_servers"),
        ({"bootstrap_servers": ("h:0",)}, "bootstrap_servers"),
        ({"protocol": "v1"}, "protocol"),
        ({"compression_codec": "brotli"}, "compression_codec"),
        ({"acks": -2}, "acks"),
        ({"max_in_flight_per_broker": 0}, "max_in_flight_per_broker"),
        ({"linger_ms": -1}, "linger_ms"),
        ({"socket_timeout_ms": 0}, "socket_timeout_ms"),
        ({"replication_timeout_ms": 2**31}, "replication_timeout_ms"),
        ({"reconnect_backoff_max_ms": 1}, "reconnect_backoff_max_ms"),
        ({"queue_buffering_max_messages": True}, "queue_buffering_max_messages"),
        ({"produce_request_data_limit": -1}, "produce_request_data_limit"),
    ],
)
def test_bad_values_name_the_setting(settings: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        ProducerConfig(**settings)


def test_dotted_names_and_unknown_settings() -> None:
    config = ProducerConfig.from_mapping({"linger.ms": 7, "bootstrap.servers": ["x:9"], "client.id": "me"})
    assert (config.linger_ms, config.bootstrap_servers, config.wire_client_id) == (7, ("x:9",), "me")
    with pytest.raises(ConfigError, match=r"no\.such"):
        ProducerConfig.from_mapping({"no.such": 1})


def test_produce_request_data_limit_zero_is_allowed() -> None:
    assert ProducerConfig(produce_request_data_limit=0).produce_request_data_limit == 0


@pytest.mark.parametrize(("given", "acks"), [("all", -1), ("ALL", -1), ("-1", -1), ("1", 1), ("0", 0), (" 1 ", 1)])
def test_acks_as_librdkafka_reads_it(given: str, acks: int) -> None:
    assert ProducerConfig.from_mapping({"acks": given}).acks == acks
    assert ProducerConfig.from_mapping({"request.required.acks": given}).acks == acks


@pytest.mark.parametrize("bad", [None, 1.5, True, "1.5", "most", b"1"])
def test_acks_of_another_kind_is_refused_naming_acks(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^acks: "):
        ProducerConfig.from_mapping({"acks": bad})


def test_texts_for_numbers_and_switches_as_librdkafka_takes_them() -> None:
    config = ProducerConfig.from_mapping(
        {"linger.ms": "7", "enable.idempotence": "FALSE", "topic.autocreate": "true", "compression.type": "ZSTD"}
    )
    assert (config.linger_ms, config.enable_idempotence, config.topic_autocreate) == (7, False, True)
    assert config.compression_codec == "zstd"


def test_java_and_librdkafka_aliases() -> None:
    config = ProducerConfig.from_mapping(
        {
            "queue.buffering.max.ms": 9,
            "delivery.timeout.ms": 1234,
            "max.in.flight": 3,
            "socket.connection.setup.timeout.ms": 4321,
            "metadata.broker.list": "a:1,b:2",
        }
    )
    assert (config.linger_ms, config.message_timeout_ms, config.max_in_flight_requests_per_connection) == (9, 1234, 3)
    assert config.connect_timeout_ms == 4321 and config.bootstrap_servers == ("a:1", "b:2")
    with pytest.raises(ConfigError, match="given twice"):
        ProducerConfig.from_mapping({"linger.ms": 1, "queue.buffering.max.ms": 2})
    with pytest.raises(ConfigError, match=r"did you mean 'linger\.ms'"):
        ProducerConfig.from_mapping({"linger.msec": 1})


@pytest.mark.parametrize("bad", [123, b"a:1", [b"a:1"], None, ["a:1", 5]])
def test_bootstrap_servers_of_another_type_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^bootstrap_servers: "):
        ProducerConfig.from_mapping({"bootstrap.servers": bad})


def test_a_listener_prefix_is_dropped_when_it_agrees_with_security_protocol() -> None:
    assert ProducerConfig.from_mapping({"bootstrap.servers": "PLAINTEXT://h:9092"}).brokers == (("h", 9092),)
    sasl = {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "p"}
    config = ProducerConfig.from_mapping({"bootstrap.servers": ["SASL_SSL://h:9094", "g:9094"], **sasl})
    assert config.brokers == (("h", 9094), ("g", 9094))
    with pytest.raises(ConfigError, match=r"names the SSL listener but security\.protocol is PLAINTEXT"):
        ProducerConfig.from_mapping({"bootstrap.servers": "SSL://h:9093"})
    with pytest.raises(ConfigError, match="bootstrap_servers: 'http://h/x:1'"):
        ProducerConfig.from_mapping({"bootstrap.servers": "http://h/x:1"})


def test_sasl_with_the_08_protocol_is_refused() -> None:
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u", "sasl.password": "p"}
    with pytest.raises(ConfigError, match=r"^protocol: the 0.8 protocol \(v0\) has no SASL"):
        ProducerConfig.from_mapping({"protocol": "v0", **sasl})


@pytest.mark.parametrize(
    ("mechanism", "password"), [("SCRAM-SHA-256", "pw\x01x"), ("SCRAM-SHA-512", "pw\x7f"), ("PLAIN", "pw\0")]
)
def test_a_password_the_mechanism_cannot_send_is_refused_without_showing_it(mechanism: str, password: str) -> None:
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": "u"}
    with pytest.raises(ConfigError, match=r"^sasl.password: ") as raised:
        ProducerConfig.from_mapping({**sasl, "sasl.password": password})
    assert password not in str(raised.value)
