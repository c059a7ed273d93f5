"""Choosing the protocol for one broker from its ApiVersions answer: a pure function, :func:`choose_versions`.

Rules:
- Every API gets the highest version both sides support, ours being the versions the library's clients send
  (:data:`SPOKEN`, a subset of what the API registry decodes). APIs only one side knows are left out.
- The message format follows the *maximum* Produce version the broker advertises, never its minimum (KAFKA-18659:
  Kafka 4.x advertises Produce v0 but rejects v0-v2). Produce v3+ carries RecordBatch v2 (magic 2), v2 message sets
  of magic 1, v0-v1 magic 0. zstd needs Produce v7+.
- A broker that closed the connection on ApiVersions (``broker=None``) predates Kafka 0.10: it gets the 0.8 protocol
  (Produce v0, Metadata v0, Fetch v0, ListOffsets v0, magic 0). So does any broker when the setting forces ``v0``.
- Forcing ``modern`` on a broker without Produce v3 (or without ApiVersions), or a broker that shares no Produce or
  Metadata version with us, is :class:`IncompatibleBroker`.
- Idempotent produce (KIP-98) needs InitProducerId and the RecordBatch v2 format (:attr:`ProtocolChoice.idempotence`);
  InitProducerId v3+ (Kafka 2.5+, KIP-360) also means the broker takes a client-side epoch bump
  (:attr:`ProtocolChoice.epoch_bump`). The 0.8 protocol has neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from .errors import BruceError, UsageError

PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, CREATE_TOPICS = 0, 1, 2, 3, 18, 19
FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN = 10, 22, 24, 26
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36

V0_PROTOCOL = {PRODUCE: 0, FETCH: 0, LIST_OFFSETS: 0, METADATA: 0}
"""The Kafka 0.8 protocol Bruce speaks: every API at version 0."""


class Generation(StrEnum):
    """The protocol setting: negotiate (``auto``), or force one generation."""

    AUTO = "auto"
    V0 = "v0"
    MODERN = "modern"


class IncompatibleBroker(BruceError):
    """The broker and we share no usable protocol (or not the one the setting forces)."""

    reason = "INCOMPATIBLE_BROKER"


@dataclass(frozen=True, slots=True)
class ProtocolChoice:
    """The versions to speak to one broker: per API, plus the message format and whether zstd is allowed."""

    versions: tuple[tuple[int, int], ...]  # (api key, version), sorted by api key
    magic: int  # message format Produce writes: 0, 1 or 2
    zstd: bool  # the broker accepts zstd batches (Produce v7+)
    negotiated: bool  # False: the 0.8 protocol, chosen without ApiVersions

    def version(self, api_key: int) -> int:
        """The version to use for ``api_key``; :class:`IncompatibleBroker` if the broker and we share none."""
        for key, version in self.versions:
            if key == api_key:
                return version
        raise IncompatibleBroker(f"no common version of API {api_key} with this broker")

    def supports(self, api_key: int) -> bool:
        return any(key == api_key for key, _ in self.versions)

    @property
    def idempotence(self) -> bool:
        """The broker can take idempotent batches: it has InitProducerId and we write RecordBatch v2."""
        return self.magic == 2 and self.supports(INIT_PRODUCER_ID)

    @property
    def epoch_bump(self) -> bool:
        """The broker knows KIP-360 (InitProducerId v3+): an idempotent producer may bump its epoch itself."""
        return self.idempotence and self.version(INIT_PRODUCER_ID) >= 3


def magic_for_produce(version: int) -> int:
    """The message format a Produce request of ``version`` carries."""
    return 2 if version >= 3 else 1 if version == 2 else 0


SPOKEN: dict[int, range] = {
    PRODUCE: range(12),  # v12 adds partitions to transactions by itself (KIP-890 part 2), v13 names topics by id
    FETCH: range(13),  # v13+ name topics by id
    LIST_OFFSETS: range(10),  # v10 waits for tiered storage (a timeout the readers do not set)
    METADATA: range(13),  # v13's top-level error (REBOOTSTRAP_REQUIRED) is not handled
    API_VERSIONS: range(5),
    CREATE_TOPICS: range(8),
    SASL_HANDSHAKE: range(2),
    SASL_AUTHENTICATE: range(3),
    INIT_PRODUCER_ID: range(7),
    FIND_COORDINATOR: range(7),
    ADD_PARTITIONS_TO_TXN: range(4),  # v4+ are for brokers (KIP-890)
    END_TXN: range(4),  # v5 bumps the epoch at every transaction's end (KIP-890 part 2)
}
"""The versions this library's own clients (producer, readers) send, per API: the registry decodes more, and these
stop where a later version means something they do not do."""


def our_versions() -> dict[int, range]:
    """The versions this library's clients speak (:data:`SPOKEN`): what :func:`choose_versions` picks from."""
    return dict(SPOKEN)


def _v0_choice(ours: Mapping[int, range]) -> ProtocolChoice:
    versions = tuple(sorted((k, v) for k, v in V0_PROTOCOL.items() if k in ours and v in ours[k]))
    return ProtocolChoice(versions=versions, magic=0, zstd=False, negotiated=False)


def choose_versions(
    broker: Mapping[int, tuple[int, int]] | None,
    ours: Mapping[int, range] | None = None,
    *,
    generation: Generation | str = Generation.AUTO,
) -> ProtocolChoice:
    """Pick each API's version for a broker.

    ``broker`` is ``{api_key: (min_version, max_version)}`` from its ApiVersions answer, or ``None`` when it closed the
    connection on ApiVersions. ``ours`` defaults to :func:`our_versions`. An unknown ``generation`` is a
    :class:`UsageError`.
    """
    try:
        generation = Generation(generation)
    except ValueError:
        raise UsageError(f"unknown protocol generation {generation!r}: auto, v0 or modern") from None
    if ours is None:
        ours = our_versions()
    if generation is Generation.V0 or (broker is None and generation is Generation.AUTO):
        return _v0_choice(ours)
    if broker is None:
        raise IncompatibleBroker("the broker does not answer ApiVersions, so it cannot speak the modern protocol")
    chosen: dict[int, int] = {}
    for key, (broker_min, broker_max) in broker.items():
        mine = ours.get(key)
        if mine is None:
            continue
        high = min(broker_max, mine[-1])
        if high >= max(broker_min, mine[0]):
            chosen[key] = high
    for key, name in ((PRODUCE, "Produce"), (METADATA, "Metadata")):
        if key not in chosen:
            raise IncompatibleBroker(f"no common {name} version: broker {broker.get(key)}, ours {ours.get(key)}")
    produce = chosen[PRODUCE]
    if generation is Generation.MODERN and produce < 3:
        raise IncompatibleBroker(f"the modern protocol needs Produce v3+, the broker offers at most v{produce}")
    return ProtocolChoice(
        versions=tuple(sorted(chosen.items())),
        magic=magic_for_produce(produce),
        zstd=produce >= 7,
        negotiated=True,
    )
