"""The data source's options: Spark's case-insensitive string map → validated, picklable values.

Rules:
- Names are the ones Spark's Kafka connector users know (docs/spark.md has the table): ``bootstrap.servers``
  (``kafka.bootstrap.servers`` is an alias), ``topic`` (``subscribe`` is an alias for reading), ``assign``,
  ``subscribePattern``, ``startingOffsets``, ``endingOffsets`` and their ``...ByTimestamp`` and ``...Timestamp`` forms,
  ``failOnDataLoss``, ``minPartitions``, ``includeHeaders``, ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``,
  ``maxTriggerDelay``, ``maxRecordsPerPartition``; client settings are ``kafka.<librdkafka name>`` (``kafka.linger.ms``,
  ``kafka.acks``, ``kafka.partitioner``), the security ones too, for reads and writes alike
  (``kafka.security.protocol``, ``kafka.sasl.*``, ``kafka.ssl.*``; see docs/security.md). Spark lower-cases option
  names; so does every lookup here.
- Every problem is an :class:`OptionError` naming the option and what it accepts, raised when the query is planned
  (before any task runs). Unknown options are errors too: a misspelt option must not be silently ignored.
- Offsets specs: ``earliest``, ``latest``, or Spark's JSON ``{"topic": {"0": 23, "1": -2}}`` where -2 means earliest
  and -1 latest. As in Spark, a JSON spec names every partition the read covers (checked when the partitions are
  known: :func:`bruce.spark.reader.resolve`), and a batch refuses a start at latest and an end at earliest.
- Values are frozen dataclasses: they travel to the executors by pickle.
- The ``kafka.*`` settings are read by :mod:`bruce.spark.client_options`, values by :mod:`bruce.spark.option_values`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bruce.producer import PARTITIONERS, ProducerConfig
from bruce.producer import SETTING_NAMES as NAMES
from bruce.wire import BruceError

from .client_options import SECURITY, ClientConfig, client_config, java_producer_names, security_config
from .option_values import (
    KAFKA,
    LABELS,
    SPARK_SOURCE_LABELS,
    OptionError,
    bool_value,
    choice_value,
    duration_ms,
    int_value,
    lower_keys,
    servers_option,
)

EARLIEST = -2  # Spark's JSON offset for "the log start"
LATEST = -1  # Spark's JSON offset for "the log end"

OffsetSpec = str | dict[str, dict[int, int]]  # "earliest" | "latest" | {topic: {partition: offset or -2/-1}}
SPARK_PARTITIONER = "murmur2_random"  # Spark's Kafka sink (Java's producer): murmur2 for keys, any partition for null

_READ_OPTIONS = {
    "topic",
    "subscribe",
    "startingoffsets",
    "endingoffsets",
    "maxoffsetspertrigger",
    "maxrecordsperpartition",
}
_READ_OPTIONS |= set(SPARK_SOURCE_LABELS)
_WRITE_OPTIONS = {
    "topic",
    "socket",
    "delivery.timeout.ms",
    "max.datagram.size",
    "exactlyonce",
    "exactlyonce.markertopic",
}
_IGNORED_WRITE_OPTIONS = {"includeheaders"}  # Spark's sink takes it (a source option) and writes headers regardless
_COMMON = {"bootstrap.servers", "path", "checkpointlocation"}  # the last two are Spark's own, passed along; ignored


TimestampSpec = int | dict[str, dict[int, int]]  # one timestamp for every partition | {topic: {partition: ms}}


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What to read. Exactly one of ``topics`` (subscribe), ``pattern`` (subscribePattern) and ``assign`` is set."""

    topics: tuple[str, ...]
    client: ClientConfig
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None = None
    max_records_per_partition: int | None = None  # as Spark: no limit unless given
    # Spark's Kafka source options beyond the basics
    pattern: str | None = None  # subscribePattern: a regular expression every topic name is matched against, whole
    assign: dict[str, tuple[int, ...]] | None = None  # assign: these partitions only
    starting_timestamps: TimestampSpec | None = None  # startingTimestamp / startingOffsetsByTimestamp (win)
    ending_timestamps: TimestampSpec | None = None  # endingTimestamp / endingOffsetsByTimestamp (win)
    no_match: str = "error"  # startingOffsetsByTimestampStrategy: no offset at the timestamp → "error" | "latest"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    include_headers: bool = False
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Exactly one of ``producer`` (direct to brokers) and ``socket`` (through the local bruce daemon) is set."""

    topic: str | None
    producer: ProducerConfig | None
    socket: str | None
    delivery_timeout_ms: int = 120_000
    max_datagram_size: int = 65536  # the daemon's max_input_msg_size
    partitioner: str = SPARK_PARTITIONER  # kafka.partitioner: where a keyed row goes (both modes)
    marker_topic: str | None = None  # exactlyOnce=true: where the commit markers go (bruce.spark.exactly_once)

    @property
    def mode(self) -> str:
        return "daemon" if self.socket else "direct"


MARKER_TOPIC = "__bruce_spark_commits"  # exactlyOnce's default marker topic (spark/exactly_once.py)


def exactly_once_option(opts: dict[str, str], producer: ProducerConfig | None) -> str | None:
    """The marker topic when ``exactlyOnce`` is true, else None; refused with the daemon (``socket``) or with
    producer settings a transaction cannot use (checked now, when the query is planned)."""
    text = opts.get("exactlyonce", "").strip().lower()
    if text not in ("", "true", "false"):
        raise OptionError(f"option 'exactlyOnce': {text!r} is not true or false")
    marker_topic = opts.get("exactlyonce.markertopic", "").strip()
    if text != "true":
        if marker_topic:
            raise OptionError("option 'exactlyOnce.markerTopic' needs exactlyOnce=true")
        return None
    if producer is None:
        raise OptionError(
            "option 'exactlyOnce': needs direct writes ('bootstrap.servers'); the bruce daemon ('socket') has no "
            "transactions"
        )
    try:
        replace(producer, transactional_id="bruce-spark-check")  # the config checks itself when made
    except BruceError as e:
        problem = str(e).removeprefix("transactional_id: ")
        raise OptionError(f"option 'exactlyOnce': writes in transactions, and {problem}") from None
    return marker_topic or MARKER_TOPIC


def read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Validate a read's options (``streaming``: startingOffsets defaults to latest, endingOffsets is refused)."""
    opts = lower_keys(options)
    _refuse_unknown(opts, _READ_OPTIONS, "read")
    topics, pattern, assign = _subscription(opts)
    known = tuple(assign) if assign is not None else None if pattern is not None else topics
    client = client_config(opts)
    starting = _offset_spec(opts, "startingoffsets", "latest" if streaming else "earliest", known)
    for name in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
        if streaming and name in opts:
            raise OptionError(f"option {LABELS[name]!r} is for batch reads; a stream has no end")
    ending = _offset_spec(opts, "endingoffsets", "latest", known)
    if ending == "earliest":
        raise OptionError("option 'endingOffsets': ending offset can't be earliest for batch queries on Kafka")
    starting_at = _timestamps(opts, "startingtimestamp", "startingoffsetsbytimestamp", known)
    least, most = (
        int_value(opts, "minoffsetspertrigger", None, low=1),
        int_value(opts, "maxoffsetspertrigger", None, low=1),
    )
    if least is not None and most is not None and least > most:
        raise OptionError(f"option 'minOffsetsPerTrigger' ({least}) is more than 'maxOffsetsPerTrigger' ({most})")
    if not streaming and starting == "latest" and starting_at is None:
        raise OptionError("option 'startingOffsets': starting offset can't be latest for batch queries on Kafka")
    if not streaming:
        _refuse_in_batch(starting, LATEST, "startingOffsets for {} can't be latest for batch queries on Kafka")
        _refuse_in_batch(ending, EARLIEST, "ending offset for {} can't be earliest for batch queries on Kafka")
    return ReadOptions(
        topics=topics,
        client=client,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=most,
        max_records_per_partition=int_value(opts, "maxrecordsperpartition", None, low=1),
        pattern=pattern,
        assign=assign,
        starting_timestamps=starting_at,
        ending_timestamps=_timestamps(opts, "endingtimestamp", "endingoffsetsbytimestamp", known),
        no_match=choice_value(opts, "startingoffsetsbytimestampstrategy", ("error", "latest"), "error"),
        fail_on_data_loss=bool_value(opts, "failondataloss", True),
        min_partitions=int_value(opts, "minpartitions", None, low=1),
        include_headers=bool_value(opts, "includeheaders", False),
        min_offsets_per_trigger=least,
        max_trigger_delay_ms=duration_ms(opts, "maxtriggerdelay", 15 * 60_000),
    )


