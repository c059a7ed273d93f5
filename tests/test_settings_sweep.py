"""The settings sweep: every setting of the one table (and every security property, every daemon option) given a
wrong type, a wrong value and an out-of-range value through each way in — ``ProducerConfig(...)``,
``ProducerConfig.from_mapping``, Spark's ``kafka.*`` write options, the daemon's ``[kafka]`` table and
``--kafka_property``, the daemon's command line. Each must be a clean error of the way in's own type whose message
names the setting: never a traceback of another exception type, never a secret's value."""

from __future__ import annotations

from typing import Any

import pytest

from bruce.producer import ProducerConfig
from bruce.producer.config.security import PROPERTIES as SECURITY_PROPERTIES
from bruce.producer.config.setting_table import SETTINGS, Setting, is_secret
from bruce.producer.errors import ConfigError
from bruce.proxy.config import ConfigError as DaemonConfigError
from bruce.proxy.config import option_specs, parse_command_line
from bruce.proxy.config.model import PRODUCER_PROPERTIES, Broker
from bruce.proxy.config.startup import configure, default_config
from bruce.proxy.config.toml_config import load_toml, to_toml
from bruce.spark.option_values import OptionError
from bruce.spark.options import write_options

SECRET = "S3cret-value-never-shown"


def bad_values(setting: Setting) -> dict[str, list[Any]]:
    """Per kind: values of a wrong type, wrong values and out-of-range values."""
    kind = setting.kind
    if kind == "int":
        return {
            "type": [None, 1.5, True, [1], b"1", {"n": 1}],
            "value": ["abc", "1.5", "", "0x10"],
            "range": [setting.low - 1, setting.high + 1, str(setting.low - 1)],
        }
    if kind in ("bool", "optional_bool"):
        return {
            "type": [1, 0.0, [True], b"true"] + ([] if kind == "optional_bool" else [None]),
            "value": ["maybe", "yes", ""],
            "range": [2, -1],
        }
    if kind == "choice":
        return {"type": [None, 5, ["auto"], b"none"], "value": ["nonsense", ""], "range": ["x" * 100]}
    if kind == "optional_text":  # unset (None) is its default
        return {"type": [5, b"bytes", ["a"]], "value": [""], "range": ["x" * (setting.high + 1)]}
    return {"type": [None, 5, b"bytes", ["a"]], "value": [], "range": ["x" * (setting.high + 1)]}


CASES = [
    pytest.param(setting, what, value, id=f"{setting.name}-{what}-{i}")
    for setting in SETTINGS.values()
    for what, values in bad_values(setting).items()
    for i, value in enumerate(values)
]


