"""Intake: the daemon's input socket. Datagrams are read promptly (by a reader process), parsed, charged to the
memory budget, spooled when a spool is on, and handed on as messages or counted as discards.

Modules: ``intake`` (the socket and its lifecycle), ``intake_process`` / ``intake_reader`` (the reader process, parent
and child sides), ``intake_burst`` (a burst of datagrams into messages or discards), ``socket_path`` (the socket's
private directory, a live socket never taken over), ``budget`` (the memory budget for held messages).
Rule: imports no part of :mod:`bruce.proxy.daemon`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bruce.wire import lazy_face

if TYPE_CHECKING:  # the face, loaded on first use: the reader process (intake_reader) imports nothing else of ours
    from .intake import DEFAULT_READER as DEFAULT_READER
    from .intake import DatagramIntake as DatagramIntake
    from .intake import check_large_datagrams as check_large_datagrams
    from .intake_burst import TOPIC_CACHE_SIZE as TOPIC_CACHE_SIZE
    from .intake_burst import IntakeDiscards as IntakeDiscards
    from .intake_burst import MessageSink as MessageSink
    from .socket_path import IntakeError as IntakeError
    from .socket_path import SocketPathError as SocketPathError

__getattr__ = lazy_face(__name__, __file__)
