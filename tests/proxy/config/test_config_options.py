"""The ``bruce`` command line: every option parsed, Bruce's defaults, every check, and the front door ``configure``."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import pytest
from config_files import PER_TOPIC_CONF
from xml_samples import VALID_XML

from bruce.proxy.config import (
    EXIT_CONFIG,
    EXIT_USAGE,
    Broker,
    ConfigError,
    ConvertConfig,
    ImmediateExit,
    Options,
    configure,
    default_config,
    load_config,
    load_config_file,
    load_toml,
    load_xml,
    option_specs,
    parse_command_line,
    to_toml,
)
from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.config.startup import MAX_FILE_BYTES

# Bruce's defaults (docs/bruce-compatibility.md#options), and ours for the options Bruce does not have.
DEFAULTS = {
    "config_path": None,
    "initial_brokers": (),
    "embedded_broker": False,
    "receive_socket_mode": None,
    "msg_buffer_max": 262144,
    "max_input_msg_size": 65536,
    "allow_large_unix_datagrams": False,
    "plog_udp": (),
    "plog_tcp": (),
    "kafka_protocol": "auto",
    "protocol_version": 0,
    "client_id": "",
    "kafka_property": (),
    "required_acks": -1,
    "enable_idempotence": "auto",
    "replication_timeout": 10000,
    "max_failed_delivery_attempts": 5,
    "kafka_socket_timeout": 60,
    "metadata_refresh_interval": 15,
    "skip_compare_metadata_on_refresh": False,
    "pause_rate_limit_initial": 5000,
    "pause_rate_limit_max_double": 4,
    "min_pause_delay": 5000,
    "dispatcher_restart_max_delay": 5000,
    "shutdown_max_delay": 30000,
    "topic_autocreate": False,
    "message_timeout_ms": 0,
    "topic_create_timeout": 30000,
    "status_host": "127.0.0.1",
    "status_port": 9090,
    "status_allowed_hosts": (),
    "status_loopback_only": False,
    "no_metrics": False,
    "discard_report_interval": 600,
    "discard_report_bad_msg_prefix_size": 256,
    "no_log_discard": False,
    "discard_log_path": None,
    "discard_log_max_file_size": 1024,
    "discard_log_max_archive_size": 8192,
    "discard_log_bad_msg_prefix_size": 256,
    "msg_debug_time_limit": 3600,
    "msg_debug_byte_limit": 2 * 1024**3,
    "log_level": "LOG_NOTICE",
    "log_echo": False,
    "daemon": False,
    "use_old_input_format": False,
    "use_old_output_format": False,
    "omit_timestamp": False,
    "spool_dir": None,
    "spool_fsync_ms": 100,
    "spool_max_bytes": 1024**3,
    "spool_full_policy": "memory",
    "spool_segment_bytes": 16 * 1024**2,
}

# One accepted value per option: (command-line words, expected value).
SAMPLES = {
    "config_path": (["--config_path", "/etc/bruce/bruce_conf.xml"], "/etc/bruce/bruce_conf.xml"),
    "initial_brokers": (
        ["--initial_brokers", "k1,k2:9093,[::1]:19092"],
        (Broker("k1"), Broker("k2", 9093), Broker("::1", 19092)),
    ),
    "embedded_broker": (["--embedded_broker"], True),
    "receive_socket_name": (["--receive_socket_name", "/var/run/bruce/bruce.socket"], "/var/run/bruce/bruce.socket"),
    "receive_socket_mode": (["--receive_socket_mode", "0660"], 0o660),
    "msg_buffer_max": (["--msg_buffer_max", "65536"], 65536),
    "max_input_msg_size": (["--max_input_msg_size", "100000"], 100000),
    "allow_large_unix_datagrams": (["--allow_large_unix_datagrams"], True),
    "plog_udp": (["--plog_udp", "23456:events"], (ListenerConfig("udp", 23456, "events"),)),
    "plog_tcp": (["--plog_tcp", "23457:lines"], (ListenerConfig("tcp", 23457, "lines"),)),
    "kafka_protocol": (["--kafka_protocol", "v0"], "v0"),
    "protocol_version": (["--protocol_version", "0"], 0),
    "client_id": (["--client_id", "host-17"], "host-17"),
    "kafka_property": (
        ["--kafka_property", "security.protocol=SSL", "--kafka_property=ssl.ca.location=/etc/ca.pem"],
        (("security.protocol", "SSL"), ("ssl.ca.location", "/etc/ca.pem")),
    ),
    "required_acks": (["--required_acks", "0"], 0),
    "enable_idempotence": (["--enable_idempotence", "false"], "false"),
    "replication_timeout": (["--replication_timeout", "2147483647"], 2**31 - 1),
    "max_failed_delivery_attempts": (["--max_failed_delivery_attempts", "0"], 0),
    "kafka_socket_timeout": (["--kafka_socket_timeout", "5"], 5),
    "metadata_refresh_interval": (["--metadata_refresh_interval", "1"], 1),
    "skip_compare_metadata_on_refresh": (["--skip_compare_metadata_on_refresh"], True),
    "pause_rate_limit_initial": (["--pause_rate_limit_initial", "100"], 100),
    "pause_rate_limit_max_double": (["--pause_rate_limit_max_double", "30"], 30),
    "min_pause_delay": (["--min_pause_delay", "0"], 0),
    "dispatcher_restart_max_delay": (["--dispatcher_restart_max_delay", "250"], 250),
    "shutdown_max_delay": (["--shutdown_max_delay", "1000"], 1000),
    "topic_autocreate": (["--topic_autocreate"], True),
    "message_timeout_ms": (["--message_timeout_ms", "60000"], 60000),
    "topic_create_timeout": (["--topic_create_timeout", "5000"], 5000),
    "status_host": (["--status_host", "0.0.0.0"], "0.0.0.0"),
    "status_port": (["--status_port", "0"], 0),
    "status_allowed_hosts": (
        ["--status_allowed_hosts", "bruce.internal, metrics-alias"],
        ("bruce.internal", "metrics-alias"),
    ),
    "status_loopback_only": (["--status_loopback_only"], True),
    "no_metrics": (["--no_metrics"], True),
    "discard_report_interval": (["--discard_report_interval", "1"], 1),
    "discard_report_bad_msg_prefix_size": (["--discard_report_bad_msg_prefix_size", "0"], 0),
    "no_log_discard": (["--no_log_discard"], True),
    "discard_log_path": (["--discard_log_path", "/var/log/bruce/discards"], "/var/log/bruce/discards"),
    "discard_log_max_file_size": (["--discard_log_max_file_size", "128"], 128),
    "discard_log_max_archive_size": (["--discard_log_max_archive_size", "0"], 0),
    "discard_log_bad_msg_prefix_size": (["--discard_log_bad_msg_prefix_size", "64"], 64),
    "debug_dir": (["--debug_dir", "/tmp/bruce-debug"], "/tmp/bruce-debug"),
    "msg_debug_time_limit": (["--msg_debug_time_limit", "60"], 60),
    "msg_debug_byte_limit": (["--msg_debug_byte_limit", "1048576"], 1048576),
    "log_level": (["--log_level", "LOG_DEBUG"], "LOG_DEBUG"),
    "log_echo": (["--log_echo"], True),
    "daemon": (["--daemon"], True),
    "use_old_input_format": (["--use_old_input_format"], True),
    "use_old_output_format": (["--use_old_output_format"], True),
    "omit_timestamp": (["--omit_timestamp"], True),
    "spool_dir": (["--spool_dir", "/var/spool/bruce"], "/var/spool/bruce"),
    "spool_fsync_ms": (["--spool_fsync_ms", "0"], 0),
    "spool_max_bytes": (["--spool_max_bytes", "1048576"], 1048576),
    "spool_full_policy": (["--spool_full_policy", "discard"], "discard"),
    "spool_segment_bytes": (["--spool_segment_bytes", "65536"], 65536),
}


def test_every_option_has_a_sample_and_a_default() -> None:
    assert set(SAMPLES) == set(option_specs())
    assert set(DEFAULTS) == set(option_specs()) - {"receive_socket_name", "debug_dir"}


def test_defaults_are_bruces() -> None:
    options = parse_command_line([])
    assert options == Options()
    assert isinstance(options, Options)
    assert {name: getattr(options, name) for name in DEFAULTS} == DEFAULTS


def test_default_socket_follows_the_runtime_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert Options().receive_socket_name == "/run/user/1000/bruce.socket"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.delenv("TMPDIR", raising=False)
    assert Options().receive_socket_name == f"/tmp/bruce-{os.geteuid()}/bruce.socket"
    monkeypatch.setenv("TMPDIR", "/var/tmp/mine")
    assert Options().receive_socket_name == f"/var/tmp/mine/bruce-{os.geteuid()}/bruce.socket"


def test_default_debug_dir_is_the_users_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Not Bruce's /home/bruce/debug (another user's home): the XDG state directory, else ~/.local/state."""
    monkeypatch.setenv("XDG_STATE_HOME", "/var/lib/me/state")
    assert Options().debug_dir == "/var/lib/me/state/bruce/debug"
    monkeypatch.setenv("XDG_STATE_HOME", "relative")  # not absolute: ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Options().debug_dir == f"{tmp_path}/.local/state/bruce/debug"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert parse_command_line([]).debug_dir == f"{tmp_path}/.local/state/bruce/debug"
    assert parse_command_line(["--debug_dir", "/srv/debug"]).debug_dir == "/srv/debug"  # Bruce's option still wins


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_option_is_parsed(name: str) -> None:
    words, expected = SAMPLES[name]
    options = parse_command_line(words)
    assert isinstance(options, Options)
    assert getattr(options, name) == expected
    changed = {f for f in DEFAULTS if getattr(options, f) != DEFAULTS[f]}
    assert changed <= {name}


