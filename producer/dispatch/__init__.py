"""Getting queued messages to the brokers and their answers back: routing onto partition queues, one sender per
broker, a request's outcomes, the pause, the message timeout.

Modules: ``dispatcher`` (:class:`Dispatcher`: routing, which broker has what ready, rerouting on a new view),
``sender`` (:class:`Sender`: one task per broker), ``responses`` (:class:`RequestOutcomes`: a written request's start
and outcomes), ``pause`` (:class:`PauseController`: Bruce's pause), ``expiry`` (the message timeout's tick).
Rule: imports the top-level vocabulary and every wing below it but transactions (see
docs/architecture.md#the-floors-of-bruceproducer); what it asks of the producer around it is one ``DispatchHooks``.
"""

from __future__ import annotations

from .dispatcher import Dispatcher, DispatchHooks, NoHooks
from .expiry import expire_loop
from .pause import PauseController
from .responses import RequestOutcomes
from .sender import Sender

__all__ = ["DispatchHooks", "Dispatcher", "NoHooks", "PauseController", "RequestOutcomes", "Sender", "expire_loop"]
