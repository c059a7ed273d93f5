"""Routing: from a message to a batch handed to the producer — Bruce's routing checks, rate limits, batching and
per-topic compression, and the compact storage of held messages. Sans-I/O: times are passed in.

Modules: ``message`` (the daemon's in-memory message), ``router`` (checks in Bruce's order, then the batcher),
``ratelimit`` (per-topic rate limits), ``batcher`` (batches by time, count and size), ``compression_policy`` (the
producer's compression hook), ``packed`` (a ready batch as one bytes arena).
Rule: imports no part of :mod:`bruce.proxy.daemon`.
"""

from __future__ import annotations

from .batcher import Batcher
from .compression_policy import TopicCompression
from .packed import PackedBatch, Packer
from .ratelimit import RateLimiter
from .router import Router, message_overhead

__all__ = [
    "Batcher",
    "PackedBatch",
    "Packer",
    "RateLimiter",
    "Router",
    "TopicCompression",
    "message_overhead",
]
