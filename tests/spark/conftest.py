"""Spark test fixtures: one local Spark session for the whole run (``bruce.spark.local_session``: ``local[2]``, bound
to loopback, ``format("bruce")`` registered), and one standalone cluster (``spark_cluster``) that jobs are submitted
to. A missing pyspark or Java is an error, never a skip."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import bruce.spark
from bruce.spark.standalone import StandaloneCluster


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = bruce.spark.local_session("bruce-spark-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark standalone cluster on loopback for the whole run: a master and two workers (1 core, 512 MiB for
    executors each), separate JVMs from pyspark's own ``spark-class``; every JVM stopped by PID at the end."""
    root = Path(tmp_path_factory.mktemp("spark-cluster"))
    with StandaloneCluster(root, workers=2, cores=1, memory="512m") as cluster:
        yield cluster
