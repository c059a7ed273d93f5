"""Spark test fixtures: one local Spark session for the whole run (``local[2]``, bound to loopback), with
``format("bruce")`` registered. A missing pyspark or Java is an error, never a skip."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import bruce.spark


def local_session(app: str = "bruce-spark-tests") -> SparkSession:
    """A local[2] session bound to 127.0.0.1 whose Python workers run this interpreter."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    bruce.spark.register(session)
    return session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session()
    try:
        yield session
    finally:
        session.stop()