def test_bruces_init_script_command_line() -> None:
    options = parse_command_line(
        [
            "--daemon",
            "--msg_buffer_max",
            "65536",
            "--receive_socket_name",
            "/var/run/bruce/bruce.socket",
            "--config_path",
            "/etc/bruce/bruce_conf.xml",
            "--status_port=9091",
            "--status-loopback-only",
        ]
    )
    assert isinstance(options, Options)
    assert (options.daemon, options.msg_buffer_max, options.status_port) == (True, 65536, 9091)
    assert options.receive_socket_name == "/var/run/bruce/bruce.socket"
    assert options.status_bind_host == "127.0.0.1"
    assert not options.use_embedded_broker


def test_derived_values() -> None:
    options = Options(
        msg_buffer_max=2,
        kafka_socket_timeout=3,
        metadata_refresh_interval=4,
        discard_report_interval=5,
        msg_debug_time_limit=6,
        discard_log_max_file_size=7,
        discard_log_max_archive_size=8,
        log_level="LOG_WARNING",
    )
    assert options.msg_buffer_max_bytes == 2048
    assert options.kafka_socket_timeout_ms == 3000
    assert options.metadata_refresh_interval_ms == 240_000
    assert options.discard_log_max_file_size_bytes == 7 * 1024
    assert options.discard_log_max_archive_size_bytes == 8 * 1024
    assert options.log_level_number == 30
    assert Options(status_host="0.0.0.0").status_bind_host == "0.0.0.0"


