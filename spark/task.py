"""One write task: its rows delivered through the mode the options chose (the one place that knows every mode).

Rules:
- ``direct`` (``bruce.producer``, to the brokers; delivered = acknowledged; with ``exactlyOnce`` each share in one
  transaction, :mod:`bruce.spark.exactly_once`) or ``daemon`` (datagrams to the local bruce daemon; delivered =
  handed to the daemon, which then accounts for them itself).
- A summary with any discard becomes :class:`~bruce.spark.delivery.DeliveryFailed` in the task: Spark then retries
  the task or fails the job with the reasons.
- The modes depend on :mod:`bruce.spark.delivery` (the summary), never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from bruce.producer import run

from .daemon import send_to_daemon
from .delivery import DeliveryFailed, WriteSummary
from .direct import produce_batches
from .exactly_once import TaskTransaction, current_share
from .options import WriteOptions


def deliver(batches: Iterator[pa.RecordBatch], options: WriteOptions) -> WriteSummary:
    """Deliver one task's rows; raises :class:`DeliveryFailed` unless every row was delivered (or, exactlyOnce,
    skipped as already committed)."""
    if options.marker_topic is not None:
        summary = run(produce_batches(batches, options, TaskTransaction(options, current_share())))
    elif options.socket:
        summary = send_to_daemon(batches, options)
    else:
        summary = run(produce_batches(batches, options))
    if not summary.complete:
        raise DeliveryFailed(summary)
    return summary
