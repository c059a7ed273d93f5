"""The daemon's configuration file content as frozen, validated values (docs/bruce-compatibility.md#config-file,
#batching, #compression, #rate-limiting).

Rules:
- One :class:`Config` holds everything Bruce's XML config file says: batching, compression, per-topic rate limiting
  and the initial brokers; and, from TOML files only, the plog listeners (``[[plog.listener]]``, each a
  :class:`~bruce.proxy.config.ListenerConfig` that validated itself). The XML and TOML loaders both produce it;
  ``to_toml`` renders it back.
- Named configs keep their names and topics refer to them by name, as in the files; the lookups
  (:meth:`Config.batching_for`, :meth:`Config.compression_for`, :meth:`Config.rate_limit_for`) resolve a topic to
  plain values.
- A :class:`Config` checks itself when constructed (also through ``dataclasses.replace``): every semantic rule of
  Bruce's config builders — references to undefined named configs, 0 where "disable" is meant, all three batching
  limits disabled, a percentage over 100, a broker without a host, ... A violation raises :class:`ConfigError` whose
  ``path`` names the place in the TOML spelling (``("batching", "named_configs", "low_latency", "time")``); the
  loaders translate it into their own syntax. The parts are checked as part of the whole, not on their own.
- Numbers are integers: times in milliseconds, sizes in bytes, ``None`` where the file says "disable" or
  "unlimited". Mappings are immutable (:class:`FrozenMap`) and keep the file's order.
- To add a section: a frozen dataclass here with a default, a field on
  :class:`Config`, its checks in :meth:`Config._problems`, its keys in ``build.py``, its element in
  ``xml_config.py`` if Bruce's XML should carry it, and its rendering in ``toml_config.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import islice
from typing import Any, Generic, TypeVar

from bruce.producer import PLAINTEXT, SecurityConfig

from .errors import CLIP, ConfigError, Path, clip
from .listeners import ListenerConfig

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_BROKER_PORT = 9092


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def _freeze(obj: object, *names: str) -> None:
    """Make a frozen dataclass's mapping fields :class:`FrozenMap` (callers may pass plain dicts)."""
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, FrozenMap):
            object.__setattr__(obj, name, FrozenMap(value))


class TopicAction(StrEnum):
    """How a topic is batched (Bruce's ``action`` attribute: perTopic, combinedTopics, disable)."""

    PER_TOPIC = "per_topic"  # its own batches, with a named config's limits
    COMBINED_TOPICS = "combined_topics"  # mixed-topic batches per broker, with the combined_topics limits
    DISABLE = "disable"  # not batched


class CompressionType(StrEnum):
    """A message-set codec. Bruce has none and snappy; bruce-kafka adds gzip, lz4 and zstd."""

    NONE = "none"
    GZIP = "gzip"
    SNAPPY = "snappy"
    LZ4 = "lz4"
    ZSTD = "zstd"


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """A named batching config: a batch completes when any enabled limit is reached; ``None`` = disabled."""

    time_ms: int | None
    messages: int | None
    bytes: int | None


@dataclass(frozen=True, slots=True)
class TopicBatching:
    """A topic's (or the default) batching choice; ``config`` names a batching named config (per_topic only)."""

    action: TopicAction
    config: str | None = None


@dataclass(frozen=True, slots=True)
class CombinedTopics:
    """Mixed-topic batching: whether it is on, and the named config with its limits."""

    enabled: bool
    config: str | None = None


@dataclass(frozen=True, slots=True)
class BatchingPolicy:
    """What :meth:`Config.batching_for` resolves a topic to: the effective action and its limits.

    ``combined_topics`` with combined batching disabled resolves to ``disable`` (Bruce sends those unbatched).
    """

    action: TopicAction
    limits: BatchLimits | None


