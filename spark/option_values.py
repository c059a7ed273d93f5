"""The readers of the data source's option values, and the names they report: what every option module shares.

Rules:
- Options arrive as Spark's string map; :func:`lower_keys` lower-cases the names (Spark does too) and every lookup is
  by the lower-case name. Errors show the documented spelling (:data:`LABELS`).
- Every bad value is an :class:`OptionError` naming the option and what it accepts; an empty value is the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import overload

from bruce.producer import servers
from bruce.wire import BruceError, UsageError

KAFKA = "kafka."

LABELS = {  # Spark lower-cases option names; errors show the documented spelling
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "maxrecordsperpartition": "maxRecordsPerPartition",
}
# Spark's Kafka source options beyond the basics (docs/spark.md, "Spark's Kafka connector options")
SPARK_SOURCE_LABELS = {
    "assign": "assign",
    "subscribepattern": "subscribePattern",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "startingtimestamp": "startingTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "endingtimestamp": "endingTimestamp",
    "failondataloss": "failOnDataLoss",
    "minpartitions": "minPartitions",
    "includeheaders": "includeHeaders",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "groupidprefix": "groupIdPrefix",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
}
LABELS |= SPARK_SOURCE_LABELS


class OptionError(UsageError):
    """A data source option is missing, unknown or has a bad value; the message names it."""

    reason = "BAD_OPTION"


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """The options with lower-case names (Spark lower-cases them too); a None value is empty."""
    return {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}


def servers_option(opts: dict[str, str], *, required: bool) -> tuple[str, ...]:
    """``bootstrap.servers`` (or its alias ``kafka.bootstrap.servers``): checked ``host:port`` entries."""
    plain, aliased = opts.get("bootstrap.servers"), opts.get("kafka.bootstrap.servers")
    if plain and aliased and plain != aliased:
        raise OptionError("'bootstrap.servers' and its alias 'kafka.bootstrap.servers' disagree; give one")
    text = plain or aliased or ""
    if not text.strip():
        if required:
            raise OptionError("option 'bootstrap.servers' (or 'kafka.bootstrap.servers') is required: host:port,...")
        return ()
    protocol = (opts.get("kafka.security.protocol") or "PLAINTEXT").strip().upper()
    try:  # the producer's reading: host:port entries, a listener prefix dropped when it agrees with the protocol
        return servers(text, protocol)
    except BruceError as error:
        raise OptionError(f"option 'bootstrap.servers': {str(error).partition(': ')[2]}") from None


@overload
def int_value(opts: dict[str, str], name: str, default: int, *, low: int) -> int: ...
@overload
def int_value(opts: dict[str, str], name: str, default: None, *, low: int) -> int | None: ...
def int_value(opts: dict[str, str], name: str, default: int | None, *, low: int) -> int | None:
    """An integer option ≥ ``low``; ``default`` when absent or empty."""
    text = opts.get(name)
    if text is None or text == "":
        return default
    label = LABELS.get(name, name)
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option {label!r}: {text!r} is not an integer") from None
    if value < low:
        raise OptionError(f"option {label!r}: {value} must be ≥ {low}")
    return value


def bool_value(opts: dict[str, str], name: str, default: bool) -> bool:
    """A ``true`` / ``false`` option; ``default`` when absent or empty."""
    text = opts.get(name, "").strip().lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise OptionError(f"option {LABELS.get(name, name)!r}: {text!r} is not true or false")
    return text == "true"


def choice_value(opts: dict[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` (case-insensitive); ``default`` when absent or empty."""
    text = opts.get(name, "").strip().lower() or default
    if text not in choices:
        raise OptionError(f"option {LABELS.get(name, name)!r}: {text!r} is not one of {', '.join(choices)}")
    return text


_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(opts: dict[str, str], name: str, default: int) -> int:
    """A duration as Spark writes it: ``15m``, ``30s``, ``500ms`` (a bare number is milliseconds)."""
    text = opts.get(name, "").strip().lower()
    if not text:
        return default
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number) :].strip() or "ms"
    if not number.strip().isdigit() or unit not in _UNITS_MS:
        raise OptionError(f"option {LABELS.get(name, name)!r}: {text!r} is not a duration like 15m, 30s or 500ms")
    return int(number) * _UNITS_MS[unit]
