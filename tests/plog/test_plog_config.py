"""[[plog.listener]] tables: defaults, validation with messages naming the key, the listener factory; the tables in
the daemon's TOML file, the command line's --plog_udp / --plog_tcp, and the daemon's check across both."""

from __future__ import annotations

import tomllib

import pytest

from bruce.proxy.config import ConfigError, Options, load_toml, parse_command_line, to_toml
from bruce.proxy.config.command_line import help_text
from bruce.proxy.config.listeners import ListenerConfig, PlogConfigError, listeners_from_option, listeners_from_section
from bruce.proxy.daemon.daemon import Daemon
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
        ([{"protocol": "udp", "prot": 1}], r"plog\.listener\[1\]\.prot: unknown key"),
        ([{"port": 1}], r"plog\.listener\[1\]\.protocol: missing"),
        ([{"protocol": "sctp"}], r"plog\.listener\[1\]\.protocol: must be one of udp, tcp"),
        ([{"protocol": "udp", "port": 70000}], r"plog\.listener\[1\]\.port: must be an integer in 0\.\.65535"),
        ([{"protocol": "udp", "port": "80"}], r"\.port: must be an integer"),
        ([{"protocol": "udp", "port": True}], r"\.port: must be an integer"),
        ([{"protocol": "tcp", "port": 1}], r"plog\.listener\[1\]\.topic: a tcp listener needs a topic"),
        ([{"protocol": "udp", "topic": ""}], r"\.topic: must be a non-empty string"),
        ([{"protocol": "tcp", "topic": "t", "max_line": 0}], r"\.max_line: must be a positive integer"),
        ([{"protocol": "udp", "defrag_capacity": 100}], r"\.defrag_capacity: must be at least 4096"),
        ([{"protocol": "udp", "defrag_expiry": 0}], r"\.defrag_expiry: must be a number of seconds"),
        ([{"protocol": "udp", "enable_kill": "yes"}], r"\.enable_kill: must be true or false"),
        ([{"protocol": "udp", "address": ""}], r"\.address: must be a host address"),
        (
            [{"protocol": "udp", "port": 5000}, {"protocol": "udp", "port": 5000}],
            r"plog\.listener\[2\]: another listener already uses udp 127\.0\.0\.1:5000",
        ),
        (
            [{"protocol": "udp", "port": 5000, "name": "a"}, {"protocol": "udp", "port": 5001, "name": "a"}],
            r"plog\.listener\[2\]\.name: 'a' is already used",
        ),
        ("not a list", r"plog\.listener: must be an array of tables"),
        ([3], r"plog\.listener\[1\]: must be a table"),
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


# ---------------------------------------------------------------- in the daemon's configuration

BASE_TOML = """
[batching]
produce_request_data_limit = "1024k"
message_max_bytes = 1000000
combined_topics = { enable = false }
default_topic = { action = "disable" }

[compression]
default_topic = "none"

[compression.named_configs]
none = { type = "none" }

[[initial_brokers]]
host = "kafka1"
"""


def test_a_toml_config_file_carries_plog_listeners_and_renders_them_back() -> None:
    config = load_toml(BASE_TOML + EXAMPLE)
    assert config.plog_listeners == listeners_from_section(tomllib.loads(EXAMPLE)["plog"])
    text = to_toml(config)
    assert "[[plog.listener]]" in text and 'name = "tagged-only"' in text
    assert "receive_buffer" not in text  # defaults are left out
    assert load_toml(text) == config
    assert load_toml(BASE_TOML).plog_listeners == ()


def test_a_bad_plog_table_in_a_file_names_the_file_and_the_key() -> None:
    bad = BASE_TOML + '[[plog.listener]]\nprotocol = "udp"\n\n[[plog.listener]]\nprotocol = "udp"\nport = -1\n'
    with pytest.raises(ConfigError, match=r"^bruce\.toml: plog\.listener\[2\]\.port: must be an integer"):
        load_toml(bad, source="bruce.toml")
    with pytest.raises(ConfigError, match=r"plog\.listenr: unknown key"):
        load_toml(BASE_TOML + "[plog]\nlistenr = []\n")


@pytest.mark.parametrize(
    ("words", "udp", "tcp"),
    [
        (["--plog_udp", "23456:events"], [("127.0.0.1", 23456, "events")], []),
        (["--plog_udp", "23456"], [("127.0.0.1", 23456, None)], []),
        (
            ["--plog_udp", "0.0.0.0:23456:events,5000:null"],
            [("0.0.0.0", 23456, "events"), ("127.0.0.1", 5000, None)],
            [],
        ),
        (["--plog-tcp=[::1]:23457:lines"], [], [("::1", 23457, "lines")]),
        (["--plog_tcp", "localhost:1:l", "--plog_udp", "2:u"], [("127.0.0.1", 2, "u")], [("localhost", 1, "l")]),
    ],
)
def test_command_line_listeners(words: list[str], udp, tcp) -> None:
    options = parse_command_line(words)
    assert [(c.address, c.port, c.topic) for c in options.plog_udp] == udp
    assert [(c.address, c.port, c.topic) for c in options.plog_tcp] == tcp
    assert {c.protocol for c in options.plog_udp} <= {"udp"} and {c.protocol for c in options.plog_tcp} <= {"tcp"}


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--plog_tcp", "23457"], r'--plog_tcp: "23457": a tcp listener needs a topic'),
        (["--plog_udp", "99999:t"], r'--plog_udp: "99999:t": must be an integer in 0\.\.65535'),
        (["--plog_udp", "a:b:c"], r'--plog_udp: "a:b:c" is not \[HOST:\]PORT\[:TOPIC\]'),
        (["--plog_udp", ""], r'--plog_udp: "" is not'),
    ],
)
def test_bad_command_line_listeners_name_the_option(words: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_command_line(words)


def test_help_lists_the_plog_options() -> None:
    text = help_text()
    assert "--plog_udp [HOST:]PORT[:TOPIC],..." in text and "--plog_tcp [HOST:]PORT:TOPIC,..." in text


def test_the_daemon_refuses_a_port_used_twice_across_file_and_command_line(tmp_path) -> None:
    config = load_toml(BASE_TOML + '[[plog.listener]]\nprotocol = "udp"\nport = 23456\ntopic = "a"\n')
    options = Options(receive_socket_name=str(tmp_path / "s"), plog_udp=listeners_from_option("udp", "23456:b"))
    with pytest.raises(ConfigError, match=r"--plog_udp: another listener already uses udp 127\.0\.0\.1:23456"):
        Daemon(options, config).preflight()  # a startup check: refused before anything starts
    fine = Options(receive_socket_name=str(tmp_path / "s"), plog_tcp=listeners_from_option("tcp", "23456:b"))
    assert [listener.config.protocol for listener in Daemon(fine, config).plog.listeners] == ["udp", "tcp"]