@dataclass(frozen=True, slots=True)
class BatchingConfig:
    """Bruce's ``<batching>``."""

    produce_request_data_limit: int  # Σ key+value bytes per produce request; 0 ⇒ one message per request
    message_max_bytes: int  # the brokers' message.max.bytes
    combined_topics: CombinedTopics
    default_topic: TopicBatching
    named_configs: Mapping[str, BatchLimits] = field(default_factory=FrozenMap)
    topic_configs: Mapping[str, TopicBatching] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze(self, "named_configs", "topic_configs")


@dataclass(frozen=True, slots=True)
class CompressionCodec:
    """A named compression config: compress a message set when Σ(key+value+26) ≥ ``min_size`` bytes."""

    type: CompressionType
    min_size: int = 0  # always 0 for NONE (Bruce ignores it there)

    def __post_init__(self) -> None:
        if self.type is CompressionType.NONE:
            object.__setattr__(self, "min_size", 0)


@dataclass(frozen=True, slots=True)
class CompressionConfig:
    """Bruce's ``<compression>``; topics refer to named configs by name."""

    default_topic: str
    named_configs: Mapping[str, CompressionCodec] = field(default_factory=FrozenMap)
    size_threshold_percent: int = 100  # send compressed only if compressed ≤ this % of the plain size
    topic_configs: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze(self, "named_configs", "topic_configs")


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``max_count`` messages per topic per fixed window of ``interval_ms``; ``None`` = unlimited."""

    interval_ms: int
    max_count: int | None


@dataclass(frozen=True, slots=True)
class RateLimitingConfig:
    """Bruce's ``<topicRateLimiting>``; without one, no topic is limited."""

    default_topic: str
    named_configs: Mapping[str, RateLimit] = field(default_factory=FrozenMap)
    topic_configs: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _freeze(self, "named_configs", "topic_configs")

    @classmethod
    def unlimited(cls) -> RateLimitingConfig:
        """What Bruce builds when the file has no ``<topicRateLimiting>``."""
        return cls(default_topic="unlimited", named_configs={"unlimited": RateLimit(interval_ms=1, max_count=None)})


@dataclass(frozen=True, slots=True)
class Broker:
    """An initial broker to ask for metadata."""

    host: str
    port: int = DEFAULT_BROKER_PORT

    @property
    def address(self) -> str:
        """``host:port`` (IPv6 hosts in brackets)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


IDEMPOTENCE = "enable.idempotence"
PRODUCER_PROPERTIES = (IDEMPOTENCE, "reconnect.backoff.ms", "reconnect.backoff.max.ms")
"""The producer properties [kafka] and --kafka_property take besides security's (the rest are Bruce's options)."""
SPOOL_KEYS = ("dir", "fsync_ms", "max_bytes", "full_policy", "segment_bytes")  # [spool]: --spool_<key>


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration file, validated on construction."""

    batching: BatchingConfig
    compression: CompressionConfig
    initial_brokers: tuple[Broker, ...]
    topic_rate_limiting: RateLimitingConfig = field(default_factory=RateLimitingConfig.unlimited)
    plog_listeners: tuple[ListenerConfig, ...] = ()  # [[plog.listener]] (docs/plog.md)
    kafka: SecurityConfig = PLAINTEXT  # [kafka] / <kafka>: TLS and SASL by librdkafka name (docs/security.md)
    enable_idempotence: bool | None = None  # [kafka] "enable.idempotence"; None: the producer decides (auto)
    producer_properties: tuple[tuple[str, Any], ...] = ()  # [kafka] reconnect.backoff(.max).ms, by librdkafka name
    spool: tuple[tuple[str, str | int], ...] = ()  # [spool] (TOML only): (key, value) pairs, checked by the loader

    def __post_init__(self) -> None:
        object.__setattr__(self, "initial_brokers", tuple(self.initial_brokers))
        object.__setattr__(self, "plog_listeners", tuple(self.plog_listeners))
        for path, problem in self._problems():
            raise ConfigError(problem, where=dotted(path), path=path)

    def batching_for(self, topic: str) -> BatchingPolicy:
        """The effective batching of ``topic``: its own entry, else the default."""
        batching = self.batching
        choice = batching.topic_configs.get(topic, batching.default_topic)
        if choice.action is TopicAction.PER_TOPIC:
            return BatchingPolicy(TopicAction.PER_TOPIC, batching.named_configs[choice.config or ""])
        if choice.action is TopicAction.COMBINED_TOPICS and batching.combined_topics.enabled:
            return BatchingPolicy(TopicAction.COMBINED_TOPICS, self.combined_limits)
        return BatchingPolicy(TopicAction.DISABLE, None)

    @property
    def combined_limits(self) -> BatchLimits | None:
        """The limits of mixed-topic batches, ``None`` when combined batching is disabled."""
        combined = self.batching.combined_topics
        return self.batching.named_configs[combined.config or ""] if combined.enabled else None

    def compression_for(self, topic: str) -> CompressionCodec:
        """The compression config of ``topic``: its own entry, else the default."""
        compression = self.compression
        return compression.named_configs[compression.topic_configs.get(topic, compression.default_topic)]

    def rate_limit_for(self, topic: str) -> RateLimit:
        """The rate limit of ``topic``: its own entry, else the default."""
        limiting = self.topic_rate_limiting
        return limiting.named_configs[limiting.topic_configs.get(topic, limiting.default_topic)]

    # -- checks -----------------------------------------------------------------------------------

    def _problems(self) -> Iterator[tuple[Path, str]]:
        yield from _batching_problems(self.batching)
        yield from _compression_problems(self.compression)
        yield from _rate_limiting_problems(self.topic_rate_limiting)
        yield from _broker_problems(self.initial_brokers)
        for index, listener in enumerate(self.plog_listeners):
            if not isinstance(listener, ListenerConfig):
                yield ("plog", "listener", index), f"{listener!r} is not a ListenerConfig"  # type: ignore[unreachable]  # built by hand


