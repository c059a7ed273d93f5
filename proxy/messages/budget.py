"""The memory budget for held messages (Bruce's ``--msg_buffer_max``, given in KiB; counted here in bytes).

Rules:
- Every message the daemon holds has a *charge* (:func:`bruce.proxy.messages.message.message_charge`: key + value + a
  fixed per-message overhead that covers its Python objects), reserved when the message is created and released exactly
  once when its fate is known (delivered, or discarded with a reason). So the memory held by messages stays within
  the budget. Bruce counts 128-byte blocks of key + value instead; the overhead plays the role of its block rounding.
- Full means full: :meth:`MessageBudget.try_reserve` refuses a charge that does not fit, and the input discards that
  new message with NO_MEM. Nothing already held is evicted, and clients never wait for space.
  :meth:`MessageBudget.try_reserve_many` reserves a whole read burst in one step when all of it fits (then every
  message of it fits, in any order), else nothing: the input then reserves message by message.
- Inputs that can pause (the TCP listeners) ask to be told when space is back with
  :meth:`MessageBudget.notify_when_free`; the callbacks run once, from :meth:`release`, when usage falls to the resume
  level (7/8 of the capacity by default), so a paused input does not flap at the boundary.
- When a reservation does not fit, ``on_full`` (if given) is called first: it may make room by storing held messages
  more compactly (the daemon packs its ready batches, :mod:`bruce.proxy.routing.packed`) and gives back the bytes saved
  with :meth:`MessageBudget.shrink`; then the reservation is tried again. Nothing is evicted.
- Releasing more than is held is a bug and raises :class:`BudgetError` at once.
- Counters: ``release`` counts Bruce's ``MsgDestroy``; the inputs count ``MsgCreate`` once per read burst (a counter
  update per message would cost more than the reservation itself). ``held`` is their difference at every moment.
- Plain synchronous object for one event loop: no locks, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from bruce.producer import Counters
from bruce.wire import BruceError


class BudgetError(BruceError):
    """A release that does not match a reservation (a bug in whoever released it)."""

    reason = "BUG"


class MessageBudget:
    """Bytes of held messages, bounded by ``capacity``.

    >>> budget = MessageBudget(1000)
    >>> budget.try_reserve(600), budget.try_reserve(600), budget.used
    (True, False, 600)
    >>> budget.release(600); budget.used, budget.high_water
    (0, 600)
    """

    __slots__ = (
        "_counters",
        "_waiters",
        "capacity",
        "held",
        "high_water",
        "on_full",
        "refused",
        "resume_level",
        "used",
    )

    def __init__(
        self,
        capacity: int,
        *,
        resume_fraction: float = 0.875,
        counters: Counters | None = None,
        on_full: Callable[[], object] | None = None,
    ) -> None:
        if capacity <= 0:
            raise ValueError(f"budget capacity must be positive, got {capacity}")
        if not 0.0 <= resume_fraction <= 1.0:
            raise ValueError(f"resume_fraction must be within [0, 1], got {resume_fraction}")
        self.capacity = capacity
        self.resume_level = int(capacity * resume_fraction)
        self.used = 0  # bytes reserved by held messages
        self.held = 0  # messages holding a reservation
        self.high_water = 0  # the most bytes ever reserved at once
        self.refused = 0  # reservations refused because the budget was full
        self._counters = counters
        self._waiters: dict[Callable[[], object], None] = {}
        self.on_full = on_full  # called before a reservation is refused (see the rules)

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def try_reserve(self, charge: int) -> bool:
        """Reserve ``charge`` bytes for one new message; ``False`` (nothing reserved) when it does not fit."""
        used = self.used + charge
        if used > self.capacity:
            if self.on_full is None or not self._made_room(charge):
                self.refused += 1
                return False
            used = self.used + charge
        self.used = used
        self.held += 1
        if used > self.high_water:
            self.high_water = used
        return True

    def try_reserve_many(self, charge: int, count: int) -> bool:
        """Reserve ``charge`` bytes for ``count`` new messages at once, or nothing (``False``, nothing counted as
        refused) when they do not all fit: the caller then reserves them one by one to find which do."""
        used = self.used + charge
        if used > self.capacity:
            if self.on_full is None or not self._made_room(charge):
                return False
            used = self.used + charge
        self.used = used
        self.held += count
        if used > self.high_water:
            self.high_water = used
        return True

    def release(self, charge: int, count: int = 1) -> None:
        """Give back the reservations of ``count`` messages whose charges sum to ``charge``; counts ``MsgDestroy``."""
        used = self.used - charge
        held = self.held - count
        if used < 0 or held < 0 or (held == 0 and used != 0):
            raise BudgetError(
                f"released {charge} bytes for {count} messages but only {self.used} bytes for {self.held} are held"
            )
        self.used = used
        self.held = held
        if self._counters is not None:
            self._counters.inc("MsgDestroy", count)
        if self._waiters and used <= self.resume_level:
            waiters = list(self._waiters)
            self._waiters.clear()
            for callback in waiters:
                callback()

    def has_room(self, charge: int) -> bool:
        """Whether ``charge`` would fit now, after asking ``on_full`` for room if needed (nothing is reserved)."""
        if self.used + charge <= self.capacity:
            return True
        return self.on_full is not None and self._made_room(charge)

    def shrink(self, amount: int) -> None:
        """Held messages now occupy ``amount`` bytes less (stored more compactly): their reservation shrinks."""
        if not 0 <= amount <= self.used:
            raise BudgetError(f"cannot shrink {self.used} bytes held by {amount}")
        self.used -= amount
        if self._waiters and self.used <= self.resume_level:
            waiters = list(self._waiters)
            self._waiters.clear()
            for callback in waiters:
                callback()

    def _made_room(self, charge: int) -> bool:
        """Ask ``on_full`` for room; whether ``charge`` now fits."""
        self.on_full()  # type: ignore[misc]  # called only when on_full is set
        return self.used + charge <= self.capacity

    def notify_when_free(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once, when usage is at or below the resume level (at once if it already is).

        Registering the same callback again before it ran has no further effect.
        """
        if self.used <= self.resume_level:
            callback()
        else:
            self._waiters[callback] = None

    def cancel_notify(self, callback: Callable[[], object]) -> None:
        """Forget a callback registered with :meth:`notify_when_free` (no error if it is not registered)."""
        self._waiters.pop(callback, None)

    def __repr__(self) -> str:
        return f"<MessageBudget used={self.used}/{self.capacity} held={self.held} high_water={self.high_water}>"


class MakeRoom:
    """A budget's ``on_full`` whose maker exists only after the budget: the daemon's budget must pack the batches
    waiting in the producer's queues, and the producer is built after the budget (its packer gives bytes back to the
    budget). Built first, given to the budget, connected once, by the composition root, to what makes the room."""

    __slots__ = ("_make",)

    def __init__(self) -> None:
        self._make: Callable[[], object] | None = None

    def connect(self, make: Callable[[], object]) -> None:
        """Make room with ``make()`` from now on (once)."""
        if self._make is not None:
            raise BudgetError("MakeRoom is connected already")
        self._make = make

    def __call__(self) -> None:
        if self._make is not None:
            self._make()