@pytest.mark.parametrize(
    ("words", "embedded"),
    [
        ([], True),
        (["--embedded_broker"], True),
        (["--config_path", "x.xml"], False),
        (["--initial_brokers", "k"], False),
    ],
)
def test_when_the_embedded_broker_is_used(words: list[str], embedded: bool) -> None:
    options = parse_command_line(words)
    assert isinstance(options, Options)
    assert options.use_embedded_broker is embedded


REJECTED = [
    # (words, where, words of the problem)
    (["--required_acks", "-2"], "--required_acks", "-2 is out of range: expected -1 to 32767"),
    (["--required_acks", "32768"], "--required_acks", "out of range"),
    (["--replication_timeout", "2147483648"], "--replication_timeout", "expected 0 to 2147483647"),
    (["--protocol_version", "1"], "--protocol_version", "1 is not supported: Bruce's only protocol version is 0"),
    (["--debug_dir", "debug"], "--debug_dir", '"debug" is not an absolute path'),
    (["--debug_dir", ""], "--debug_dir", '"" is not an absolute path'),
    (["--discard_log_path", "discards.log"], "--discard_log_path", '"discards.log" is not an absolute path'),
    (["--discard_log_path", "/var/log/bruce/"], "--discard_log_path", "it must name a file, not a directory"),
    (["--discard_log_max_file_size", "0"], "--discard_log_max_file_size", "0 is out of range: expected 1 to"),
    (
        ["--discard_log_path", "/d", "--discard_log_max_file_size", "127"],
        "--discard_log_max_file_size",
        "127 KiB is too small for a discard log: it must hold twice the largest message (--max_input_msg_size 65536), "
        "so at least 128",
    ),
    (["--discard_report_interval", "0"], "--discard_report_interval", "0 is out of range: expected 1"),
    (["--status_port", "65536"], "--status_port", "expected 0 to 65535"),
    (["--status_port", "http"], "--status_port", '"http" is not a whole number'),
    (["--status_port", "0x10"], "--status_port", '"0x10" is not a whole number'),
    (["--status_loopback_only", "--status_host", "0.0.0.0"], "--status_loopback_only", "conflicts with --status_host"),
    (["--status_host", " "], "--status_host", "must not be empty"),
    (["--log_level", "DEBUG"], "--log_level", '"DEBUG" is not one of: LOG_ERR, LOG_WARNING, LOG_NOTICE'),
    (["--kafka_protocol", "v3"], "--kafka_protocol", '"v3" is not one of: auto, v0, modern'),
    (["--msg_buffer_max", "0"], "--msg_buffer_max", "0 is out of range"),
    (["--msg_buffer_max", "-5"], "--msg_buffer_max", "-5 is out of range"),
    (["--max_input_msg_size", "16777217"], "--max_input_msg_size", "expected 1 to 16777216"),
    (["--metadata_refresh_interval", "0"], "--metadata_refresh_interval", "0 is out of range"),
    (["--kafka_socket_timeout", "0"], "--kafka_socket_timeout", "0 is out of range"),
    (["--pause_rate_limit_max_double", "31"], "--pause_rate_limit_max_double", "expected 0 to 30"),
    (["--receive_socket_mode", "0999"], "--receive_socket_mode", "is not a file mode: write it in octal"),
    (["--receive_socket_mode", "010000"], "--receive_socket_mode", "the largest is 07777"),
    (["--receive_socket_mode", " "], "--receive_socket_mode", "is not a file mode"),
    (["--receive_socket_name", "/tmp/" + "s" * 103], "--receive_socket_name", "longer than the 107 bytes"),
    (["--receive_socket_name", ""], "--receive_socket_name", "must not be empty"),
    (["--status_allowed_hosts", "bruce:9090"], "--status_allowed_hosts", '"bruce:9090" is not a host name'),
    (["--config_path", ""], "--config_path", "must not be empty"),
    (["--config_path", "a\0b"], "--config_path", "a path cannot contain a NUL character"),
    (["--initial_brokers", "k:0"], "--initial_brokers", '"k:0": the port must be a number from 1 to 65535'),
    (["--initial_brokers", "k1,,k2"], "--initial_brokers", "names no host"),
    (["--initial_brokers", "[::1]9092"], "--initial_brokers", "is not [host]:port"),
    (["--embedded_broker", "--initial_brokers", "k"], "--embedded_broker", "conflicts with --initial_brokers"),
    (["--daemon=yes"], "--daemon", "is a switch and takes no value"),
    (["--status_port"], "--status_port", "needs a value: --status_port PORT"),
    (["--log_echo", "--log_echo"], "--log_echo", "is given twice"),
    (["--status_port", "1", "--status-port=2"], "--status_port", "is given twice"),
]


