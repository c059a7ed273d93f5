"""Delivery through the local bruce daemon: one task's rows written as datagrams to the daemon's UNIX socket.

Rules:
- One datagram per row, through the client library (``bruce.client.client.BruceClient``), routed as a direct write
  routes it (:func:`bruce.spark.schema.row_sends`): a row with a ``partition_key``, or with a key (through
  ``kafka.partitioner``), is a PartitionKey datagram, so keyed rows land where a direct write would put them; any
  other row is an AnyPartition datagram. The record key travels as the datagram's key (a null key arrives as an
  empty one: datagrams cannot tell them apart); a null value cannot travel at all.
- "Delivered" here means handed to the daemon: from then on the daemon delivers or discards and counts each message
  (its status pages and discard log). The daemon never blocks its clients, so this is as far as a task can know.
- The kernel queues only a few datagrams per socket (``net.unix.max_dgram_qlen``, 10 by default on Linux), so a
  full queue is normal: each send waits for room (the client's bounded send, woken as soon as there is room) for at
  most ``delivery.timeout.ms`` per row. No daemon at the socket path, a datagram too large, or the timeout: the row
  is counted as discarded with the client's reason and the task stops taking input (it fails; Spark retries it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from bruce.client import BruceClient, SocketFullError
from bruce.wire import BruceError

from .delivery import WriteSummary
from .options import WriteOptions
from .schema import BadRow, arrow_rows, row_sends


def send_to_daemon(batches: Iterator[pa.RecordBatch], options: WriteOptions) -> WriteSummary:
    """Write every row of ``batches`` to the daemon's socket; the summary counts what was handed over."""
    assert options.socket is not None
    timeout = options.delivery_timeout_ms / 1000
    client = BruceClient(options.socket, timeout=timeout, max_datagram_size=options.max_datagram_size)
    rows = sent = 0
    failure: BruceError | None = None
    try:
        for batch in batches:
            r = arrow_rows(batch)
            rows += r.count
            for topic, value, key, _, timestamp, _, partition_key in row_sends(r, options.topic, options.partitioner):
                if value is None:
                    raise BadRow("a null value cannot go through the bruce daemon (datagrams always carry a value)")
                try:
                    _send(client, timeout, topic, value, key, partition_key, timestamp)
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
    timestamp: int,
) -> None:
    try:
        if partition_key is None:
            client.send_any_partition(topic, value, key or b"", timestamp)
        else:
            client.send_partition_key(topic, partition_key, value, key or b"", timestamp)
    except SocketFullError:
        path = client.socket_path.decode(errors="replace")
        raise SocketFullError(
            f"the daemon's socket {path} stayed full for {timeout:.1f} s (delivery.timeout.ms)"
        ) from None
