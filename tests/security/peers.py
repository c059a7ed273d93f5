"""The secured test peers: certificates made here, stunnel (Debian's TLS proxy) in front of tansu, and the SASL front
(tests/fakebroker/sasl_front.py, scramp's server) in front of tansu — because tansu 0.6 serves neither TLS nor SASL.

Rules:
- :func:`make_certificates` writes a CA, a server certificate for 127.0.0.1/localhost, one for another host name, an
  expired one, one from a CA nobody trusts, and a client certificate (its key encrypted) for mTLS.
- :class:`Secured` is one way of reaching a tansu broker: its bootstrap address, the client properties (librdkafka
  names, used as given by confluent-kafka and by bruce) and the plain address for reading back independently.
- Every process is ours, started with a free loopback port and stopped by its PID.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import shutil
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from readback import read_back

from bruce.proxy.config.ports import free_port
from bruce.proxy.daemon.embedded import EmbeddedBroker

USERS = {"alice": "alice-secret-pw", "bob": "b0b:pa,ss=word"}  # bob's password needs SCRAM's escaping rules
KEY_PASSWORD = "client-key-pw"
FRONT = Path(__file__).resolve().parents[1] / "fakebroker" / "sasl_front.py"


@dataclass(frozen=True)
class Certificates:
    """The PEM files: ``certs.ca``, ``certs.server`` / ``certs.server_key``, ``wronghost``, ``expired``,
    ``untrusted``, ``client`` (each with its ``_key``)."""

    dir: Path

    def __getattr__(self, name: str) -> str:
        return str(self.dir / f"{name.replace('_', '-')}.pem")


def make_certificates(directory: Path) -> Certificates:
    now = datetime.datetime.now(datetime.UTC)
    day = datetime.timedelta(days=1)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        k = key()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(name(cn))
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - day)
            .not_valid_after(now + 30 * day)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(k.public_key()), critical=False)
            .sign(k, hashes.SHA256())
        )
        return k, cert

    def issue(issuer, cn: str, hosts: list[str], *, expired: bool = False, client: bool = False):
        ca_key, ca_cert = issuer
        k = key()
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn))
            .issuer_name(ca_cert.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - (10 if expired else 1) * day)
            .not_valid_after(now - 2 * day if expired else now + 30 * day)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]),
                critical=False,
            )
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return k, builder.sign(ca_key, hashes.SHA256())

    def write(stem: str, k, cert, password: str | None = None) -> None:
        (directory / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        if k is not None:
            encryption = (
                serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
            )
            pem = k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
            (directory / f"{stem}-key.pem").write_bytes(pem)

    directory.mkdir(parents=True, exist_ok=True)
    good_ca = ca("bruce test CA")
    other_ca = ca("a CA nobody trusts")
    write("ca", None, good_ca[1])
    write("server", *issue(good_ca, "broker", ["127.0.0.1", "localhost"]))
    write("wronghost", *issue(good_ca, "elsewhere", ["broker.elsewhere.example"]))
    write("expired", *issue(good_ca, "broker", ["127.0.0.1", "localhost"], expired=True))
    write("untrusted", *issue(other_ca, "broker", ["127.0.0.1", "localhost"]))
    write("client", *issue(good_ca, "bruce-client", [], client=True), password=KEY_PASSWORD)
    return Certificates(directory)


def wait_for_port(port: int, process: subprocess.Popen, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def stunnel_binary() -> str:
    found = shutil.which("stunnel4") or shutil.which("stunnel")
    if not found:
        raise RuntimeError("stunnel4 is not installed (scripts/bootstrap.sh installs it)")
    return found


def start_stunnel(
    stack: ExitStack, workdir: Path, accept: int, target: int, cert: str, key: str, *, client_ca: str | None = None
) -> None:
    """A TLS-terminating stunnel on ``accept`` relaying to ``target``; with ``client_ca`` it requires a client
    certificate issued by that CA (mTLS)."""
    conf = workdir / f"stunnel-{accept}.conf"
    lines = [
        "foreground = yes",
        "pid =",
        f"output = {workdir / f'stunnel-{accept}.log'}",
        "debug = 4",
        "[kafka]",
        f"accept = 127.0.0.1:{accept}",
        f"connect = 127.0.0.1:{target}",
        f"cert = {cert}",
        f"key = {key}",
    ]
    if client_ca:
        lines += [f"CAfile = {client_ca}", "verifyChain = yes", "requireCert = yes"]
    conf.write_text("\n".join(lines) + "\n")
    process = subprocess.Popen(
        [stunnel_binary(), str(conf)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    stack.callback(stop, process)
    wait_for_port(accept, process, "stunnel")


@dataclass
class SaslFront:
    """The SASL front process; :meth:`auth_lines` are its ``auth ...`` lines so far."""

    process: subprocess.Popen
    log: Path

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def auth_lines(self) -> list[str]:
        return [line for line in self.lines() if line.startswith("auth ")]


def start_front(stack: ExitStack, workdir: Path, listen: int, target: int, lifetime_ms: int = 0) -> SaslFront:
    users = workdir / f"users-{listen}.json"
    users.write_text(json.dumps(USERS))
    log = workdir / f"front-{listen}.log"
    argv = [sys.executable, str(FRONT), "--listen", str(listen), "--target", str(target), "--users", str(users)]
    if lifetime_ms:
        argv += ["--lifetime-ms", str(lifetime_ms)]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    stack.callback(stop, process)
    wait_for_port(listen, process, "the SASL front")
    return SaslFront(process, log)


@dataclass
class Secured:
    """One secured way to a tansu broker."""

    name: str  # SSL, mTLS, SASL_PLAINTEXT, SASL_SSL
    broker: EmbeddedBroker
    bootstrap: str
    properties: dict[str, Any]  # librdkafka names: security.protocol, ssl.*, sasl.* (no mechanism, user, password)
    front: SaslFront | None = None

    @property
    def plain(self) -> str:
        """tansu's own plaintext address: for creating topics and reading back with an independent client."""
        return self.broker.address

    def client(self, mechanism: str | None = None, user: str = "alice", password: str | None = None) -> dict[str, Any]:
        """The client properties, with SASL credentials when this way uses SASL."""
        props = dict(self.properties)
        if self.name.startswith("SASL"):
            props["sasl.mechanism"] = mechanism or "SCRAM-SHA-512"
            props["sasl.username"] = user
            props["sasl.password"] = USERS.get(user, "x") if password is None else password
        return props