@pytest.mark.parametrize(("words", "where", "problem"), REJECTED, ids=[" ".join(r[0])[:40] for r in REJECTED])
def test_bad_options_are_refused_by_name(words: list[str], where: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_command_line(words)
    assert caught.value.where == where
    assert problem in caught.value.problem
    assert str(caught.value) == f"{where}: {caught.value.problem}"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--status_prot", "1"], "unknown option --status_prot; did you mean --status_port? (see bruce --help)"),
        (["--frobnicate"], "unknown option --frobnicate (see bruce --help)"),
        (["conf.xml"], 'unexpected argument "conf.xml": every option starts with -- (see bruce --help)'),
        (["-d"], 'unexpected argument "-d"'),
        (["--"], 'unexpected argument "--"'),
    ],
)
def test_unknown_words_are_refused(words: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_command_line(words)
    assert message in str(caught.value)


def test_options_built_in_code_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"^--status_port: 70000 is out of range"):
        Options(status_port=70000)
    with pytest.raises(ConfigError, match=r"^--kafka_protocol: "):
        Options(kafka_protocol="new")
    with pytest.raises(ConfigError, match=r"^--debug_dir: "):
        Options(debug_dir="relative")


def test_empty_discard_log_path_means_none() -> None:
    options = parse_command_line(["--discard_log_path", ""])
    assert isinstance(options, Options) and options.discard_log_path is None


