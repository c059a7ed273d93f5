"""A burst of input datagrams turned into messages or discards: parsing, the spool, the budget, the intake counters.

:class:`IntakeBursts` is the hot path of :class:`~bruce.proxy.intake.intake.DatagramIntake`: whichever the reader, each
wake-up's datagrams arrive here as one burst (:meth:`IntakeBursts.feed`).

Rules:
- Each datagram is parsed as :func:`bruce.wire.datagram.parse_datagram` parses it: failures are discarded as
  MALFORMED, API_KEY(n) or VERSION(n); one longer than ``max_input_msg_size`` (it arrives truncated to the limit + 1)
  as LONG_MSG, never as malformed; a message whose charge does not fit the
  :class:`~bruce.proxy.messages.budget.MessageBudget` as NO_MEM. Every outcome is handed on exactly once, a message
  to the :class:`MessageSink` (the router), a discard to the :class:`IntakeDiscards` (the accounting), in the
  datagrams' order, and is counted with Bruce's ``InputAgent*`` names, once per burst rather than per datagram.
- Cheap per datagram: clients repeat their datagrams' layout (topic, key and value sizes), so each AnyPartition layout
  seen is kept by datagram length (:func:`bruce.wire.datagram.any_partition_layout`; at most :data:`LAYOUT_LENGTHS`
  lengths, topics up to :data:`LAYOUT_TOPIC_MAX` bytes): a datagram of a known length that starts with the same header
  and topic and whose key and value sizes match is unpacked in one C call, with its topic already decoded. The wire
  layer proves that rule equal to ``parse_datagram``; anything else (another layout, PartitionKey, legacy, invalid)
  takes ``parse_datagram`` itself. The fast path sets the new message's fields itself (its size and charge are the
  layout's) instead of calling :class:`~bruce.proxy.messages.message.HeldMessage` (the constructor's call and frame cost
  more than the stores); tests/proxy/intake/test_intake_layouts.py checks every slot against the
  constructor's, so a field added to the message cannot go unset here. A length's layout is replaced only after
  :data:`LAYOUT_MISSES` of its datagrams missed it (two topics whose datagrams share a length would otherwise evict each
  other on every datagram and pay for learning each time). Topic names are decoded once (a bounded cache): bytes that
  are not UTF-8 keep their bytes through ``surrogateescape``, and the router discards them as BAD_TOPIC. What the
  layouts save: docs/benchmarks.md, "CPU per message" (parsing).
- Per burst, not per datagram: a burst is parsed into messages first; when it has no discard and fits the budget whole,
  its charge is reserved in one step (then every message of it fits) and its messages are handed over; otherwise they
  are reserved one by one, so NO_MEM falls on exactly the messages a reservation per message would refuse
  (tests/proxy/intake/test_intake_bursts.py checks that equivalence). Counters are updated once per burst, and a
  burst's messages go to the sink in one call (``route_many``).
- The durable spool (``spool``; every spool call of the intake is in :meth:`IntakeBursts._spool` and
  :meth:`IntakeBursts._admit_in_order`, besides reading ``next_sequence``): each burst's valid messages are appended
  to it in one call after parsing and before the budget sees them; each gets its sequence (``spool_seq``), set while
  parsing to the one the spool hands out next and corrected if the spool hands out others or none. A burst the spool
  refuses (full, with the discard policy) is discarded as SPOOL_FULL; one it does not hold (full with the memory
  policy, degraded) goes on memory-only. A spooled message that finds no room in the budget (or arrives while others
  are) is held on disk only (``spool.cursor.hold``: :mod:`bruce.proxy.daemon.spooling` routes it later) instead of
  NO_MEM.
- The sink failing (an exception from it) is raised to the caller (``serve()`` raises it). The datagrams of the burst
  after the one the sink failed on still get a fate: their discards are reported as they are, their messages
  discarded as SERVER_SHUTDOWN (the daemon is stopping); the one the sink failed on holds its reservation (its fate is
  unknown).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from bruce.producer import Counters, DiscardReason
from bruce.wire import (
    DatagramKind,
    MalformedInput,
    UnsupportedApiKey,
    UnsupportedVersion,
    any_partition_layout,
    parse_datagram,
)

from ..messages import MESSAGE_OVERHEAD, HeldMessage, MessageBudget
from ..spool import SPOOL_FULL, Spool, SpoolFields, SpoolSlot

TOPIC_CACHE_SIZE = 4096  # distinct topic names kept decoded (cleared when full)
LAYOUT_LENGTHS = 4096  # datagram lengths whose AnyPartition layout is kept (cleared when full)
LAYOUT_MISSES = 64  # a length's layout is replaced after this many of its datagrams missed it
LAYOUT_TOPIC_MAX = 255  # longer topics (no Kafka topic is) take the general path: a layout holds at most ~270 bytes

_ANY = DatagramKind.ANY_PARTITION

# A datagram discarded before it became a message: its position in the burst, reason, detail, counter, bytes.
_Unparsed = tuple[int, DiscardReason, int | None, str, bytes]


class MessageSink(Protocol):
    """Where the intake hands its valid messages, each with its charge already reserved in the budget (the daemon's
    router, :class:`bruce.proxy.routing.Router`): their fate is now the sink's. Called in the event loop."""

    def route(self, msg: HeldMessage) -> None:
        """One message."""

    def route_many(self, messages: list[HeldMessage]) -> None:
        """A burst, each as :meth:`route` would take it, in order; if it raises, it leaves in ``messages`` only those
        it never saw."""


