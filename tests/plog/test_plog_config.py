"""[[plog.listener]] tables: defaults, validation with messages naming the key, and the listener factory."""

from __future__ import annotations

import tomllib

import pytest

from bruce.proxy.plog.config import ListenerConfig, PlogConfigError, listeners_from_section
from bruce.proxy.plog.listeners import TcpListener, UdpListener, make_listener

EXAMPLE = """
[[plog.listener]]
protocol = "udp"
port = 23456
topic = "events"
enable_kill = true
defrag_capacity = 2097152
defrag_expiry = 2.5

[[plog.listener]]
protocol = "tcp"
port = 23457
topic = "lines"
max_line = 4096

[[plog.listener]]
protocol = "udp"
port = 23458
topic = "null"
name = "tagged-only"
"""


def test_a_toml_section_becomes_listener_configs() -> None:
    udp, tcp, tagged = listeners_from_section(tomllib.loads(EXAMPLE)["plog"])
    assert udp == ListenerConfig(
        protocol="udp",
        port=23456,
        topic="events",
        enable_kill=True,
        defrag_capacity=2 * 1024 * 1024,
        defrag_expiry=2.5,
    )
    assert (udp.address, udp.name, udp.receive_buffer, tcp.max_connections) == (
        "127.0.0.1",
        "plog-udp-23456",
        1 << 20,
        256,
    )
    assert (tcp.protocol, tcp.max_line, tcp.name) == ("tcp", 4096, "plog-tcp-23457")
    assert (tagged.topic, tagged.name, tagged.enable_kill) == (None, "tagged-only", False)


def test_plog_defaults() -> None:
    cfg = ListenerConfig(protocol="udp")
    assert (cfg.address, cfg.port, cfg.max_line, cfg.defrag_capacity, cfg.defrag_expiry) == (
        "127.0.0.1",
        23456,
        1 << 20,
        1 << 20,
        10.0,
    )
    assert listeners_from_section({}) == ()


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ([{"protocol": "udp", "prot": 1}], r"plog\.listener\[0\]\.prot: unknown key"),
        ([{"port": 1}], r"plog\.listener\[0\]\.protocol: missing"),
        ([{"protocol": "sctp"}], r"plog\.listener\[0\]\.protocol: must be one of udp, tcp"),
        ([{"protocol": "udp", "port": 70000}], r"plog\.listener\[0\]\.port: must be an integer in 0\.\.65535"),
        ([{"protocol": "udp", "port": "80"}], r"\.port: must be an integer"),
        ([{"protocol": "udp", "port": True}], r"\.port: must be an integer"),
        ([{"protocol": "tcp", "port": 1}], r"plog\.listener\[0\]\.topic: a tcp listener needs a topic"),
        ([{"protocol": "udp", "topic": ""}], r"\.topic: must be a non-empty string"),
        ([{"protocol": "tcp", "topic": "t", "max_line": 0}], r"\.max_line: must be a positive integer"),
        ([{"protocol": "udp", "defrag_capacity": 100}], r"\.defrag_capacity: must be at least 4096"),
        ([{"protocol": "udp", "defrag_expiry": 0}], r"\.defrag_expiry: must be a number of seconds"),
        ([{"protocol": "udp", "enable_kill": "yes"}], r"\.enable_kill: must be true or false"),
        ([{"protocol": "udp", "address": ""}], r"\.address: must be a host address"),
        (
            [{"protocol": "udp", "port": 5000}, {"protocol": "udp", "port": 5000}],
            r"plog\.listener\[1\]: another listener already uses udp 127\.0\.0\.1:5000",
        ),
        (
            [{"protocol": "udp", "port": 5000, "name": "a"}, {"protocol": "udp", "port": 5001, "name": "a"}],
            r"plog\.listener\[1\]\.name: 'a' is already used",
        ),
        ("not a list", r"plog\.listener: must be an array of tables"),
        ([3], r"plog\.listener\[0\]: must be a table"),
    ],
)
def test_bad_tables_name_the_key(tables, message: str) -> None:
    with pytest.raises(PlogConfigError, match=message):
        listeners_from_section({"listener": tables})


def test_unknown_plog_keys_are_refused() -> None:
    with pytest.raises(PlogConfigError, match=r"plog\.listeners: unknown key"):
        listeners_from_section({"listeners": []})


def test_same_port_different_protocols_is_fine() -> None:
    udp, tcp = listeners_from_section(
        {"listener": [{"protocol": "udp", "port": 5000}, {"protocol": "tcp", "port": 5000, "topic": "t"}]}
    )
    assert (udp.port, tcp.port) == (5000, 5000)


def test_make_listener_builds_the_right_kind(sink) -> None:
    assert isinstance(make_listener(ListenerConfig(protocol="udp"), sink), UdpListener)
    assert isinstance(make_listener(ListenerConfig(protocol="tcp", topic="t"), sink), TcpListener)
