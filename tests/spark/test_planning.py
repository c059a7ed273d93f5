"""Planning reads: ranges per partition, split by maxRecordsPerPartition, and the per-trigger cap of a stream."""

from __future__ import annotations

import pickle

import pytest

from bruce.spark import reader
from bruce.spark.columns import to_arrow
from bruce.spark.kafka_reader import KafkaReadError
from bruce.spark.options import read_options
from bruce.spark.reader import OffsetRange, check_starts, plan
from bruce.spark.stream_reader import BruceStreamReader, cap
from bruce.wire import decode_columns
from bruce.wire.recordbatch import build_record_batch


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


def test_min_partitions_splits_in_proportion_to_size() -> None:
    starts, ends = {"t": {0: 0, 1: 0, 2: 0}}, {"t": {0: 600, 1: 300, 2: 2}}
    assert len(plan(starts, ends, 10_000, min_partitions=2)) == 3  # already enough: unchanged
    tasks = plan(starts, ends, 10_000, min_partitions=9)
    pieces = {p: [(t.start, t.end) for t in tasks if t.partition == p] for p in (0, 1, 2)}
    assert pieces[0] == [(0, 100), (100, 200), (200, 300), (300, 400), (400, 500), (500, 600)]  # round(600/902*9)
    assert pieces[1] == [(0, 100), (100, 200), (200, 300)] and pieces[2] == [(0, 2)]  # at least one each
    assert len(plan({"t": {0: 0}}, {"t": {0: 3}}, 10, min_partitions=8)) == 3  # never an empty task


class _Earliest:
    """A stand-in for KafkaReader's earliest_offsets: the log starts at 5 (records 0-4 deleted)."""

    def earliest_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return dict.fromkeys(partitions, 5)


def test_a_start_before_the_log_start_is_data_loss(caplog) -> None:
    with pytest.raises(KafkaReadError, match=r"t/0: offset 2 is before the log start 5.*failOnDataLoss=false"):
        check_starts(_Earliest(), {"t": {0: 2, 1: 7}}, fail=True)
    assert check_starts(_Earliest(), {"t": {0: 2, 1: 7}}, fail=False) == {"t": {0: 5, 1: 7}}  # read on from 5
    assert "t/0: offset 2 is before the log start 5; some data may have been lost" in caplog.text  # a warning


def test_stream_data_loss_checks() -> None:
    reader = BruceStreamReader(read_options({"bootstrap.servers": "127.0.0.1:1", "topic": "t"}, streaming=True))
    with pytest.raises(KafkaReadError, match="t/1 is gone"):
        reader.partitions({"t": {"0": 1, "1": 4}}, {"t": {"0": 1}})


class _Retention:
    """A stand-in KafkaReader for one task: records 0-9 exist until offset 4 has been read, then retention deletes
    0-6 (the next Fetch is OFFSET_OUT_OF_RANGE and the log starts at 7)."""

    def __init__(self, client) -> None:
        self.deleted = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def read_arrow(self, topic: str, partition: int, start: int, end: int, *, include_headers: bool):
        for offset in range(start, end):
            if self.deleted and offset < 7:
                raise KafkaReadError(f"offset {offset} out of range", reason="OFFSET_OUT_OF_RANGE")
            columns = decode_columns(build_record_batch([(None, b"%d" % offset, 1, None)], base_offset=offset))
            yield to_arrow(topic, partition, columns, start=start, end=end, include_headers=include_headers)
            self.deleted = self.deleted or offset == 4

    def earliest_offsets(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return dict.fromkeys(partitions, 7 if self.deleted else 0)


def test_records_deleted_under_a_task_are_data_loss(monkeypatch, caplog) -> None:
    monkeypatch.setattr(reader, "KafkaReader", _Retention)
    task = OffsetRange("t", 0, 0, 10)
    strict = read_options({"bootstrap.servers": "h:1", "topic": "t"}, streaming=False)
    with pytest.raises(KafkaReadError, match="offset 5 out of range"):
        list(reader.read_range(strict, task))
    lenient = read_options({"bootstrap.servers": "h:1", "topic": "t", "failOnDataLoss": "false"}, streaming=False)
    values = [v.as_py() for batch in reader.read_range(lenient, task) for v in batch.column("value")]
    assert values == [b"%d" % i for i in (0, 1, 2, 3, 4, 7, 8, 9)]  # 5 and 6 were deleted: skipped, with a warning
    assert "t/0: offsets 5 to 6 were deleted" in caplog.text
