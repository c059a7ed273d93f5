"""Shared fixtures. The real broker (tansu) is started once per session on a free loopback port; a missing broker is
an error, never a skip."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from durable_cluster import DurableCluster, MotoS3

from bruce.proxy.daemon.embedded import EmbeddedBroker

_topic_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """A running tansu broker for the whole session (its log is in the session's temporary directory)."""
    log = Path(tmp_path_factory.mktemp("tansu")) / "tansu.log"
    with EmbeddedBroker(log_path=log) as broker:
        yield broker


@pytest.fixture
def new_topic(tansu: EmbeddedBroker, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Create a fresh, uniquely named topic on the session broker: ``new_topic(partitions=4) -> name``."""

    def create(partitions: int = 1, prefix: str | None = None) -> str:
        base = prefix or request.node.name.replace("[", "-").replace("]", "").replace("/", "-")[:60]
        name = f"{base}-{next(_topic_numbers)}"
        tansu.create_topic(name, partitions)
        return name

    return create


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    """An S3 endpoint (moto's server) for the whole session; each durable cluster takes a bucket of its own."""
    with MotoS3(Path(tmp_path_factory.mktemp("moto")) / "moto.log") as s3:
        yield s3


@pytest.fixture
def durable_cluster(moto_s3: MotoS3, tmp_path: Path) -> Iterator[Callable[..., DurableCluster]]:
    """``durable_cluster(brokers=1) -> DurableCluster``: tansu brokers on a fresh bucket, so a broker killed and
    restarted keeps its log (tests/durable_cluster.py); stopped after the test."""
    made: list[DurableCluster] = []

    def make(brokers: int = 1) -> DurableCluster:
        cluster = DurableCluster(moto_s3, f"cluster-{next(_topic_numbers)}", tmp_path, brokers)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.close()
