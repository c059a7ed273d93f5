"""Discard accounting: Bruce's anomaly tracker and discard reports (docs/bruce-compatibility.md#discard-reports).

Rules:
- Every discarded message passes through :class:`DiscardTracker` exactly once (``record`` for messages that parsed,
  ``record_unparsed`` for datagrams that did not). Each call increments ``Discard{reason=<NAME>}``, updates the
  current report, writes the discard log line (when a :class:`~bruce.proxy.accounting.discard_log.DiscardLog` is
  attached) and logs a warning at most once per 30 s per reason. The warning and the discard log line say why where
  there is more to say: LONG_MSG the size and the limit (``message_limit`` for key + value, given by the daemon; an
  oversized datagram's limit comes as ``detail``, its topic and size are read from its first bytes), BAD_TOPIC_NAME what
  is wrong with the name. Possible duplicates go through ``record_possible_duplicate``
  (the report and a ``DUP`` log line; the producer counts ``PossibleDuplicateMsg``). Call sites must not increment
  ``Discard{reason}`` themselves.
- Reports cover periods of ``interval_s`` seconds on the injected wall clock (``start + n·interval``). A query sees
  the current (unfinished) period and the last finished one. If an event or query comes two or more periods after
  the current period started, Bruce's rule applies: the current data is dropped and both reports become empty
  placeholders. We keep that, but make it visible: ``DiscardReportDataLost`` and a warning when data was dropped.
- ``check_query_rate`` is Bruce's watchdog: call it every ``interval_s + 1`` seconds; when no report was asked for
  in the last interval it increments ``NoDiscardQuery`` and warns. With ``quiet_until_queried`` (the try-out mode,
  where nobody monitors) it only counts until a first report was asked for: then someone monitors, and a monitor that
  goes silent is warned about.
- What each reason updates (Bruce's tracker): MALFORMED → count + recent prefixes; API_KEY → count; VERSION → count
  + version→count; BAD_TOPIC and BAD_TOPIC_NAME → count + recent bad topics; LONG_MSG → recent ``topic SP value``
  prefixes (+ discard_topic when the topic is known), but an unparsed datagram over the input limit counts as
  MALFORMED does (Bruce reads it truncated, and its Size check fails); RATE_LIMIT → rate_limit_discard +
  discard_topic; every other reason with a topic → discard_topic {min, max client timestamp, count}. Bad topics are
  not in discard_topic (they are not topics).
- Bounded: the recent lists keep 25 entries (most recent first, a repeat moves to the front); prefixes are cut to
  ``prefix_size`` bytes; topics to 255 characters (Kafka allows 249); the version map keeps 64 versions; each
  per-topic map keeps ``max_topics`` topics and folds the rest into one ``<other>`` entry (no Kafka topic can have
  that name), counted by ``DiscardReportTopicOverflow``.
- The report is a frozen snapshot (:class:`DiscardReport`); ``bruce.proxy.status.pages`` renders it as Bruce's
  ``/discards`` pages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from bruce.producer import Counters, DiscardReason
from bruce.wire import UsageError, peek_topic, topic_name_problem

from .discard_log import DiscardLog, topic_bytes

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_INTERVAL_S = 600  # --discard_report_interval
DEFAULT_PREFIX_SIZE = 256  # --discard_report_bad_msg_prefix_size
DEFAULT_MAX_TOPICS = 1000
MAX_RECENT = 25
MAX_VERSIONS = 64
MAX_TOPIC_CHARS = 255
OTHER_TOPIC = "<other>"
LOG_EVERY_S = 30

# Module-level members: an Enum attribute lookup costs many times an identity test on CPython.
_MALFORMED, _API_KEY, _VERSION = DiscardReason.MALFORMED, DiscardReason.API_KEY, DiscardReason.VERSION
_BAD_TOPIC, _LONG_MSG, _RATE_LIMIT = DiscardReason.BAD_TOPIC, DiscardReason.LONG_MSG, DiscardReason.RATE_LIMIT
_BAD_NAME = DiscardReason.BAD_TOPIC_NAME
_NO_TOPIC = frozenset({_MALFORMED, _API_KEY, _VERSION})
_UNPARSED = _NO_TOPIC | {_LONG_MSG}
_LABELS = {reason: (("reason", reason.value),) for reason in DiscardReason}


@dataclass(frozen=True, slots=True)
class TopicInterval:
    """Per-topic summary: earliest and latest client timestamp (epoch ms) and how many messages."""

    topic: str
    min_timestamp: int
    max_timestamp: int
    count: int


@dataclass(frozen=True, slots=True)
class PeriodReport:
    """One reporting period, as Bruce shows it (field names are Bruce's)."""

    id: int
    start_time: int  # epoch seconds
    malformed_msg_count: int = 0
    unsupported_api_key_msg_count: int = 0
    unsupported_version_msg_count: int = 0
    bad_topic_msg_count: int = 0
    recent_malformed: tuple[bytes, ...] = ()
    unsupported_msg_version: tuple[tuple[int, int], ...] = ()  # (version, count), by version
    recent_bad_topic: tuple[str, ...] = ()
    recent_too_long_msg: tuple[bytes, ...] = ()
    rate_limit_discard: tuple[tuple[str, int], ...] = ()  # (topic, count), by topic
    discard_topic: tuple[TopicInterval, ...] = ()  # by topic
    possible_duplicate_topic: tuple[TopicInterval, ...] = ()  # by topic


@dataclass(frozen=True, slots=True)
class DiscardReport:
    """What ``/discards`` shows: the current period and the last finished one (None during the first period)."""

    now: int  # epoch seconds
    interval: int  # seconds
    unfinished: PeriodReport
    finished: PeriodReport | None


def _topic_str(topic: str | bytes) -> str:
    """A topic as printable text (invalid UTF-8 and lone surrogates shown as escapes), cut to MAX_TOPIC_CHARS."""
    if isinstance(topic, str):
        if topic.isascii():
            return topic[:MAX_TOPIC_CHARS]
        topic = topic_bytes(topic)
    return bytes(topic).decode("utf-8", "backslashreplace")[:MAX_TOPIC_CHARS]


def _remember(recent: list[T], item: T) -> None:
    """Most recent first; a repeat moves to the front; at most MAX_RECENT entries."""
    try:
        recent.remove(item)
    except ValueError:
        if len(recent) >= MAX_RECENT:
            recent.pop()
    recent.insert(0, item)


class _Period:
    __slots__ = (
        "api_key_count",
        "bad_topic_count",
        "bad_topics",
        "discard_topics",
        "duplicate_topics",
        "id",
        "long_msgs",
        "malformed",
        "malformed_count",
        "rate_limited",
        "start",
        "version_count",
        "versions",
    )

    def __init__(self, period_id: int, start: int) -> None:
        self.id = period_id
        self.start = start
        self.malformed_count = self.api_key_count = self.version_count = self.bad_topic_count = 0
        self.malformed: list[bytes] = []
        self.versions: dict[int, int] = {}
        self.bad_topics: list[str] = []
        self.long_msgs: list[bytes] = []
        self.rate_limited: dict[str, int] = {}
        self.discard_topics: dict[str, list[int]] = {}  # topic -> [min_ts, max_ts, count]
        self.duplicate_topics: dict[str, list[int]] = {}

    def is_empty(self) -> bool:
        return not (
            self.malformed_count
            or self.api_key_count
            or self.version_count
            or self.bad_topic_count
            or self.long_msgs
            or self.rate_limited
            or self.discard_topics
            or self.duplicate_topics
        )

    def snapshot(self) -> PeriodReport:
        def intervals(m: dict[str, list[int]]) -> tuple[TopicInterval, ...]:
            return tuple(TopicInterval(t, lo, hi, n) for t, (lo, hi, n) in sorted(m.items()))

        return PeriodReport(
            id=self.id,
            start_time=self.start,
            malformed_msg_count=self.malformed_count,
            unsupported_api_key_msg_count=self.api_key_count,
            unsupported_version_msg_count=self.version_count,
            bad_topic_msg_count=self.bad_topic_count,
            recent_malformed=tuple(self.malformed),
            unsupported_msg_version=tuple(sorted(self.versions.items())),
            recent_bad_topic=tuple(self.bad_topics),
            recent_too_long_msg=tuple(self.long_msgs),
            rate_limit_discard=tuple(sorted(self.rate_limited.items())),
            discard_topic=intervals(self.discard_topics),
            possible_duplicate_topic=intervals(self.duplicate_topics),
        )


class DiscardTracker:
    """Counts, reports and logs every discard and possible duplicate. Single-threaded (the event loop)."""

    def __init__(
        self,
        *,
        interval_s: int = DEFAULT_INTERVAL_S,
        prefix_size: int = DEFAULT_PREFIX_SIZE,
        counters: Counters | None = None,
        discard_log: DiscardLog | None = None,
        clock: Callable[[], float] = time.time,
        max_topics: int = DEFAULT_MAX_TOPICS,
        log_discards: bool = True,
        quiet_until_queried: bool = False,
        message_limit: int | None = None,
    ) -> None:
        if interval_s < 1:
            raise UsageError(f"discard report interval must be at least 1 s, got {interval_s}")
        if prefix_size < 0 or max_topics < 1:
            raise UsageError(f"bad discard tracker limits: prefix size {prefix_size}, max topics {max_topics}")
        self.interval = int(interval_s)
        self.prefix_size = prefix_size
        self.counters = counters if counters is not None else Counters()
        self.discard_log = discard_log
        self.clock = clock
        self.max_topics = max_topics
        self.log_discards = log_discards
        self._quiet = quiet_until_queried  # cleared by the first query
        now = int(clock())
        self._current = _Period(0, now)
        self._finished: _Period | None = None
        self._last_query = now
        self._last_logged: dict[DiscardReason, tuple[int, int]] = {}  # reason -> (when logged, suppressed since)
        self.message_limit = message_limit  # the longest key + value the router lets through (LONG_MSG's limit)

    # -- recording ---------------------------------------------------------------------------------------------------

    def record(
        self,
        reason: DiscardReason,
        topic: str | bytes,
        key: bytes | None,
        value: bytes | None,
        client_ts: int,
    ) -> None:
        """A message that parsed (it has a topic) is discarded for ``reason``. ``client_ts`` is its epoch-ms
        timestamp."""
        if reason in _NO_TOPIC:
            raise UsageError(f"{reason} discards have no topic: use record_unparsed()")
        now = int(self.clock())
        period = self._current if now - self._current.start < self.interval else self._advance(now)
        name = topic[:MAX_TOPIC_CHARS] if type(topic) is str and topic.isascii() else _topic_str(topic)
        why = ""
        size = limit = None
        if reason is _BAD_TOPIC or reason is _BAD_NAME:
            period.bad_topic_count += 1
            _remember(period.bad_topics, name)
            if reason is _BAD_NAME:
                why = f"not a valid Kafka topic name: {topic_name_problem(name)}"
        else:
            if reason is _LONG_MSG:
                size, limit = (len(key) if key else 0) + (len(value) if value else 0), self.message_limit
                why = f"{size} bytes of key and value" + ("" if limit is None else f", limit {limit}")
                raw = topic_bytes(topic)
                cut = self.prefix_size
                _remember(period.long_msgs, (raw[:cut] + b" " + bytes((value or b"")[:cut]))[:cut])
            elif reason is _RATE_LIMIT:
                rate_name = self._topic_key(period.rate_limited, name)
                period.rate_limited[rate_name] = period.rate_limited.get(rate_name, 0) + 1
            self._update_topic(period.discard_topics, name, client_ts)
        self._count(reason, name, now, why)
        if self.discard_log is not None:
            if limit is None:
                self.discard_log.discard(reason.value, topic, key, value, client_ts)
            else:
                self.discard_log.discard(reason.value, topic, key, value, client_ts, size=size, limit=limit)

    def record_unparsed(self, reason: DiscardReason, datagram: bytes, *, detail: int | None = None) -> None:
        """A datagram that did not parse is discarded: MALFORMED, API_KEY (``detail`` = the API key), VERSION
        (``detail`` = the version) or LONG_MSG (an oversized datagram; ``detail`` = the limit it broke)."""
        if reason not in _UNPARSED:
            raise UsageError(f"{reason} is not a discard of an unparsed datagram")
        if detail is None and reason is not _MALFORMED and reason is not _LONG_MSG:
            raise UsageError(f"{reason} discards need detail= (the API key or version)")
        now = int(self.clock())
        period = self._current if now - self._current.start < self.interval else self._advance(now)
        prefix = bytes(datagram[: self.prefix_size])
        info = reason.value
        if reason is _MALFORMED or reason is _LONG_MSG:  # Bruce reads an oversized datagram truncated: malformed
            period.malformed_count += 1
            _remember(period.malformed, prefix)
        elif reason is _API_KEY:
            period.api_key_count += 1
            info = f"API_KEY({detail})"
        elif reason is _VERSION:
            period.version_count += 1
            info = f"VERSION({detail})"
            if detail in period.versions or len(period.versions) < MAX_VERSIONS:
                period.versions[detail] = period.versions.get(detail, 0) + 1  # type: ignore[index,arg-type]  # VERSION has detail
        if reason is _LONG_MSG and detail is not None:  # its topic, size and limit, when its first bytes show them
            self._count_oversized(datagram, detail, now)
            return
        self._count(reason, None, now)
        if self.discard_log is not None:
            self.discard_log.discard(info, b"", None, datagram, None)

    def _count_oversized(self, datagram: bytes, limit: int, now: int) -> None:
        """An input datagram over ``limit`` (``--max_input_msg_size``): its topic and size (its Size field, the intake
        reads only limit + 1 bytes of it) when its first bytes show them."""
        raw = peek_topic(datagram)
        claimed = int.from_bytes(datagram[:4], "big", signed=True) if len(datagram) >= 4 else 0
        size = claimed if claimed > limit else len(datagram)
        what = "a datagram of" if claimed > limit else "a datagram over"
        self._count(
            _LONG_MSG,
            None if raw is None else _topic_str(raw),
            now,
            f"{what} {size} bytes, limit {limit} (--max_input_msg_size)",
        )
        if self.discard_log is not None:
            self.discard_log.discard(_LONG_MSG.value, raw or b"", None, datagram, None, size=size, limit=limit)

    def record_possible_duplicate(
        self, topic: str | bytes, key: bytes | None, value: bytes | None, client_ts: int
    ) -> None:
        """A message is sent again after its broker failed before acknowledging it: it may be stored twice."""
        now = int(self.clock())
        period = self._current if now - self._current.start < self.interval else self._advance(now)
        self._update_topic(period.duplicate_topics, _topic_str(topic), client_ts)
        if self.discard_log is not None:
            self.discard_log.duplicate(topic, key, value, client_ts)

    # -- querying ----------------------------------------------------------------------------------------------------

    def report(self) -> DiscardReport:
        """The current and last finished periods. Counts as a discard query for the watchdog."""
        now = int(self.clock())
        self._last_query = now
        self._quiet = False
        period = self._current if now - self._current.start < self.interval else self._advance(now)
        finished = self._finished.snapshot() if self._finished is not None else None
        return DiscardReport(now=now, interval=self.interval, unfinished=period.snapshot(), finished=finished)

    def check_query_rate(self) -> bool:
        """Bruce's watchdog (call every ``interval_s + 1`` s): True, ``NoDiscardQuery`` and a warning (only counted
        while quiet: see the rules) when nobody asked for a report within the last interval, so reports may be lost."""
        delta = int(self.clock()) - self._last_query
        if delta > self.interval:
            self.counters.inc("NoDiscardQuery")
            if not self._quiet:
                log.warning("no discard query in the last %d s: discard reports may be lost", delta)
            return True
        return False

    # -- internals ---------------------------------------------------------------------------------------------------

    def _advance(self, now: int) -> _Period:
        """Move to the period holding ``now`` (Bruce's AdvanceReportPeriod); callers check that one has ended."""
        current = self._current
        passed = (now - current.start) // self.interval
        if passed == 1:
            self._finished = current
            self._current = _Period(current.id + 1, current.start + self.interval)
        else:
            if not current.is_empty():
                self.counters.inc("DiscardReportDataLost")
                log.warning(
                    "discard report %d (started %d s ago) was dropped without being shown as finished: nothing "
                    "queried /discards or was discarded in the next period; query more often than every %d s",
                    current.id,
                    now - current.start,
                    self.interval,
                )
            last_id = current.id + passed - 1
            last_start = current.start + (passed - 1) * self.interval
            self._finished = _Period(last_id, last_start)
            self._current = _Period(last_id + 1, last_start + self.interval)
        return self._current

    def _topic_key(self, topic_map: Mapping[str, object], name: str) -> str:
        if name in topic_map or len(topic_map) < self.max_topics:
            return name
        self.counters.inc("DiscardReportTopicOverflow")
        return OTHER_TOPIC

    def _update_topic(self, topic_map: dict[str, list[int]], name: str, ts: int) -> None:
        name = self._topic_key(topic_map, name)
        entry = topic_map.get(name)
        if entry is None:
            topic_map[name] = [ts, ts, 1]
            return
        if ts < entry[0]:
            entry[0] = ts
        elif ts > entry[1]:
            entry[1] = ts
        entry[2] += 1

    def _count(self, reason: DiscardReason, topic: str | None, now: int, why: str = "") -> None:
        self.counters.inc("Discard", labels=_LABELS[reason])
        if not self.log_discards:
            return
        last, suppressed = self._last_logged.get(reason, (now - LOG_EVERY_S, 0))
        if 0 <= now - last < LOG_EVERY_S:
            self._last_logged[reason] = (last, suppressed + 1)
            return
        self._last_logged[reason] = (now, 0)
        where = f" topic {topic!r}" if topic is not None else ""
        more = f" ({suppressed} more since the last such message)" if suppressed else ""
        log.warning("discarded message: %s%s%s%s", reason.value, where, f": {why}" if why else "", more)