def test_values_may_start_with_a_dash() -> None:
    options = parse_command_line(["--client_id", "--daemon"])
    assert isinstance(options, Options) and options.client_id == "--daemon" and not options.daemon


# -- help, version, conversion ----------------------------------------------------------------------------------------


def test_help_lists_every_option_with_its_default() -> None:
    for words in (["--help"], ["-h"], ["--status_port", "x", "--help"]):
        result = parse_command_line(words)
        assert isinstance(result, ImmediateExit) and result.status == 0
    text = parse_command_line(["--help"]).output  # type: ignore[union-attr]
    assert text.startswith("usage: bruce [OPTION]...\n")
    for name in option_specs():
        assert f"  --{name}" in text
    assert "(default: 9090)" in text and "(default: LOG_NOTICE)" in text
    assert "--convert_config FILE" in text and "--version" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_version() -> None:
    result = parse_command_line(["--version"])
    assert isinstance(result, ImmediateExit)
    assert result.output.startswith("bruce (bruce-kafka) ") and result.output.endswith("\n")


def test_convert_config_request() -> None:
    assert parse_command_line(["--convert_config", "a.xml"]) == ConvertConfig("a.xml")
    assert parse_command_line(["--convert-config=b.xml"]) == ConvertConfig("b.xml")
    with pytest.raises(ConfigError, match="takes one file and no other option"):
        parse_command_line(["--convert_config", "a.xml", "--daemon"])


# -- configure: the front door ------------------------------------------------------------------------------------


