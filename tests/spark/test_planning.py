"""Planning reads: ranges per partition, split by maxRecordsPerPartition, and the per-trigger cap of a stream."""

from __future__ import annotations

import pickle

import pytest

from bruce.spark.kafka_reader import KafkaReadError
from bruce.spark.reader import OffsetRange, plan
from bruce.spark.stream_reader import cap


def test_one_task_per_partition_and_empty_ranges_skipped() -> None:
    tasks = plan({"a": {0: 5, 1: 9}, "b": {0: 0}}, {"a": {0: 8, 1: 9}, "b": {0: 2}}, 100)
    assert tasks == [OffsetRange("a", 0, 5, 8), OffsetRange("b", 0, 0, 2)]
    assert pickle.loads(pickle.dumps(tasks[0])) == tasks[0]


def test_long_ranges_are_split_evenly() -> None:
    tasks = plan({"t": {0: 0}}, {"t": {0: 10}}, 4)
    assert [(t.start, t.end) for t in tasks] == [(0, 3), (3, 6), (6, 10)]
    tasks = plan({"t": {0: 100}}, {"t": {0: 200}}, 50)
    assert [(t.start, t.end) for t in tasks] == [(100, 150), (150, 200)]


def test_start_after_end_is_an_error() -> None:
    with pytest.raises(KafkaReadError, match="t/0: the starting offset 9 is after the ending offset 4"):
        plan({"t": {0: 9}}, {"t": {0: 4}}, 10)


def test_cap_shares_the_limit_by_backlog() -> None:
    begin = {"t": {0: 0, 1: 100, 2: 50}}
    end = {"t": {0: 300, 1: 200, 2: 50}}
    assert cap(begin, end, 1000) == end  # under the limit: unchanged
    assert cap(begin, end, 40) == {"t": {0: 30, 1: 110, 2: 50}}  # 3:1 backlog → 30 + 10
    assert cap(begin, end, 1) == {"t": {0: 1, 1: 101, 2: 50}}  # every backlog moves by at least one
