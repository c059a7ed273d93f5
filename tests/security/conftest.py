"""Secured peers for the whole session, started on first use: tansu behind stunnel (SSL, mTLS), behind the SASL front
(SASL_PLAINTEXT) and behind both (SASL_SSL); see peers.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from e2e.daemon.harness import bruce_process, workdir

from .peers import Certificates, Secured, make_certificates, start_secured

__all__ = ["bruce_process", "peers", "workdir"]  # the daemon tests' fixtures, shared


class Peers:
    def __init__(self, stack: ExitStack, workdir: Path) -> None:
        self.stack = stack
        self.workdir = workdir
        self.certs: Certificates = make_certificates(workdir / "certs")
        self._started: dict[tuple[str, int], Secured] = {}

    def get(self, name: str, *, lifetime_ms: int = 0) -> Secured:
        key = (name, lifetime_ms)
        if key not in self._started:
            self._started[key] = start_secured(self.stack, self.workdir, self.certs, name, lifetime_ms=lifetime_ms)
        return self._started[key]


@pytest.fixture(scope="session")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peers]:
    with ExitStack() as stack:
        yield Peers(stack, Path(tmp_path_factory.mktemp("secured")))
