"""Delivery through the local bruce daemon: one task's rows written as datagrams to the daemon's UNIX socket.

Rules:
- One datagram per row, through the client library (``bruce.proxy.client.BruceClient``): a row with a
  ``partition_key`` is a PartitionKey datagram; a row with a key (and no ``partition_key``) is a PartitionKey
  datagram on the key's CRC-32, so keyed rows land where a direct write would put them; any other row is an
  AnyPartition datagram. The record key travels as the datagram's key (a null key arrives as an empty one: datagrams
  cannot tell them apart); a null value cannot travel at all.
- "Delivered" here means handed to the daemon: from then on the daemon delivers or discards and counts each message
  (its status pages and discard log). The daemon never blocks its clients, so this is as far as a task can know.
- The kernel queues only a few datagrams per socket (``net.unix.max_dgram_qlen``, 10 by default on Linux), so a
  full queue is normal: it is waited out with a growing sleep (50 µs to 50 ms), for at most ``delivery.timeout.ms``
  per row. No daemon at the socket path, a datagram too large, or the timeout: the row is counted as discarded with the
  client's reason and the task stops taking input (it fails; Spark retries it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import repeat

import pyarrow as pa

from bruce.producer.partitioner import key_to_partition_key
from bruce.proxy.client import BruceClient, SocketFullError
from bruce.wire.errors import BruceError

from .delivery import WriteSummary
from .options import WriteOptions
from .schema import BadRow, arrow_rows

_FIRST_PAUSE, _LONGEST_PAUSE = 0.00005, 0.05


def send_to_daemon(batches: Iterator[pa.RecordBatch], options: WriteOptions) -> WriteSummary:
    """Write every row of ``batches`` to the daemon's socket; the summary counts what was handed over."""
    assert options.socket is not None
    client = BruceClient(options.socket, blocking=False, max_datagram_size=options.max_datagram_size)
    timeout = options.delivery_timeout_ms / 1000
    rows = sent = 0
    failure: BruceError | None = None
    try:
        for batch in batches:
            r = arrow_rows(batch)
            rows += r.count
            columns = zip(
                r.value,
                r.key or repeat(None),
                r.topic or repeat(None),
                r.partition_key or repeat(None),
                r.timestamp or repeat(None),
                strict=False,
            )
            for value, key, topic, partition_key, ts in columns:
                topic = topic or options.topic
                if topic is None:
                    raise BadRow("a row has a null topic and the write has no 'topic' option")
                if value is None:
                    raise BadRow("a null value cannot go through the bruce daemon (datagrams always carry a value)")
                if partition_key is None and key is not None:
                    partition_key = key_to_partition_key(key)
                try:
                    _send(client, timeout, topic, value, key, partition_key, ts)
                except BruceError as e:
                    failure = e
                    break
                sent += 1
            if failure is not None:
                break
    finally:
        client.close()
    if failure is None:
        return WriteSummary("daemon", rows=rows, delivered=sent)
    discarded = {failure.reason: 1}
    if rows - sent - 1:
        discarded["NOT_SENT"] = rows - sent - 1
    return WriteSummary("daemon", rows=rows, delivered=sent, discarded=discarded, first_error=str(failure))


def _send(
    client: BruceClient,
    timeout: float,
    topic: str,
    value: bytes,
    key: bytes | None,
    partition_key: int | None,
    timestamp: int | None,
) -> None:
    pause, deadline = _FIRST_PAUSE, None
    while True:
        try:
            if partition_key is None:
                client.send_any_partition(topic, value, key or b"", timestamp)
            else:
                client.send_partition_key(topic, partition_key, value, key or b"", timestamp)
            return
        except SocketFullError:
            now = time.monotonic()
            if deadline is None:
                deadline = now + timeout
            elif now >= deadline:
                path = client.socket_path.decode(errors="replace")
                raise SocketFullError(
                    f"the daemon's socket {path} stayed full for {timeout:.1f} s (delivery.timeout.ms)"
                ) from None
            time.sleep(min(pause, max(0.0, deadline - now)))
            pause = min(pause * 2, _LONGEST_PAUSE)
