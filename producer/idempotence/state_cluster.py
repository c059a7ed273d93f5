"""Which cluster a state path belongs to (``PATH/cluster``, docs/producer.md "Exactly once across restarts"): the
batches a journal names can only be settled against the cluster they were sent to.

Rules:
- Text, four lines, so a person can read it: ``bruce producer state 1``, ``cluster_id: ID`` (the Metadata answer's
  cluster id; empty when the brokers do not give one — Metadata before v2), ``bootstrap_servers: host:port,...``
  (the producer's, a hint for people: the cluster id decides), ``crc32c: XXXXXXXX`` (8 hex digits, of the bytes of
  the three lines before it). Written to ``cluster.tmp``, synced, renamed over ``cluster``, the directory synced.
- :func:`load_cluster` is None when there is no file (a new path, or one an earlier bruce wrote), :class:`Damaged`
  when one is there and is not valid (a flipped bit, a cut: the start says so and treats the cluster as not known).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bruce.wire import crc32c

__all__ = ["CLUSTER_NAME", "Damaged", "StateCluster", "load_cluster", "save_cluster"]

CLUSTER_NAME = "cluster"
_FIRST = "bruce producer state 1"


@dataclass(frozen=True, slots=True)
class StateCluster:
    cluster_id: str | None  # None: the brokers gave none
    bootstrap_servers: str

    def describe(self) -> str:
        known = self.cluster_id if self.cluster_id is not None else "(no cluster id)"
        return f"cluster {known} (bootstrap servers {self.bootstrap_servers})"


@dataclass(frozen=True, slots=True)
class Damaged:
    why: str


def _body(cluster: StateCluster) -> str:
    return f"{_FIRST}\ncluster_id: {cluster.cluster_id or ''}\nbootstrap_servers: {cluster.bootstrap_servers}\n"


def load_cluster(directory: Path) -> StateCluster | Damaged | None:
    """What ``directory/cluster`` says (see the module rules)."""
    try:
        data = (directory / CLUSTER_NAME).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        return Damaged(f"cannot be read ({e})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Damaged("not text")
    lines = text.split("\n")
    if len(lines) != 5 or lines[0] != _FIRST or lines[4] or not lines[3].startswith("crc32c: "):
        return Damaged("not in the expected form")
    body = "\n".join(lines[:3]) + "\n"
    if lines[3] != f"crc32c: {crc32c(body.encode()):08x}":
        return Damaged("its CRC does not match")
    if not lines[1].startswith("cluster_id: ") or not lines[2].startswith("bootstrap_servers: "):
        return Damaged("not in the expected form")
    cluster_id = lines[1][len("cluster_id: ") :]
    return StateCluster(cluster_id or None, lines[2][len("bootstrap_servers: ") :])


def save_cluster(directory: Path, cluster: StateCluster) -> None:
    """Write ``directory/cluster`` durably (see the module rules); raises OSError."""
    body = _body(cluster)
    data = f"{body}crc32c: {crc32c(body.encode()):08x}\n".encode()
    temporary = directory / (CLUSTER_NAME + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, directory / CLUSTER_NAME)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