def _run(words: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return configure(words, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_configure_converts_bruce_xml_to_toml() -> None:
    status, out, err = _run(["--convert-config", str(PER_TOPIC_CONF)])
    assert (status, err) == (0, "")
    assert out.startswith("# bruce-kafka configuration, from per_topic_conf.xml\n")
    assert load_toml(out) == load_config_file(PER_TOPIC_CONF)


def test_configure_prints_help_and_version() -> None:
    status, out, _ = _run(["--help"])
    assert status == 0 and "--config_path PATH" in out
    status, out, _ = _run(["--version"])
    assert status == 0 and out.startswith("bruce (bruce-kafka)")


def test_configure_reports_a_bad_command_line() -> None:
    status, out, err = _run(["--required_acks", "-5"])
    assert (status, out) == (EXIT_USAGE, "")
    assert err == "bruce: --required_acks: -5 is out of range: expected -1 to 32767\n"


def test_configure_reports_a_bad_config_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text(VALID_XML.replace('<time value="10" />', '<time value="10k" />'))
    status, out, err = _run(["--config_path", str(bad)])
    assert (status, out) == (EXIT_CONFIG, "")
    assert err.startswith(f'bruce: {bad}, line 6: batching/namedConfigs/config[name="fast"]/time: "10k": the k suffix')
    status, _, err = _run(["--config_path", str(tmp_path / "missing.toml")])
    assert status == EXIT_CONFIG and "cannot read the config file: No such file or directory" in err
    status, _, err = _run(["--config_path", str(tmp_path)])
    assert status == EXIT_CONFIG and "cannot read the config file: Is a directory" in err


def test_configure_with_a_config_file(tmp_path: Path) -> None:
    conf = tmp_path / "bruce_conf.xml"
    conf.write_text(VALID_XML)
    result = configure(["--config_path", str(conf), "--status_port", "0"])
    assert isinstance(result, tuple)
    options, config = result
    assert options.status_port == 0
    assert config.initial_brokers == (Broker("b1", 9092), Broker("b2", 9093))


def test_brokers_come_from_the_embedded_broker_then_the_command_line_then_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "c.xml"
    conf.write_text(VALID_XML)
    plain = parse_command_line(["--config_path", str(conf)])
    named = parse_command_line(["--config_path", str(conf), "--initial_brokers", "k:1"])
    embedded = parse_command_line(["--config_path", str(conf), "--embedded_broker"])
    nothing = parse_command_line([])
    only_brokers = parse_command_line(["--initial_brokers", "k:1,j"])
    assert isinstance(plain, Options) and isinstance(named, Options) and isinstance(embedded, Options)
    assert isinstance(nothing, Options) and isinstance(only_brokers, Options)
    assert load_config(plain).initial_brokers == (Broker("b1"), Broker("b2", 9093))
    assert load_config(named).initial_brokers == (Broker("k", 1),)
    assert load_config(embedded, embedded_port=4321).initial_brokers == (Broker("127.0.0.1", 4321),)
    assert load_config(nothing, embedded_port=4321) == default_config([Broker("127.0.0.1", 4321)])
    assert load_config(only_brokers) == default_config([Broker("k", 1), Broker("j", 9092)])
    picked = load_config(nothing).initial_brokers
    assert len(picked) == 1 and picked[0].host == "127.0.0.1" and 0 < picked[0].port < 65536


def _without_brokers(tmp_path: Path, suffix: str) -> Path:
    """The sample config, in XML or TOML, with its initial brokers left out."""
    config = load_xml(VALID_XML)
    if suffix == ".xml":
        start, end = VALID_XML.index("  <initialBrokers>"), VALID_XML.index("</bruceConfig>")
        text = VALID_XML[:start] + VALID_XML[end:]
    else:
        full = to_toml(config)
        text = full[: full.index("\n[[initial_brokers]]")] + "\n"
    path = tmp_path / f"no-brokers{suffix}"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("suffix", "place"), [(".toml", ": initial_brokers"), (".xml", ", line 2: initialBrokers")])
def test_a_file_may_leave_the_brokers_to_the_command_line(tmp_path: Path, suffix: str, place: str) -> None:
    conf = str(_without_brokers(tmp_path, suffix))
    expected = load_xml(VALID_XML)
    status, _, err = _run(["--config_path", conf])
    assert status == EXIT_CONFIG
    assert err == (
        f"bruce: {conf}{place}: is missing: list at least one broker here, "
        "or name them with --initial_brokers (or --embedded_broker)\n"
    )
    named = configure(["--config_path", conf, "--initial_brokers", "k1,k2:9093"])
    assert isinstance(named, tuple)
    assert named[1] == dataclasses.replace(expected, initial_brokers=(Broker("k1"), Broker("k2", 9093)))
    embedded = parse_command_line(["--config_path", conf, "--embedded_broker"])
    assert isinstance(embedded, Options)
    assert load_config(embedded, embedded_port=4321).initial_brokers == (Broker("127.0.0.1", 4321),)


def test_brokers_the_file_lists_are_checked_even_when_replaced(tmp_path: Path) -> None:
    conf = tmp_path / "bad-port.xml"
    conf.write_text(VALID_XML.replace('port="9093"', 'port="0"'))
    status, _, err = _run(["--config_path", str(conf), "--initial_brokers", "k1"])
    assert status == EXIT_CONFIG
    assert "initialBrokers/broker[2]/@port: 0 is not a TCP port" in err


def test_a_config_file_is_read_within_a_bound(tmp_path: Path) -> None:
    huge = tmp_path / "huge.toml"
    with huge.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk space used
    with pytest.raises(ConfigError, match=rf"huge\.toml: the config file is larger than {MAX_FILE_BYTES} bytes"):
        load_config_file(huge)


def test_the_built_in_config() -> None:
    config = default_config([Broker("k")])
    assert config.batching_for("any").limits is not None
    assert config.batching_for("any").limits.time_ms == 1000  # type: ignore[union-attr]
    assert config.compression_for("any").min_size == 128
    assert config.rate_limit_for("any").max_count is None


def test_every_option_is_documented_with_its_default() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text().replace("\\|", "|")
    for spec in option_specs().values():
        row = f"| `--{spec.name}" + (f" {spec.metavar}" if spec.metavar else "") + "` | "
        assert row in doc, f"--{spec.name} has no row in docs/configuration.md"
        shown = doc[doc.index(row) + len(row) :].split(" | ")[0]
        if spec.read is None:
            assert shown == "off", spec.name
        elif isinstance(spec.default, int):
            assert shown == str(spec.default), spec.name
        elif isinstance(spec.default, str) and spec.default:
            assert shown == f"`{spec.default}`", spec.name