def write_options(options: Mapping[str, str]) -> WriteOptions:
    """Validate a write's options: ``bootstrap.servers`` (direct) or ``socket`` (the local daemon), not both."""
    opts = lower_keys(options)
    _refuse_unknown(opts, _WRITE_OPTIONS | _IGNORED_WRITE_OPTIONS, "write")
    servers = servers_option(opts, required=False)
    socket = opts.get("socket") or None
    if bool(servers) == bool(socket):
        raise OptionError(
            "a write needs exactly one of 'bootstrap.servers' (produce to the brokers) and 'socket' "
            "(the local bruce daemon's input socket)"
        )
    partitioner = opts.pop("kafka.partitioner", SPARK_PARTITIONER)
    if partitioner not in PARTITIONERS:
        raise OptionError(f"option 'kafka.partitioner': {partitioner!r} is not one of {', '.join(PARTITIONERS)}")
    producer = None
    if servers:
        # topic_autocreate on, as Spark's Kafka sink (the Java producer) asks the brokers to create a topic on first
        # use; kafka.topic.autocreate=false turns it off
        settings: dict[str, Any] = {"client.id": "bruce-spark", "topic.autocreate": True}
        given = {
            key[len(KAFKA) :]: text
            for key, text in java_producer_names(opts).items()
            if key.startswith(KAFKA) and key != "kafka.bootstrap.servers" and key[len(KAFKA) :] not in SECURITY
        }
        for name in given:
            if NAMES.get(name) == "transactional_id":  # a write never opens a transaction, so it could send nothing
                raise OptionError(
                    f"option {KAFKA + name!r}: transactions are not available to Spark writes (a write never opens one)"
                )
            if name.replace(".", "_") == "bootstrap_servers" or name not in NAMES:
                raise OptionError(
                    f"unknown producer setting {KAFKA + name!r} (see docs/spark.md for the kafka.* settings)"
                )
        security = security_config(opts)
        try:
            producer = ProducerConfig.from_mapping(
                {**settings, **given, "partitioner": partitioner, "bootstrap.servers": list(servers)}
                | {"security": security}
            )
        except BruceError as e:
            name, sep, problem = str(e).partition(": ")
            label = KAFKA + name.replace("_", ".")
            raise OptionError(f"option {label!r}: {problem}" if sep else f"producer settings (kafka.*): {e}") from None
    elif any(key.startswith(KAFKA) for key in opts):
        raise OptionError("kafka.* settings apply to direct writes; with 'socket' the daemon's config decides them")
    topic = opts.get("topic") or None
    marker_topic = exactly_once_option(opts, producer)
    return WriteOptions(
        topic=topic,
        producer=producer,
        socket=socket,
        delivery_timeout_ms=int_value(opts, "delivery.timeout.ms", 120_000, low=1),
        max_datagram_size=int_value(opts, "max.datagram.size", 65536, low=64),
        partitioner=partitioner,
        marker_topic=marker_topic,
    )


