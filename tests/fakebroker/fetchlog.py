"""Fetch answers of the fake cluster, for readers' tests: a partition's log given as raw entries (record batches the
test built, transaction markers included), a last stable offset and an aborted-transactions list.

Rules:
- ``cluster.fetch_logs[(topic, partition)] = FetchLog(entries, last_stable, aborted)`` makes the partition's leader
  answer Fetch from it (with ``cluster.fetch_produced``, the batches produced are added; a partition with none is an
  empty log); any other partition is UNKNOWN_TOPIC_OR_PARTITION (3), a partition another broker leads
  NOT_LEADER_OR_FOLLOWER (6).
- An answer holds the entries whose last offset is at or after the fetch offset: the first one whatever its size,
  then more while they fit in the partition's max bytes. Under read_committed (isolation level 1) only entries below
  the last stable offset are sent, with ``aborted`` as the list (None: null); read_uncommitted answers carry no list.
- Every answer reports the high watermark (after the last entry) and the last stable offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bruce.wire.protocol.fetch import (
    READ_COMMITTED,
    AbortedTransaction,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)

if TYPE_CHECKING:
    from .cluster import FakeCluster


@dataclass(frozen=True, slots=True)
class FetchLog:
    entries: tuple[tuple[int, int, bytes], ...]  # (base offset, last offset, the entry's bytes), in order
    last_stable: int
    aborted: tuple[AbortedTransaction, ...] | None = None

    @property
    def high_watermark(self) -> int:
        return self.entries[-1][1] + 1 if self.entries else 0


def fetch_answer(cluster: FakeCluster, node_id: int, request: FetchRequest) -> FetchResponse:
    committed = request.isolation_level == READ_COMMITTED
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            log = cluster.fetch_logs.get((t.topic, p.partition))
            if log is None and cluster.fetch_produced:
                log = FetchLog((), 0)  # nothing produced there yet
            leader = cluster.topics.get(t.topic, {}).get(p.partition)
            if log is None or leader is None:
                parts.append(FetchPartitionResponse(p.partition, 3, -1))
                continue
            if leader != node_id:
                parts.append(FetchPartitionResponse(p.partition, 6, -1))
                continue
            chosen: list[bytes] = []
            size = 0
            for _, last, entry in log.entries:
                if last < p.fetch_offset or (committed and last >= log.last_stable):
                    continue
                if chosen and size + len(entry) > p.partition_max_bytes:
                    break
                chosen.append(entry)
                size += len(entry)
            parts.append(
                FetchPartitionResponse(
                    p.partition,
                    0,
                    log.high_watermark,
                    last_stable_offset=log.last_stable,
                    log_start_offset=0,
                    aborted_transactions=log.aborted if committed else None,
                    records=b"".join(chosen) or None,
                )
            )
        topics.append(FetchTopicResponse(t.topic, tuple(parts)))
    return FetchResponse(responses=tuple(topics))
