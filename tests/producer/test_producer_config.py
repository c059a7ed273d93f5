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
