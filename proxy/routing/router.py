"""The router: validates each message against the cluster's metadata and the daemon's limits, in Bruce's order
(docs/bruce-compatibility.md#routing-checks), then hands it to the batcher. Sans-I/O: times are passed in, the cluster
view is read through a callable, topic creation is started through a callback and its outcome is reported back.

Rules:
- Order of the checks, first failure wins:
  1. Unknown topic (not in the current metadata; topics with a topic-level error are unknown): a name Kafka refuses
     → BAD_TOPIC_NAME at once (even before the first metadata; never sent to a broker for creation); else, with
     auto-creation on, the message is *parked* (below); otherwise BAD_TOPIC.
  2. Too long: key + value + the per-message overhead of the protocol in use > ``message_max_bytes`` → LONG_MSG
     (checked after the topic, so a bad topic wins).
  3. No available partition → NO_AVAILABLE_PARTITIONS (at once; nothing waits for one).
  4. Over the topic's rate limit → RATE_LIMIT.
  Then the message goes to the batcher; the producer chooses its partition (AnyPartition cycle, PartitionKey with the
  documented semantics) and reroutes after a pause.
- Before the first metadata arrives nothing is known: messages wait, in order, until :meth:`Router.refresh` (or the
  next message) sees the first view (Bruce's input queues them the same way). Only the memory budget bounds them.
- Topic creation never blocks intake (Bruce blocks its router ~21 s). The first message of an unknown topic starts
  the creation through ``create_topic(topic)``; that topic's messages wait, in arrival order, with no count limit
  of their own: the memory budget bounds them (NO_MEM), as it bounds every held message, and so does the creation's
  deadline (the producer's ``topic_create_timeout_ms``: ``create_topic`` always ends, and its outcome comes back
  through :meth:`Router.creation_done`). At most ``park_topics`` topics are created at once (beyond: BAD_TOPIC,
  counted ``RouterParkTopicsFull``). The metadata showing the topic releases its messages at once; a refused
  creation discards them as TOPIC_AUTOCREATE_FAIL, one that ran out of time as TOPIC_CREATE_TIMEOUT. Released
  messages go through checks 2-4 at release time. The daemon creates the topic with ``Producer.create_topic``.
- Every discard goes to ``discard(msg, reason)`` exactly once (the daemon counts it, reports it and releases the
  message's budget); Bruce's router counters are counted here.
- Cheap per message: the view is compared by identity, per-topic availability is cached per view, and nothing is
  allocated on the way to the batcher; the intake hands each burst to :meth:`Router.route_many`, which looks at the
  view and the debug switch once per burst, and hands a burst of one topic that passes as a whole to the batcher in
  one step. bench/router_bench.py measures it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from operator import attrgetter

from bruce.producer import ClusterView, Counters, DiscardReason
from bruce.wire import MESSAGE_OVERHEAD, topic_name_problem
from bruce.wire import RECORD_BATCH_HEADER_SIZE as HEADER_SIZE

from ..accounting import MessageDebugLog
from ..messages import HeldMessage
from .batcher import Batcher
from .ratelimit import RateLimiter

# Bytes a single message adds beyond its key and value, by the message format it is written in. Magic 0 (Bruce):
# offset 8 + size 4 + crc 4 + magic 1 + attributes 1 + key and value lengths 8. Magic 2, one record alone in its batch:
# the batch header 61 + the record's length, attributes, two deltas, key and value lengths and header count as varints
# at their largest (5 + 1 + 1 + 1 + 5 + 5 + 1).
LEGACY_MESSAGE_OVERHEAD = MESSAGE_OVERHEAD[0]
RECORD_BATCH_OVERHEAD = HEADER_SIZE + 19

DEFAULT_PARK_TOPICS = 100  # topics being created at once

CreateTopic = Callable[[str], None]
Discard = Callable[[HeldMessage, DiscardReason], None]

_SIZE, _TOPIC, _RECEIVED = attrgetter("size"), attrgetter("topic"), attrgetter("received")
_BAD_TOPIC = DiscardReason.BAD_TOPIC
_LONG_MSG = DiscardReason.LONG_MSG
_NO_PARTITIONS = DiscardReason.NO_AVAILABLE_PARTITIONS
_RATE_LIMIT = DiscardReason.RATE_LIMIT
_COUNTER = {
    _BAD_TOPIC: "DiscardBadTopicMsgOnRoute",
    _LONG_MSG: "DiscardLongMsg",
    _NO_PARTITIONS: "DiscardNoAvailablePartition",
    _RATE_LIMIT: "DiscardDueToRateLimit",
    DiscardReason.TOPIC_AUTOCREATE_FAIL: "DiscardOnTopicAutocreateFail",
    DiscardReason.TOPIC_CREATE_TIMEOUT: "DiscardOnTopicCreateTimeout",
}


def message_overhead(protocol: str) -> int:
    """The per-message overhead the LONG_MSG check adds for the producer's ``protocol`` setting: Bruce's 26 bytes
    for ``v0``; the record-batch overhead for ``modern`` and for ``auto`` (the broker may speak either, so the larger
    one: a message that passes fits alone in a batch of any format)."""
    return LEGACY_MESSAGE_OVERHEAD if protocol == "v0" else RECORD_BATCH_OVERHEAD


class Router:
    """Validates messages in Bruce's order and passes the good ones to the batcher. See the module rules."""

    def __init__(
        self,
        *,
        cluster: Callable[[], ClusterView | None],
        batcher: Batcher,
        discard: Discard,
        message_max_bytes: int,
        message_overhead: int = LEGACY_MESSAGE_OVERHEAD,
        rate_limiter: RateLimiter | None = None,
        create_topic: CreateTopic | None = None,
        debug: MessageDebugLog | None = None,
        counters: Counters | None = None,
        park_topics: int = DEFAULT_PARK_TOPICS,
    ) -> None:
        self._cluster = cluster
        self._batcher = batcher
        self._add = batcher.add
        self._discard = discard
        self._limit = message_max_bytes - message_overhead  # key + value may be at most this
        self._limiter = rate_limiter if rate_limiter is not None and rate_limiter.enabled else None
        self._create_topic = create_topic
        self._debug = debug
        self.counters = counters if counters is not None else Counters()
        self._park_topics = park_topics
        self._view: ClusterView | None = None
        self._usable: dict[str, bool] = {}  # topics of the current view looked up so far → any partition available
        self._waiting: deque[HeldMessage] = deque()  # before the first view
        self._parked: dict[str, list[HeldMessage]] = {}  # topics being created → their messages, in arrival order

    # ---------------------------------------------------------------- the hot path

    def route(self, msg: HeldMessage, now: float | None = None) -> None:
        """Validate one message (received at ``msg.received``; ``now`` for a message routed later) and batch it or
        discard it. The inputs' ``MessageSink.route``."""
        if now is None:
            now = msg.received
        view = self._cluster()
        if view is not self._view:
            self._new_view(view, now)
        topic = msg.topic
        usable = self._usable.get(topic)
        if usable is None:
            usable = self._look_up(topic)
            if usable is None:
                self._unknown(msg, now)
                return
        if msg.size > self._limit:
            self._drop(msg, _LONG_MSG)
        elif not usable:
            self._drop(msg, _NO_PARTITIONS)
        elif self._limiter is not None and not self._limiter.allow(topic, int(now * 1000)):
            self._drop(msg, _RATE_LIMIT)
        else:
            debug = self._debug
            if debug is not None and debug.active:
                debug.on_receive(topic, msg.key, msg.value, msg.timestamp)
            self._add(msg, now)

    def route_many(self, messages: list[HeldMessage]) -> None:
        """:meth:`route` for each of a burst's messages, in order (the intake's ``MessageSink.route_many``). The
        cluster view and the debug log's switch are looked at once for the burst: neither changes while it is routed
        (a new view comes with a metadata response, handled between callbacks). A burst of one topic, received at
        one time, that passes every check as a whole (a usable topic, no message too long, no rate limit, the debug
        log off) goes to the batcher in one step when none of it completes a batch (``Batcher.try_add_many``); any
        other burst is routed message by message. If routing one raises, ``messages`` is cut to those after it
        (never seen here) before the exception goes on."""
        if not messages:
            return
        view = self._cluster()
        if view is not self._view:
            self._new_view(view, messages[0].received)
        if self._limiter is None and (self._debug is None or not self._debug.active) and self._batch_whole(messages):
            return
        usable_for = self._usable.get
        limit = self._limit
        limiter = self._limiter
        debug = self._debug if self._debug is not None and self._debug.active else None
        add = self._add
        routed = 0
        try:
            for msg in messages:
                routed += 1
                topic = msg.topic
                usable = usable_for(topic)
                if usable is None:
                    usable = self._look_up(topic)
                    if usable is None:
                        self._unknown(msg, msg.received)
                        continue
                if msg.size > limit:
                    self._drop(msg, _LONG_MSG)
                elif not usable:
                    self._drop(msg, _NO_PARTITIONS)
                elif limiter is not None and not limiter.allow(topic, int(msg.received * 1000)):
                    self._drop(msg, _RATE_LIMIT)
                else:
                    if debug is not None:
                        debug.on_receive(topic, msg.key, msg.value, msg.timestamp)
                    add(msg, msg.received)
        except BaseException:
            del messages[:routed]
            raise

    def _batch_whole(self, messages: list[HeldMessage]) -> bool:
        """Hand a whole burst to the batcher in one step if it is one run (one topic, one receive time, every
        message passing the checks, none completing a batch): ``True`` once done. ``False``, with nothing done,
        sends it message by message. Each test is one C-level pass over the burst."""
        first, last = messages[0], messages[-1]
        topic, received, n = first.topic, first.received, len(messages)
        if last.topic != topic or last.received != received:  # most mixed bursts end here
            return False
        usable = self._usable.get(topic)
        if usable is None:
            usable = self._look_up(topic)
        if (
            not usable
            or list(map(_TOPIC, messages)).count(topic) != n
            or list(map(_RECEIVED, messages)).count(received) != n
        ):
            return False
        sizes = list(map(_SIZE, messages))
        if max(sizes) > self._limit:
            return False
        batcher = self._batcher
        try:
            if not batcher.try_add_many(messages, sum(sizes) + sizes.count(0), received):
                return False
        except BaseException:  # finding the batch failed: the first counts as seen, as one by one
            del messages[:1]
            raise
        try:
            batcher.expire(received)  # as add() does after each message
        except BaseException:  # every one is in its batch already
            messages.clear()
            raise
        return True

    def _look_up(self, topic: str) -> bool | None:
        view = self._view
        info = view.topics.get(topic) if view is not None else None
        if info is None:
            return None
        usable = self._usable[topic] = bool(info.available)
        return usable

    def _drop(self, msg: HeldMessage, reason: DiscardReason) -> None:
        counter = _COUNTER.get(reason)
        if counter is not None:
            self.counters.inc(counter)
        self._discard(msg, reason)

    # ---------------------------------------------------------------- unknown topics

    def _unknown(self, msg: HeldMessage, now: float) -> None:
        if topic_name_problem(msg.topic) is not None:
            self._drop(msg, DiscardReason.BAD_TOPIC_NAME)
            return
        if self._view is None:
            self._waiting.append(msg)
            return
        topic = msg.topic
        if self._create_topic is None:
            self._drop(msg, _BAD_TOPIC)
            return
        parked = self._parked.get(topic)
        if parked is not None:
            parked.append(msg)
            return
        if len(self._parked) >= self._park_topics:
            self.counters.inc("RouterParkTopicsFull")
            self._drop(msg, _BAD_TOPIC)
            return
        self._parked[topic] = [msg]
        self.counters.inc("RouterTopicAutocreate")
        self._create_topic(topic)

    def creation_done(self, topic: str, failure: DiscardReason | None, now: float) -> None:
        """The outcome of ``create_topic(topic)``: ``None`` when the topic now shows in the metadata, else the reason
        its waiting messages are discarded with (TOPIC_AUTOCREATE_FAIL: refused; TOPIC_CREATE_TIMEOUT: not in the
        metadata by the deadline; SERVER_SHUTDOWN)."""
        self.refresh(now)  # a view showing the topic releases its messages
        parked = self._parked.pop(topic, None)
        if parked is None:
            return  # released already
        if failure is None:  # the producer saw it, but the view we read does not show it: give it a last look
            self.counters.inc("RouterCreatedTopicNotInMetadata")
            failure = _BAD_TOPIC
        for msg in parked:
            self._drop(msg, failure)

    def refresh(self, now: float) -> None:
        """Look at the cluster view again: call it once the first metadata has arrived (``await producer.ready()``)
        and after the view may have changed; waiting and parked messages whose topic is now known are routed."""
        view = self._cluster()
        if view is not self._view:
            self._new_view(view, now)

    def discard_held(self, reason: DiscardReason) -> int:
        """Shutdown: discard every waiting and parked message with ``reason``; returns how many."""
        held = list(self._waiting)
        self._waiting.clear()
        for parked in self._parked.values():
            held += parked
        self._parked.clear()
        for msg in held:
            self._discard(msg, reason)
        return len(held)

    @property
    def held(self) -> int:
        """Messages the router holds (waiting or parked)."""
        return len(self._waiting) + sum(map(len, self._parked.values()))

    @property
    def creating(self) -> int:
        """Topics being created (their messages wait)."""
        return len(self._parked)

    # ---------------------------------------------------------------- views

    def _new_view(self, view: ClusterView | None, now: float) -> None:
        self._view = view
        self._usable.clear()
        if view is None:
            return
        if self._waiting:
            waiting, self._waiting = self._waiting, deque()
            self._release(waiting, now)
        for topic in [t for t in self._parked if t in view.topics]:
            self._release(self._parked.pop(topic), now)

    def _release(self, messages: list[HeldMessage] | deque[HeldMessage], now: float) -> None:
        route = self.route
        for msg in messages:
            route(msg, now)
        self._batcher.expire(now)