def dotted(path: Path) -> str:
    """A path in the TOML spelling: ``batching.named_configs.low_latency.time``, ``initial_brokers[1].port``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            bare = part and len(part) <= CLIP and all(c.isalnum() or c in "_-" for c in part) and part.isascii()
            key = part if bare else _quote(part)
            out += f".{key}" if out else key
    return out


def _quote(text: str) -> str:
    escaped = "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04X}" for c in clip(text))
    return f'"{escaped}"'


# Each check yields (path, problem) for the first thing wrong in a part; Config raises the first one.


def _number_problems(path: Path, value: int | None, *, minimum: int, zero_hint: str = "") -> Iterator[tuple[Path, str]]:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        yield path, f"{value!r} is not a whole number"
    elif value < minimum:
        hint = zero_hint if value == 0 and zero_hint else f"expected at least {minimum}"
        yield path, f"{value} is not allowed: {hint}"


def _reference_problems(
    path: Path, name: str | None, defined: Mapping[str, object], kind: str
) -> Iterator[tuple[Path, str]]:
    if name is None:
        yield path, f"is required: name one of the {kind} named configs ({_names(defined)})"
    elif name not in defined:
        yield path, f'names the {kind} config "{clip(name)}", which is not defined; defined: {_names(defined)}'


def _names(defined: Mapping[str, object], shown: int = 10) -> str:
    names = [f'"{clip(name)}"' for name in islice(defined, shown)]
    more = f" and {len(defined) - shown} more" if len(defined) > shown else ""
    return ", ".join(names) + more if names else "none"


def _name_problems(path: Path, names: Iterable[str], what: str) -> Iterator[tuple[Path, str]]:
    for name in names:
        if not name:
            yield (*path, name), f"a {what} name must not be empty"


def _batching_problems(batching: BatchingConfig) -> Iterator[tuple[Path, str]]:
    base: Path = ("batching",)
    named = batching.named_configs
    yield from _name_problems((*base, "named_configs"), named, "named config")
    disable_hint = 'to turn this limit off write "disable"'
    for name, limits in named.items():
        where: Path = (*base, "named_configs", name)
        for key in ("time", "messages", "bytes"):
            value = limits.time_ms if key == "time" else getattr(limits, key)
            yield from _number_problems((*where, key), value, minimum=1, zero_hint=disable_hint)
        if limits.time_ms is None and limits.messages is None and limits.bytes is None:
            yield where, 'time, messages and bytes are all "disable": at least one limit is needed to complete a batch'
    yield from _number_problems((*base, "produce_request_data_limit"), batching.produce_request_data_limit, minimum=0)
    yield from _number_problems((*base, "message_max_bytes"), batching.message_max_bytes, minimum=0)
    combined = batching.combined_topics
    if combined.enabled:
        yield from _reference_problems((*base, "combined_topics", "config"), combined.config, named, "batching")
    yield from _topic_batching_problems((*base, "default_topic"), batching.default_topic, named)
    yield from _name_problems((*base, "topic_configs"), batching.topic_configs, "topic")
    for topic, choice in batching.topic_configs.items():
        yield from _topic_batching_problems((*base, "topic_configs", topic), choice, named)


def _topic_batching_problems(
    path: Path, choice: TopicBatching, named: Mapping[str, BatchLimits]
) -> Iterator[tuple[Path, str]]:
    if choice.action is TopicAction.PER_TOPIC:
        yield from _reference_problems((*path, "config"), choice.config, named, "batching")
    elif choice.action is TopicAction.COMBINED_TOPICS and choice.config:
        yield (
            (*path, "config"),
            (
                f'must be empty or absent for combined-topics batching (found "{choice.config}"): '
                "the limits come from the combined topics settings"
            ),
        )


def _compression_problems(compression: CompressionConfig) -> Iterator[tuple[Path, str]]:
    base: Path = ("compression",)
    named = compression.named_configs
    yield from _name_problems((*base, "named_configs"), named, "named config")
    for name, codec in named.items():
        yield from _number_problems((*base, "named_configs", name, "min_size"), codec.min_size, minimum=0)
    percent = compression.size_threshold_percent
    yield from _number_problems((*base, "size_threshold_percent"), percent, minimum=0)
    if isinstance(percent, int) and percent > 100:
        yield (*base, "size_threshold_percent"), f"{percent} is more than 100: expected a percentage from 0 to 100"
    yield from _reference_problems((*base, "default_topic"), compression.default_topic, named, "compression")
    yield from _name_problems((*base, "topic_configs"), compression.topic_configs, "topic")
    for topic, name in compression.topic_configs.items():
        yield from _reference_problems((*base, "topic_configs", topic), name, named, "compression")


def _rate_limiting_problems(limiting: RateLimitingConfig) -> Iterator[tuple[Path, str]]:
    base: Path = ("topic_rate_limiting",)
    named = limiting.named_configs
    yield from _name_problems((*base, "named_configs"), named, "named config")
    for name, limit in named.items():
        where: Path = (*base, "named_configs", name)
        yield from _number_problems((*where, "max_count"), limit.max_count, minimum=0)
        if limit.max_count is not None:  # Bruce ignores the interval of an unlimited config
            yield from _number_problems((*where, "interval"), limit.interval_ms, minimum=1)
    yield from _reference_problems((*base, "default_topic"), limiting.default_topic, named, "rate limiting")
    yield from _name_problems((*base, "topic_configs"), limiting.topic_configs, "topic")
    for topic, name in limiting.topic_configs.items():
        yield from _reference_problems((*base, "topic_configs", topic), name, named, "rate limiting")


def _broker_problems(brokers: tuple[Broker, ...]) -> Iterator[tuple[Path, str]]:
    if not brokers:
        yield ("initial_brokers",), "lists no broker: at least one is needed to fetch the first metadata"
    for index, broker in enumerate(brokers):
        if not broker.host.strip():
            yield ("initial_brokers", index, "host"), "the host must not be empty"
        if isinstance(broker.port, bool) or not isinstance(broker.port, int) or not 1 <= broker.port <= 65535:
            yield ("initial_brokers", index, "port"), f"{broker.port} is not a TCP port: expected 1 to 65535"
