"""Where accepted messages wait and how they leave: the partition queues, the produce request cut from them, and the
ledger where every message's fate is given.

Modules: ``partition_queue`` (:class:`PartitionQueue`: open, ready and in-flight messages of one partition),
``request`` (assembling and encoding one produce request, the compression policy), ``ledger`` (:class:`Ledger`:
the counts, and the one place a fate is given).
Rule: imports the top-level vocabulary only (see docs/architecture.md#the-floors-of-bruceproducer).
"""

from __future__ import annotations

from .ledger import Ledger
from .partition_queue import Pack, PartitionQueue
from .request import (
    ALONE_OVERHEAD,
    LEGACY_MESSAGE_OVERHEAD,
    NO_COMPRESSION,
    RECORD_OVERHEAD,
    Compression,
    CompressionPolicy,
    Part,
    assemble,
    build_request,
    encode_part,
)

__all__ = [
    "ALONE_OVERHEAD",
    "LEGACY_MESSAGE_OVERHEAD",
    "NO_COMPRESSION",
    "RECORD_OVERHEAD",
    "Compression",
    "CompressionPolicy",
    "Ledger",
    "Pack",
    "Part",
    "PartitionQueue",
    "assemble",
    "build_request",
    "encode_part",
]