class IntakeDiscards(Protocol):
    """Where the intake reports what it discards (the daemon's accounting, :class:`bruce.proxy.accounting.Outcomes`):
    the signatures of ``DiscardTracker.record`` and ``DiscardTracker.record_unparsed``. Called in the event loop."""

    def on_discard(self, reason: DiscardReason, topic: str, key: bytes | None, value: bytes, client_ts: int) -> None:
        """A datagram that parsed was discarded (NO_MEM: the budget is full; SPOOL_FULL)."""

    def on_unparsed(self, reason: DiscardReason, datagram: bytes, *, detail: int | None = None) -> None:
        """A datagram that did not parse: MALFORMED, API_KEY (``detail`` = the API key), VERSION (``detail`` = the
        version) or LONG_MSG (longer than the limit, ``detail``; ``datagram`` holds its first limit + 1 bytes)."""


class IntakeBursts:
    """Bursts of datagrams → messages for ``sink`` or discards for ``discards``, within ``budget``, spooled when
    ``spool`` holds an open spool. See the module rules."""

    def __init__(
        self,
        *,
        sink: MessageSink,
        discards: IntakeDiscards,
        budget: MessageBudget,
        counters: Counters,
        max_input_msg_size: int,
        spool: SpoolSlot | None = None,
    ) -> None:
        self.sink = sink
        self.discards = discards
        self.budget = budget
        self.counters = counters
        self.max_input_msg_size = max_input_msg_size
        self.spool_slot = spool or SpoolSlot()  # the durable spool, when it is on (opened by the daemon)
        self.datagrams = 0  # datagrams processed so far
        self.wakeups = 0  # bursts processed so far (datagrams / wakeups = mean burst)
        self.topics: dict[bytes, str] = {}  # topic bytes → the shared str
        # datagram length → (prefix, unpack, key size, value size, topic, topic bytes, message size, charge): see the
        # module rules
        self._layouts: dict[int, tuple[Any, ...]] = {}
        self._misses: dict[int, int] = {}  # datagram length → datagrams of it that missed its layout since learned

    def feed(self, datagrams: Iterable[bytes], now: float) -> int:
        """Process datagrams (``bytes`` as received, up to ``max_input_msg_size + 1`` bytes each) received at
        monotonic time ``now``: every one becomes a message for ``sink`` or a discard, in order. Returns
        the messages created."""
        max_size = self.max_input_msg_size
        layout_for = self._layouts.get
        new_message = HeldMessage.__new__
        topic_for = self.topics.get
        messages: list[HeldMessage] = []
        append = messages.append
        unparsed: list[_Unparsed] = []
        spool = self.spool_slot.spool
        spooled: list[SpoolFields] = []
        seq = -1 if spool is None else spool.next_sequence  # the next message's, if the spool takes the burst
        charges = 0
        for data in datagrams:
            layout = layout_for(len(data))
            if layout is not None:  # the fast path (module rules)
                prefix, unpack, key_size, value_size, topic, raw_topic, size, charge = layout
                if data.startswith(prefix):
                    timestamp, ks, key, vs, value = unpack(data)
                    if ks == key_size and vs == value_size:
                        # HeldMessage(topic, key, value, timestamp, None, now), its fields set here (module rules)
                        msg = new_message(HeldMessage)
                        msg.topic = topic
                        msg.key = key
                        msg.value = value
                        msg.timestamp = timestamp
                        msg.partition_key = None
                        msg.received = now
                        msg.spool_seq = seq  # -1 without a spool; checked (and undone if refused) by _spool
                        msg.headers = None
                        msg.pinned = False
                        msg.size = size
                        msg.charge = charge
                        msg.attempts = 0
                        msg.possible_duplicate = False
                        msg.partition = -1
                        msg._fate = None
                        charges += charge
                        append(msg)
                        if spool is not None:
                            spooled.append((raw_topic, None, key, value, timestamp))  # a SpoolMessage's fields
                            seq += 1
                        continue
            if len(data) > max_size:
                unparsed.append((len(messages), DiscardReason.LONG_MSG, max_size, "InputAgentDiscardMsgTooLong", data))
                continue
            try:
                kind, raw_topic, timestamp, key, value, partition_key = parse_datagram(data)
            except MalformedInput as e:
                unparsed.append((len(messages), *_classify(e), data))
                continue
            topic = topic_for(raw_topic)
            if topic is None:
                topic = self._topic_name(raw_topic)
            if kind is _ANY and len(raw_topic) <= LAYOUT_TOPIC_MAX and type(data) is bytes:
                self._learn(data, raw_topic, key, topic)
            msg = HeldMessage(topic, key, value, timestamp, partition_key, now)
            charges += msg.charge
            append(msg)
            if spool is not None:
                spooled.append((raw_topic, partition_key, key, value, timestamp))
                msg.spool_seq = seq
                seq += 1
        self.wakeups += 1
        self.datagrams += len(messages) + len(unparsed)
        refused = None
        if spooled:
            refused = self._spool(spool, spooled, messages)  # type: ignore[arg-type]  # spooled is empty without a spool
        if (
            refused is not None
            or unparsed
            or (spool is not None and spool.cursor.start is not None)  # behind: held on disk only, in order
            or not self.budget.try_reserve_many(charges, len(messages))
        ):
            return self._admit_in_order(messages, unparsed, refused)
        created = len(messages)
        self._count_created(created)
        try:
            self.sink.route_many(messages)
        except (
            BaseException
        ):  # the sink failed (serve() raises it): settle the messages it never saw (left in the list)
            if messages:
                self.budget.release(sum(m.charge for m in messages), len(messages))
                self._discard_unrouted(messages)
            raise
        return created

    def _learn(self, data: bytes, raw_topic: bytes, key: bytes, topic: str) -> None:
        """Keep the layout of ``data``, a valid AnyPartition datagram, for the next datagrams of its length. A length
        that has a layout keeps it until :data:`LAYOUT_MISSES` of its datagrams did not match it: two clients whose
        datagrams share a length do not evict each other's layout on every datagram."""
        layouts = self._layouts
        size = len(data)
        if size in layouts:
            misses = self._misses.get(size, 0) + 1
            if misses < LAYOUT_MISSES:
                self._misses[size] = misses
                return
            self._misses.pop(size)
        elif len(layouts) >= LAYOUT_LENGTHS:
            layouts.clear()
            self._misses.clear()
        prefix, unpack, key_size, value_size = any_partition_layout(data, len(raw_topic), len(key))
        size = key_size + value_size
        layouts[len(data)] = (prefix, unpack, key_size, value_size, topic, raw_topic, size, size + MESSAGE_OVERHEAD)

    def forget_layouts(self) -> None:
        """Forget the layouts learned (after a change of ``max_input_msg_size``)."""
        self._layouts.clear()
        self._misses.clear()

    @staticmethod
    def _spool(spool: Spool, spooled: list[SpoolFields], messages: list[HeldMessage]) -> DiscardReason | None:
        """Append a burst to the spool; SPOOL_FULL if it refused them. :meth:`feed` gave the messages the sequences
        the spool hands out next (one loop less per burst): they are corrected if it handed out others, and set to -1
        if it did not take the burst."""
        expected = messages[0].spool_seq
        first = spool.append(spooled)
        if first != expected:
            for seq, msg in enumerate(messages, first):
                msg.spool_seq = seq if first >= 0 else -1
        return DiscardReason.SPOOL_FULL if first == SPOOL_FULL else None

    def _admit_in_order(
        self, messages: list[HeldMessage], unparsed: list[_Unparsed], refused: DiscardReason | None = None
    ) -> int:
        """The slow path: the discards reported and the messages between them reserved one by one, in order
        (``refused``: every message is discarded for that reason)."""
        reserve = self.budget.try_reserve
        route = self.sink.route
        discards = self.discards
        spool = self.spool_slot.spool
        cursor = spool.cursor if spool is not None else None
        created = handed = reported = on_disk = 0  # messages created, held on disk only; fates given
        try:
            for position in [*(u[0] for u in unparsed), len(messages)]:
                for msg in messages[handed:position]:
                    handed += 1
                    if refused is not None:
                        discards.on_discard(refused, msg.topic, msg.key, msg.value, msg.timestamp)
                    elif (
                        cursor is not None
                        and msg.spool_seq >= 0
                        and (cursor.start is not None or not reserve(msg.charge))
                    ):
                        on_disk += 1  # no room, or others are on disk: held there only (bruce.proxy.daemon.spooling)
                        cursor.hold(msg.spool_seq)
                    elif msg.spool_seq >= 0 or reserve(msg.charge):  # a spooled one here is reserved already
                        created += 1
                        route(msg)
                    else:
                        self.counters.inc("InputAgentDiscardMsgNoMem")
                        discards.on_discard(DiscardReason.NO_MEM, msg.topic, msg.key, msg.value, msg.timestamp)
                if reported < len(unparsed):
                    _, reason, detail, counter, data = unparsed[reported]
                    reported += 1
                    self.counters.inc(counter)
                    discards.on_unparsed(reason, data, detail=detail)
        except BaseException:  # the sink failed (serve() raises it): settle what it never saw
            self._discard_unrouted(messages[handed:])
            for _, reason, detail, counter, data in unparsed[reported:]:
                self.counters.inc(counter)
                discards.on_unparsed(reason, data, detail=detail)
            raise
        finally:
            self._count_created(created)
            if on_disk:
                self.counters.inc("InputAgentGotOkMsg", on_disk)
        return created

    def _discard_unrouted(self, messages: list[HeldMessage]) -> None:
        """After the sink failed: messages that never reached it are discarded (the daemon is stopping)."""
        for msg in messages:
            self.discards.on_discard(DiscardReason.SERVER_SHUTDOWN, msg.topic, msg.key, msg.value, msg.timestamp)

    def _count_created(self, n: int) -> None:
        if n:
            self.counters.inc("InputAgentGotOkMsg", n)
            self.counters.inc("MsgCreate", n)

    def _topic_name(self, raw: bytes) -> str:
        """The shared ``str`` for a topic's bytes (bounded cache; module rules)."""
        if len(self.topics) >= TOPIC_CACHE_SIZE:
            self.topics.clear()
        name = self.topics[raw] = raw.decode("utf-8", "surrogateescape")
        return name


def _classify(error: MalformedInput) -> tuple[DiscardReason, int | None, str]:
    """A parse failure as (reason, detail, counter): Bruce's outcome class and ``InputAgent*`` counter for it."""
    if isinstance(error, UnsupportedApiKey):
        return DiscardReason.API_KEY, error.api_key, "InputAgentDiscardMsgUnsupportedApiKey"
    if isinstance(error, UnsupportedVersion):
        if error.api_key is None:
            counter = "InputAgentDiscardMsgUnsupportedVersion"  # a legacy-format datagram
        elif error.api_key == 256:
            counter = "InputAgentDiscardAnyPartitionMsgUnsupportedApiVersion"
        else:
            counter = "InputAgentDiscardPartitionKeyMsgUnsupportedApiVersion"
        return DiscardReason.VERSION, error.version, counter
    return DiscardReason.MALFORMED, None, "InputAgentDiscardMsgMalformed"
