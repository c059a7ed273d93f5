"""The daemon's security settings: the [kafka] TOML table, the <kafka> XML extension element, --kafka_property, and
secrets that never reach --convert_config's output, a repr or an error."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from config_files import PER_TOPIC_CONF

from bruce.producer.config.security import Secret
from bruce.proxy.config import producer_config
from bruce.proxy.config.errors import ConfigError
from bruce.proxy.config.model import Broker
from bruce.proxy.config.options import Options
from bruce.proxy.config.startup import configure, default_config
from bruce.proxy.config.toml_config import load_toml, to_toml
from bruce.proxy.config.xml_config import load_xml


def base_toml() -> str:
    return to_toml(default_config([Broker("k1", 9092)]))


def test_the_kafka_table_takes_librdkafka_names_quoted_or_dotted(monkeypatch) -> None:
    monkeypatch.setenv("BRUCE_TEST_SASL_PW", "pw-from-env")
    config = load_toml(
        base_toml()
        + '\n[kafka]\n"security.protocol" = "SASL_SSL"\nsasl.mechanism = "SCRAM-SHA-256"\nsasl.username = "bruce"\n'
        + 'sasl.password = "env:BRUCE_TEST_SASL_PW"\n"enable.ssl.certificate.verification" = true\n'
    )
    k = config.kafka
    assert (k.security_protocol, k.sasl_mechanism, k.sasl_username) == ("SASL_SSL", "SCRAM-SHA-256", "bruce")
    assert k.sasl_password.reveal() == "pw-from-env" and "pw-from-env" not in repr(config)
    assert producer_config_of(config).security == k


def producer_config_of(config):
    return producer_config(Options(initial_brokers=config.initial_brokers), config)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('"security.protocl" = "SSL"', 'kafka."security.protocl": not a security property bruce takes; did you mean'),
        ('"security.protocol" = "TLS"', "kafka.\"security.protocol\": 'TLS' is not one of PLAINTEXT"),
        ('"security.protocol" = 1', 'kafka."security.protocol": expected a string'),
        ('"security.protocol" = "SASL_PLAINTEXT"', "kafka: sasl.username: required with"),
        ('"linger.ms" = "5"', 'kafka."linger.ms": not a security property bruce takes'),
    ],
)
def test_kafka_table_errors_name_the_key(table: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^f.toml: " + message.replace(".", r"\.").replace("(", r"\(")):
        load_toml(base_toml() + "\n[kafka]\n" + table + "\n", source="f.toml")


def xml_with(kafka: str) -> str:
    return PER_TOPIC_CONF.read_text().replace("</bruceConfig>", f"<kafka>{kafka}</kafka></bruceConfig>")


def test_the_kafka_xml_element_and_its_errors() -> None:
    config = load_xml(
        xml_with(
            '<property name="security.protocol" value="SSL"/><property name="ssl.ca.location" value="/etc/ca.pem"/>'
        )
    )
    assert (config.kafka.security_protocol, config.kafka.ssl_ca_location) == ("SSL", "/etc/ca.pem")
    with pytest.raises(ConfigError, match=r'kafka/property\[name="sasl\.usrname"\]: not a security property'):
        load_xml(xml_with('<property name="sasl.usrname" value="u"/>'), source="b.xml")
    with pytest.raises(ConfigError, match=r'the name "sasl\.username" is used twice'):
        load_xml(xml_with('<property name="sasl.username" value="a"/><property name="sasl.username" value="b"/>'))


def test_convert_config_never_writes_a_literal_secret(tmp_path: Path) -> None:
    source = tmp_path / "bruce.xml"
    source.write_text(
        xml_with(
            '<property name="security.protocol" value="SASL_SSL"/><property name="sasl.username" value="u"/>'
            '<property name="sasl.password" value="hunter2-literal"/>'
            '<property name="ssl.key.password" value="file:/etc/bruce/key-pw"/>'
        ).replace("/etc/bruce/key-pw", str(tmp_path / "key-pw"))
    )
    (tmp_path / "key-pw").write_text("kpw-from-file\n")
    out = io.StringIO()
    assert configure(["--convert_config", str(source)], stdout=out) == 0
    text = out.getvalue()
    assert "hunter2-literal" not in text and "kpw-from-file" not in text
    assert f'"ssl.key.password" = "file:{tmp_path / "key-pw"}"' in text
    assert "# sasl.password: given literally, not written here" in text
    with pytest.raises(ConfigError, match=r"sasl\.password: required"):  # loud until the secret is given again
        load_toml(text)


def test_kafka_property_overrides_the_file_and_keeps_secrets_redacted(tmp_path: Path) -> None:
    source = tmp_path / "bruce.toml"
    source.write_text(base_toml() + '\n[kafka]\n"security.protocol" = "SSL"\n"ssl.ca.location" = "/a.pem"\n')
    pw = tmp_path / "pw"
    pw.write_text("cli-secret")
    options, config = configure(
        [
            "--config_path",
            str(source),
            "--kafka_property",
            "security.protocol=SASL_SSL",
            "--kafka_property=sasl.username=u",
            "--kafka_property",
            f"sasl.password=file:{pw}",
        ]
    )
    k = config.kafka
    assert (k.security_protocol, k.ssl_ca_location, k.sasl_password.reveal()) == ("SASL_SSL", "/a.pem", "cli-secret")
    assert isinstance(dict(options.kafka_property)["sasl.password"], Secret)
    assert "cli-secret" not in repr(options) and "cli-secret" not in repr(config)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kafka_property", "linger.ms=5"], "--kafka_property: 'linger.ms' is not a security property"),
        (["--kafka_property", "security.protocol=SASL_SSL"], "--kafka_property: sasl.username: required"),
        (["--kafka_property", "sasl.password=env:BRUCE_NO_SUCH_VAR"], "environment variable BRUCE_NO_SUCH_VAR"),
    ],
)
def test_kafka_property_errors(argv: list[str], message: str) -> None:
    err = io.StringIO()
    assert configure(["--initial_brokers", "k1", *argv], stderr=err) == 2
    assert message in err.getvalue()


@pytest.mark.parametrize(
    ("argv", "table", "expected"),
    [
        ([], "", None),  # auto: on when the brokers take it and acks is -1
        (["--enable_idempotence", "false"], "", False),
        (["--enable_idempotence", "true"], '"enable.idempotence" = false', True),  # the option wins over the file
        ([], '"enable.idempotence" = false', False),  # auto defers to the file
        ([], 'enable.idempotence = "true"', True),
        (["--kafka_property", "enable.idempotence=false"], '"enable.idempotence" = true', False),
    ],
)
def test_enable_idempotence_from_the_option_the_kafka_table_and_kafka_property(
    tmp_path: Path, argv: list[str], table: str, expected: bool | None
) -> None:
    source = tmp_path / "bruce.toml"
    source.write_text(base_toml() + (f"\n[kafka]\n{table}\n" if table else ""))
    options, config = configure(["--config_path", str(source), *argv])
    assert producer_config(options, config).enable_idempotence is expected
    if table and not argv:  # written back by --convert_config
        assert load_toml(to_toml(config)).enable_idempotence is expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--enable_idempotence", "true", "--required_acks", "1"], "--enable_idempotence: needs --required_acks -1"),
        (["--enable_idempotence", "true", "--kafka_protocol", "v0"], "--enable_idempotence: the 0.8 protocol"),
        (["--enable_idempotence", "yes"], '--enable_idempotence: "yes" is not one of: auto, true, false'),
        (["--kafka_property", "enable.idempotence=1"], "enable.idempotence: '1' must be true or false"),
    ],
)
def test_enable_idempotence_errors(argv: list[str], message: str) -> None:
    err = io.StringIO()
    result = configure(["--initial_brokers", "k1", *argv], stderr=err)
    if result == 2:
        text = err.getvalue()
    else:  # the combination is checked where the producer's settings are made
        with pytest.raises(ConfigError) as raised:
            producer_config(*result)
        text = str(raised.value)
    assert message in text, text


def test_kafka_table_enable_idempotence_must_be_true_or_false() -> None:
    with pytest.raises(ConfigError, match=re.escape("kafka.\"enable.idempotence\": 'maybe' must be true or false")):
        load_toml(base_toml() + '\n[kafka]\n"enable.idempotence" = "maybe"\n', source="f.toml")


def test_the_reconnect_backoff_from_the_kafka_table_the_xml_element_and_the_command_line() -> None:
    table = '"reconnect.backoff.ms" = 50\n"reconnect.backoff.max.ms" = "2000"\n'
    config = load_toml(base_toml() + "\n[kafka]\n" + table)
    assert config.producer_properties == (("reconnect.backoff.ms", 50), ("reconnect.backoff.max.ms", 2000))
    produced = producer_config_of(config)
    assert (produced.reconnect_backoff_ms, produced.reconnect_backoff_max_ms) == (50, 2000)
    assert load_toml(to_toml(config)) == config  # written back as read
    xml = load_xml(xml_with('<property name="reconnect.backoff.max.ms" value="3000"/>'))
    assert producer_config_of(xml).reconnect_backoff_max_ms == 3000
    result = configure(["--initial_brokers", "k1", "--kafka_property", "reconnect.backoff.max.ms=700"])
    assert not isinstance(result, int)
    assert producer_config(*result).reconnect_backoff_max_ms == 700
    err = io.StringIO()
    argv = ["--initial_brokers", "k1", "--kafka_property", "reconnect.backoff.max.ms=10"]
    assert configure(argv, stderr=err) == 2  # below reconnect.backoff.ms (100)
    assert "reconnect_backoff_max_ms: 10 must be at least reconnect_backoff_ms (100)" in err.getvalue()


def test_sasl_with_the_08_protocol_and_an_unsendable_password_stop_the_daemon_at_start(monkeypatch) -> None:
    sasl = ["--kafka_property", "security.protocol=SASL_PLAINTEXT", "--kafka_property", "sasl.username=u"]
    monkeypatch.setenv("BRUCE_TEST_PW", "good")
    err = io.StringIO()
    argv = ["--initial_brokers", "k1", *sasl, "--kafka_property", "sasl.password=env:BRUCE_TEST_PW"]
    assert configure([*argv, "--kafka_protocol", "v0"], stderr=err) == 2
    assert err.getvalue().startswith("bruce: --kafka_protocol: the 0.8 protocol (v0) has no SASL"), err.getvalue()
    monkeypatch.setenv("BRUCE_TEST_PW", "bad\x01pw")
    err = io.StringIO()
    assert configure([*argv, "--kafka_property", "sasl.mechanism=SCRAM-SHA-512"], stderr=err) == 2
    assert "--kafka_property: sasl.password: holds a character SASLprep forbids" in err.getvalue()
    assert "bad\x01pw" not in err.getvalue()
