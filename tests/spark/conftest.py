"""Spark test fixtures: one local Spark session for the whole run (``bruce.spark.local_session``: ``local[2]``, bound
to loopback, ``format("bruce")`` registered). A missing pyspark or Java is an error, never a skip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import bruce.spark


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = bruce.spark.local_session("bruce-spark-tests")
    try:
        yield session
    finally:
        session.stop()
