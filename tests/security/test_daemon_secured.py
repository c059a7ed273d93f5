"""The daemon over SASL_SSL, SASL_PLAINTEXT and SSL (config from code, TOML [kafka], XML <kafka>), read back with
confluent-kafka; and a refused password: messages kept within the budget, retried with backoff (no crash loop),
"authentication failed" on the status pages, and no secret in the log or on any page."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from config_files import PER_TOPIC_CONF
from e2e.daemon.harness import daemon_starter, http_get, make_config, wait_for

from bruce.client import BruceClient
from bruce.producer import SecurityConfig
from bruce.proxy.config import Broker
from bruce.proxy.config.startup import default_config
from bruce.proxy.config.toml_config import to_toml

from .peers import USERS, Secured, confluent_read

pytestmark = pytest.mark.e2e


def broker_of(secured: Secured) -> Broker:
    host, port = secured.bootstrap.rsplit(":", 1)
    return Broker(host, int(port))


@pytest.mark.parametrize(("way", "mechanism"), [("SASL_SSL", "SCRAM-SHA-512"), ("SASL_PLAINTEXT", "PLAIN")])
def test_the_daemon_delivers_through_the_secured_peer(peers, workdir: Path, way: str, mechanism: str) -> None:
    secured = peers.get(way)
    topic = f"daemon-{way}-{mechanism}".lower()
    secured.broker.create_topic(topic, 2)
    config = make_config((broker_of(secured),))
    config = dataclasses.replace(config, kafka=SecurityConfig.from_mapping(secured.client(mechanism)))
    with daemon_starter(workdir, config.initial_brokers) as start:
        daemon = start(config, reader="loop")
        with daemon.client() as client:
            for i in range(100):
                client.send_any_partition(topic, f"d{i}".encode())
        accounting = daemon.settle(100)
        assert accounting.delivered == 100 and accounting.discarded == 0
        daemon.stop()
    assert sorted(confluent_read(secured, topic, 100, partitions=2)) == sorted(f"d{i}".encode() for i in range(100))


def test_the_bruce_command_over_ssl_with_the_xml_kafka_element(peers, workdir: Path, bruce_process) -> None:
    secured = peers.get("SSL")
    topic = "daemon-ssl-xml"
    secured.broker.create_topic(topic, 1)
    kafka = f'<kafka><property name="security.protocol" value="SSL"/><property name="ssl.ca.location" value="{peers.certs.ca}"/></kafka>'  # noqa: E501
    config = workdir / "bruce.xml"
    config.write_text(PER_TOPIC_CONF.read_text().replace("</bruceConfig>", kafka + "</bruceConfig>"))
    sock = str(workdir / "b.sock")
    args = ["--config_path", str(config), "--initial_brokers", secured.bootstrap]
    bruce = bruce_process([*args, "--receive_socket_name", sock, "--status_port", "0"])
    bruce.wait_serving()
    with BruceClient(sock) as client:
        for i in range(10):
            client.send_any_partition(topic, f"x{i}".encode())
    assert confluent_read(secured, topic, 10) == [f"x{i}".encode() for i in range(10)]


def test_a_refused_password_keeps_messages_backs_off_and_shows_on_the_pages(
    peers, workdir: Path, bruce_process
) -> None:
    secured = peers.get("SASL_PLAINTEXT")
    wrong = "wrong-" + USERS["alice"]
    secret_file = workdir / "pw"
    secret_file.write_text(wrong + "\n")
    config = workdir / "bruce.toml"
    table = {**secured.client("SCRAM-SHA-256"), "sasl.password": f"file:{secret_file}"}
    config.write_text(
        to_toml(default_config([broker_of(secured)]))
        + "\n[kafka]\n"
        + "".join(f'"{k}" = {json.dumps(v)}\n' for k, v in table.items())
    )
    sock = str(workdir / "b.sock")
    auth_before = len(secured.front.auth_lines())
    args = ["--config_path", str(config), "--receive_socket_name", sock, "--status_port", "0"]
    backoff = ["--kafka_property", "reconnect.backoff.ms=50", "--kafka_property", "reconnect.backoff.max.ms=2000"]
    bruce = bruce_process([*args, *backoff, "--log_level", "LOG_DEBUG"])
    url = bruce.wait_serving()
    with BruceClient(sock) as client:
        for i in range(5):
            client.send_any_partition("never-delivered", f"m{i}".encode())

    def page(path: str) -> str:
        status, _, body = http_get(url + path)
        assert status == 200, (path, status)
        return body

    expected = f"authentication failed: broker {secured.bootstrap}, SCRAM-SHA-256"
    wait_for(lambda: expected in page("/"), what="the front page to say authentication failed")
    wait_for(lambda: "5 total new" in page("/queues/plain"), what="the 5 messages held")
    pages = {path: page(path) for path in ("/", "/queues/plain", "/queues/json", "/metadata_fetch_time/plain")}
    pages["/counters/json"] = page("/counters/json")
    pages["/metrics"] = page("/metrics")
    pages["/discards/plain"] = page("/discards/plain")
    assert expected in pages["/queues/plain"] and expected in pages["/metadata_fetch_time/plain"]
    assert re.search(r"^bruce_broker_authentication_failed 1(\.0)?$", pages["/metrics"], re.M)
    attempts = len(secured.front.auth_lines()) - auth_before
    assert 1 <= attempts <= 15, attempts  # retried with backoff, never a tight loop
    # Bruce had no SASL: the refusal is counted on /metrics (Bruce's /counters keeps Bruce's names only)
    assert json.loads(pages["/counters/json"])["counters"], "Bruce's counters still served"
    metric = r"^bruce_connector_authentication_failed_total\{broker=\"[^\"]+\"\} [1-9]"
    assert re.search(metric, pages["/metrics"], re.M)
    assert bruce.process.poll() is None  # still serving: no crash
    assert bruce.log.count(expected) == 1  # logged once, not per retry
    for text in [*pages.values(), bruce.log, config.read_text()]:
        assert wrong not in text