# ---------------------------------------------------------------- offsets specs


def _offset_spec(opts: dict[str, str], name: str, default: str, topics: tuple[str, ...] | None) -> OffsetSpec:
    text = opts.get(name, default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    label = LABELS[name]
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OptionError(
            f'option {label!r}: {text!r} is not earliest, latest or JSON like {{"topic": {{"0": 23, "1": -2}}}}'
        ) from None
    if not isinstance(parsed, dict):
        raise OptionError(f"option {label!r}: the JSON must be an object of topics")
    spec: dict[str, dict[int, int]] = {}
    for topic, partitions in parsed.items():
        if topics is not None and topic not in topics:
            raise OptionError(f"option {label!r} names topic {topic!r}, which the read does not subscribe to")
        if not isinstance(partitions, dict):
            raise OptionError(f"option {label!r}: topic {topic!r} must map partitions to offsets")
        spec[topic] = {}
        for partition, offset in partitions.items():
            if not (isinstance(partition, str) and partition.isdigit()):
                raise OptionError(f"option {label!r}: partition {partition!r} of {topic!r} is not a number")
            if type(offset) is not int or offset < EARLIEST:
                raise OptionError(
                    f"option {label!r}: offset {offset!r} of {topic}/{partition} must be an offset ≥ 0, "
                    "-2 (earliest) or -1 (latest)"
                )
            spec[topic][int(partition)] = offset
    return spec


def _refuse_in_batch(spec: OffsetSpec, offset: int, message: str) -> None:
    """Spark's batch rule: no JSON start at -1 (latest), no JSON end at -2 (earliest); both would read nothing."""
    if isinstance(spec, dict):
        for topic, partitions in sorted(spec.items()):
            for partition, value in sorted(partitions.items()):
                if value == offset:
                    raise OptionError(message.format(f"{topic}-{partition}"))


def offsets_to_json(offsets: Mapping[str, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """Per-partition offsets in Spark's JSON shape (partition numbers as strings), sorted."""
    return {t: {str(p): o for p, o in sorted(parts.items())} for t, parts in sorted(offsets.items())}


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> dict[str, dict[int, int]]:
    """The inverse of :func:`offsets_to_json` (a stream offset as Spark hands it back)."""
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in data.items()}


# ---------------------------------------------------------------- names


def _refuse_unknown(opts: dict[str, str], allowed: set[str], what: str) -> None:
    for key in sorted(opts):
        if key in allowed or key in _COMMON or key.startswith(KAFKA):
            continue
        if what == "read" and key in _WRITE_OPTIONS:
            raise OptionError(f"option {key!r} applies to writes, not to a read")
        if what == "write" and key in _READ_OPTIONS:
            raise OptionError(f"option {key!r} applies to reads, not to a write")
        known = ", ".join(sorted(allowed | {"bootstrap.servers", "kafka.*"}))
        raise OptionError(f"unknown option {key!r} for a {what} (known: {known})")


def _topics(opts: dict[str, str]) -> tuple[str, ...]:
    plain, aliased = opts.get("topic"), opts.get("subscribe")
    if plain and aliased:
        raise OptionError("give 'topic' or its alias 'subscribe', not both")
    topics = tuple(dict.fromkeys(t.strip() for t in (plain or aliased or "").split(",") if t.strip()))
    if not topics:
        raise OptionError("option 'topic' (or 'subscribe') is required: the topic(s) to read, comma-separated")
    return topics


# ---------------------------------------------------------------- Spark's Kafka source options


def _subscription(opts: dict[str, str]) -> tuple[tuple[str, ...], str | None, dict[str, tuple[int, ...]] | None]:
    """(topics, pattern, assign): exactly one of subscribe (``topic``), subscribePattern and assign, as Spark."""
    given = [n for n in ("topic", "subscribe", "subscribepattern", "assign") if opts.get(n)]
    if len(given) > 1:
        names = " and ".join(repr(LABELS.get(n, n)) for n in given)
        raise OptionError(f"give one of 'topic' (alias 'subscribe'), 'subscribePattern' and 'assign', not {names}")
    if not given:
        raise OptionError("one of 'topic' (or 'subscribe'), 'subscribePattern' and 'assign' is required: what to read")
    if given[0] == "subscribepattern":
        text = opts["subscribepattern"]
        try:
            re.compile(text)
        except re.error as e:
            raise OptionError(f"option 'subscribePattern': {text!r} is not a regular expression ({e})") from None
        return (), text, None
    if given[0] == "assign":
        return (), None, _assign(opts["assign"])
    return _topics(opts), None, None


def _assign(text: str) -> dict[str, tuple[int, ...]]:
    usage = 'option \'assign\': {} (expected JSON like {{"topicA": [0, 1], "topicB": [2, 4]}})'
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OptionError(usage.format(f"{text!r} is not JSON")) from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(usage.format("give an object of topics"))
    out = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not partitions:
            raise OptionError(usage.format(f"topic {topic!r} needs a list of partitions"))
        if any(type(p) is not int or p < 0 for p in partitions):
            raise OptionError(usage.format(f"the partitions of {topic!r} must be integers ≥ 0"))
        out[topic] = tuple(sorted(set(partitions)))
    return out


def _timestamps(
    opts: dict[str, str], single: str, by_partition: str, topics: tuple[str, ...] | None
) -> TimestampSpec | None:
    """``startingTimestamp`` (one for all) wins over ``startingOffsetsByTimestamp`` (per partition), as in Spark."""
    if opts.get(single):
        return int_value(opts, single, None, low=0)
    text = opts.get(by_partition)
    if not text:
        return None
    label = LABELS[by_partition]
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
        raise OptionError(f'option {label!r}: expected JSON like {{"topic": {{"0": 1700000000000}}}}, not {text!r}')
    spec: dict[str, dict[int, int]] = {}
    for topic, partitions in parsed.items():
        if topics is not None and topic not in topics:
            raise OptionError(f"option {label!r} names topic {topic!r}, which the read does not subscribe to")
        for partition, ms in partitions.items():
            if not (isinstance(partition, str) and partition.isdigit()) or type(ms) is not int or ms < 0:
                raise OptionError(
                    f"option {label!r}: {topic}/{partition}: {ms!r} must be a partition number → epoch ms ≥ 0"
                )
            spec.setdefault(topic, {})[int(partition)] = ms
    return spec