def start_secured(stack: ExitStack, workdir: Path, certs: Certificates, name: str, *, lifetime_ms: int = 0) -> Secured:
    """tansu plus the fronts ``name`` needs: SSL (stunnel), mTLS (stunnel requiring a client certificate),
    SASL_PLAINTEXT (the SASL front), SASL_SSL (stunnel, then the SASL front)."""
    outer = free_port()
    broker = stack.enter_context(EmbeddedBroker(advertised_port=outer, log_path=workdir / f"tansu-{outer}.log"))
    tls = {"ssl.ca.location": certs.ca}
    if name == "SSL":
        start_stunnel(stack, workdir, outer, broker.port, certs.server, certs.server_key)
        return Secured(name, broker, f"127.0.0.1:{outer}", {"security.protocol": "SSL", **tls})
    if name == "mTLS":
        start_stunnel(stack, workdir, outer, broker.port, certs.server, certs.server_key, client_ca=certs.ca)
        mtls = {
            "ssl.certificate.location": certs.client,
            "ssl.key.location": certs.client_key,
            "ssl.key.password": KEY_PASSWORD,
        }
        return Secured(name, broker, f"127.0.0.1:{outer}", {"security.protocol": "SSL", **tls, **mtls})
    if name == "SASL_PLAINTEXT":
        front = start_front(stack, workdir, outer, broker.port, lifetime_ms)
        return Secured(name, broker, f"127.0.0.1:{outer}", {"security.protocol": "SASL_PLAINTEXT"}, front)
    if name == "SASL_SSL":
        inner = free_port()
        front = start_front(stack, workdir, inner, broker.port, lifetime_ms)
        start_stunnel(stack, workdir, outer, inner, certs.server, certs.server_key)
        return Secured(name, broker, f"127.0.0.1:{outer}", {"security.protocol": "SASL_SSL", **tls}, front)
    raise ValueError(name)


def bad_tls_front(stack: ExitStack, workdir: Path, certs: Certificates, target: int, which: str) -> str:
    """A stunnel presenting the ``which`` certificate (wronghost, expired, untrusted) in front of ``target``."""
    port = free_port()
    start_stunnel(stack, workdir, port, target, getattr(certs, which), getattr(certs, f"{which}_key"))
    return f"127.0.0.1:{port}"


def confluent_produce(secured: Secured, topic: str, values: list[bytes], props: dict[str, Any]) -> tuple[list, list]:
    """confluent-kafka produces ``values`` through ``secured``: (per-message errors, client errors)."""
    from confluent_kafka import Producer

    errors: list[str] = []
    results: list = []
    settings = {"bootstrap.servers": secured.bootstrap, "message.timeout.ms": 8000, "log_level": 0}
    producer = Producer({**settings, "error_cb": lambda e: errors.append(str(e)), **props})
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: results.append(err))
    producer.flush(15)
    return results, errors


def confluent_read(secured: Secured, topic: str, expected: int, partitions: int = 1) -> list[bytes]:
    """Read every partition of ``topic`` from offset 0 with confluent-kafka (CRC checks on) through the TLS (and SASL)
    front, as alice with SCRAM-SHA-256 (independent of the client under test)."""
    props = {**secured.client("SCRAM-SHA-256"), "log_level": 0}
    messages = read_back(secured.bootstrap, topic, partitions, expected, timeout=20, props=props)
    return [m.value() for m in messages]