@pytest.mark.parametrize(("setting", "what", "value"), CASES)
def test_a_keyword_argument(setting: Setting, what: str, value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        ProducerConfig(**{setting.name: value})
    assert str(raised.value).startswith(f"{setting.name}: "), raised.value


@pytest.mark.parametrize(("setting", "what", "value"), CASES)
def test_a_librdkafka_mapping(setting: Setting, what: str, value: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        ProducerConfig.from_mapping({setting.dotted: value})
    assert str(raised.value).startswith(f"{setting.dotted}: "), raised.value


def _as_text(case: Any) -> bool:
    """Spark options are texts: the cases whose text is still wrong (not the number 5 given for a text setting).
    ``kafka.partitioner`` is the data source's own option (the next test)."""
    setting, what, value = case.values
    if setting.name == "partitioner" or (setting.kind in ("text", "optional_text") and what == "type"):
        return False
    return isinstance(value, str | int) and not isinstance(value, bool)


@pytest.mark.parametrize(("setting", "what", "value"), [c for c in CASES if _as_text(c)])
def test_a_spark_kafka_option(setting: Setting, what: str, value: Any) -> None:
    options = {"bootstrap.servers": "127.0.0.1:9092", f"kafka.{setting.dotted}": str(value)}
    with pytest.raises(OptionError) as raised:
        write_options(options)
    assert f"'kafka.{setting.dotted}'" in str(raised.value), raised.value


def test_a_spark_partitioner_option() -> None:
    with pytest.raises(OptionError, match=r"'kafka\.partitioner'"):
        write_options({"bootstrap.servers": "127.0.0.1:9092", "kafka.partitioner": "nonsense"})


# ------------------------------------------------------------------ security properties, every way in

SASL = {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u", "sasl.password": "p"}
SECURITY_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("security.protocol", {}, "SASL_TLS"),
    ("security.protocol", {}, 5),
    ("sasl.mechanism", {}, "GSSAPI"),
    ("sasl.mechanism", {}, None),
    ("sasl.username", {}, 5),
    ("sasl.username", SASL, ""),
    ("sasl.username", {**SASL, "sasl.mechanism": "PLAIN"}, "a\0b"),
    ("sasl.password", {}, 5),
    ("sasl.password", {}, ["x"]),
    ("sasl.password", {**SASL, "sasl.mechanism": "SCRAM-SHA-256"}, SECRET + "\x01"),
    ("sasl.password", {**SASL, "sasl.mechanism": "PLAIN"}, SECRET + "\0"),
    ("sasl.password", {}, "env:BRUCE_SWEEP_NOT_SET"),
    ("ssl.key.password", {}, 5),
    ("ssl.ca.location", {}, 5),
    ("ssl.certificate.location", {}, b"/x"),
    ("ssl.key.location", {}, "/only/a/key.pem"),
    ("ssl.endpoint.identification.algorithm", {}, "dns"),
    ("enable.ssl.certificate.verification", {}, "maybe"),
    ("enable.ssl.certificate.verification", {}, 1),
]


@pytest.mark.parametrize(("name", "base", "value"), SECURITY_CASES)
def test_a_security_property_in_a_mapping(name: str, base: dict, value: Any) -> None:
    assert name in SECURITY_PROPERTIES
    with pytest.raises(ConfigError) as raised:
        ProducerConfig.from_mapping({**base, name: value})
    assert name in str(raised.value), raised.value
    assert SECRET not in str(raised.value)


@pytest.mark.parametrize(
    ("name", "base", "value"), [c for c in SECURITY_CASES if isinstance(c[2], str) and "\0" not in c[2]]
)
def test_a_security_property_on_the_daemons_command_line(name: str, base: dict, value: str) -> None:
    err = _StringIO()
    monkey = {**base, name: value}
    argv = ["--initial_brokers", "k1"]
    for key, text in monkey.items():
        argv += ["--kafka_property", f"{key}={text}"]
    assert configure(argv, stderr=err) == 2
    assert "--kafka_property" in err.text and name in err.text, err.text
    assert SECRET not in err.text


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (name, value)
        for name in PRODUCER_PROPERTIES
        for value in (["abc", "1.5", "-5", "99999999999"] if name != "enable.idempotence" else ["maybe", "2"])
    ],
)
def test_a_producer_property_in_the_daemons_kafka_table_and_command_line(name: str, value: str) -> None:
    base = to_toml(default_config([Broker("k1", 9092)]))
    with pytest.raises(DaemonConfigError) as raised:
        load_toml(base + f'\n[kafka]\n"{name}" = "{value}"\n', source="f.toml")
    assert f'kafka."{name}"' in str(raised.value), raised.value
    err = _StringIO()
    assert configure(["--initial_brokers", "k1", "--kafka_property", f"{name}={value}"], stderr=err) == 2
    assert f"--kafka_property: {name}: " in err.text, err.text


@pytest.mark.parametrize(
    "argument",
    ["sasl.password:" + SECRET, "sasl.password " + SECRET, "sasl.pasword=" + SECRET, SECRET, "ssl.key.password"],
)
def test_a_malformed_kafka_property_never_echoes_a_secret(argument: str) -> None:
    err = _StringIO()
    assert configure(["--initial_brokers", "k1", "--kafka_property", argument], stderr=err) == 2
    assert "--kafka_property" in err.text and SECRET not in err.text, err.text


def test_secret_names_are_recognised() -> None:
    secrets = [name for name in SECURITY_PROPERTIES if is_secret(name)]
    assert sorted(secrets) == ["sasl.password", "ssl.key.password"]
    assert is_secret("ssl.keystore.password") and is_secret("sasl.oauthbearer.client.secret")
    assert not any(is_secret(s.dotted) for s in SETTINGS.values())


# ------------------------------------------------------------------ the daemon's own options


@pytest.mark.parametrize("name", [name for name, spec in option_specs().items() if spec.read is not None])
@pytest.mark.parametrize("value", ["", "abc", "-1", "1.5", "99999999999999999999999", "\0"])
def test_a_daemon_option(name: str, value: str) -> None:
    """Accepted, or a ConfigError naming the option: nothing else."""
    try:
        parse_command_line([f"--{name}", value])
    except DaemonConfigError as error:
        assert f"--{name}" in str(error), error


NUMERIC = [n for n, s in option_specs().items() if type(s.default) is int and s.read is not None]


@pytest.mark.parametrize("name", NUMERIC)
def test_a_numeric_daemon_option_refuses_out_of_range_text(name: str) -> None:
    with pytest.raises(DaemonConfigError, match=f"--{name}"):
        parse_command_line([f"--{name}", "99999999999999999999999"])


class _StringIO:
    """A stderr for :func:`configure` that keeps what was written."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)
