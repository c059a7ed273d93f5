"""Shared fixtures. The real broker (tansu) is started once per session on a free loopback port; a missing broker is
an error, never a skip.

test.sh runs the suite in two processes (pytest-xdist, ``-n 2``); each gets its own session fixtures
(tansu, moto, Spark). Each group below runs whole on one process, so its module and session fixtures start once there
and its tests never overlap one another: by default a test file; every Spark test in one (a single Spark session and
standalone cluster); and the tests that use ./run.sh's fixed ports (127.0.0.1:9092 and :9090) in one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_cluster import DurableCluster, MotoS3

from bruce.proxy.daemon.embedded import EmbeddedBroker

_topic_numbers = itertools.count(1)

GROUPS = {
    "tests/spark/": "spark",
    # The docs examples run ./run.sh's daemon on 9092 and 9090; the README flow and the installed wheel's daemon take
    # 9092 when free (and assert what they find).
    "tests/e2e/docs/test_docs_examples.py": "usual-ports",
    "tests/e2e/daemon/test_daemon_command.py": "usual-ports",
    "tests/test_packaging.py": "usual-ports",
}
LONG_FIRST = ["spark", "usual-ports", "tests/e2e/test_chaos.py", "tests/e2e/daemon/test_daemon_spool_outage.py"]
"""The longest groups (minutes each), handed out first so that neither process is left running one alone at the end
(test.sh turns xdist's own reordering off)."""


def _group(nodeid: str) -> str:
    path = nodeid.split("::")[0]
    return next((group for prefix, group in GROUPS.items() if path.startswith(prefix)), path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {group: i for i, group in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(_group(item.nodeid), len(rank)))  # stable: files keep their order


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling with :data:`GROUPS` as the scopes (its own ``xdist_group`` marks have no effect on
    pytest 9.2's test ids)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return GroupScheduling(config, log)


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
