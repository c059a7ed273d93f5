"""SecurityConfig: librdkafka's names, checks with clear errors, secrets from file: and env: that never show."""

from __future__ import annotations

import pickle

import pytest

from bruce.producer import ConfigError, Producer, ProducerConfig, Secret, SecurityConfig


def test_librdkafka_names_build_the_security_config() -> None:
    config = ProducerConfig.from_mapping(
        {
            "bootstrap.servers": "b:9093",
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "scram-sha-512",
            "sasl.username": "u",
            "sasl.password": "hunter2",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
        }
    )
    s = config.security
    assert (s.security_protocol, s.sasl_mechanism, s.sasl_username, s.ssl_ca_location) == (
        "SASL_SSL",
        "SCRAM-SHA-512",
        "u",
        "/etc/ca.pem",
    )
    assert s.tls and s.sasl and s.sasl_password.reveal() == "hunter2"
    assert "hunter2" not in repr(config) and "hunter2" not in str(s.properties())
    assert pickle.loads(pickle.dumps(config)) == config  # Spark ships it to executors


def test_secrets_come_from_files_and_the_environment(tmp_path, monkeypatch) -> None:
    path = tmp_path / "pw"
    path.write_text("from-file\nignored second line\n")
    monkeypatch.setenv("BRUCE_TEST_PW", "from-env")
    s = SecurityConfig(
        security_protocol="SASL_SSL",
        sasl_username="u",
        sasl_password=f"file:{path}",
        ssl_key_password="env:BRUCE_TEST_PW",
    )
    assert (s.sasl_password.reveal(), s.ssl_key_password.reveal()) == ("from-file", "from-env")
    assert repr(s.sasl_password) == f"Secret(file:{path})"  # the reference shows, never the value
    assert s.properties()["sasl.password"] == f"file:{path}"
    assert "from-file" not in repr(s) and "from-env" not in repr(s)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism: 'GSSAPI' is not one of PLAIN, SCRAM-SHA-256"),
        ({"security.protocol": "SASL_SSL", "sasl.password": "p"}, "sasl.username: required"),
        ({"security.protocol": "SASL_SSL", "sasl.username": "u"}, "sasl.password: required"),
        ({"sasl.password": "env:BRUCE_NO_SUCH_VARIABLE"}, "sasl.password: environment variable BRUCE_NO_SUCH"),
        ({"sasl.password": "file:/nonexistent/pw"}, "sasl.password: cannot read file:/nonexistent/pw"),
        ({"ssl.endpoint.identification.algorithm": "x"}, "ssl.endpoint.identification.algorithm: 'x' is not"),
        ({"enable.ssl.certificate.verification": "maybe"}, "enable.ssl.certificate.verification: 'maybe' must be"),
        ({"ssl.key.location": "/k.pem"}, "ssl.key.location: needs ssl.certificate.location"),
        ({"ssl.cipher.suites": "x"}, "unknown security property 'ssl.cipher.suites'"),
    ],
)
def test_bad_settings_name_the_property(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        SecurityConfig.from_mapping(settings)


def test_unloadable_certificates_are_config_errors_without_the_key_password(tmp_path) -> None:
    s = SecurityConfig(
        security_protocol="SSL", ssl_certificate_location=str(tmp_path / "none.pem"), ssl_key_password="kpw-123"
    )
    with pytest.raises(ConfigError, match=r"ssl.certificate.location/ssl.key.location: cannot load") as caught:
        s.ssl_context()
    assert "kpw-123" not in str(caught.value)


def test_a_secret_is_redacted_everywhere_it_could_be_printed() -> None:
    secret = Secret("hunter2")
    assert "hunter2" not in f"{secret} {secret!r} {[secret]} { ({'p': secret}) }"
    assert secret.reveal() == "hunter2"


def test_a_producer_loads_its_certificates_when_built(tmp_path) -> None:
    config = ProducerConfig.from_mapping({"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "no-ca.pem")})
    with pytest.raises(ConfigError, match=r"ssl\.ca\.location: cannot load .*no-ca\.pem"):
        Producer(config)
