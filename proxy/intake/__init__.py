"""Intake: the daemon's input socket. Datagrams are read promptly (by a reader process), parsed, charged to the
memory budget, spooled when a spool is on, and handed on as messages or counted as discards.

Modules: ``intake`` (the socket and its lifecycle), ``intake_process`` / ``intake_reader`` (the reader process, parent
and child sides), ``intake_burst`` (a burst of datagrams into messages or discards), ``socket_path`` (the socket's
private directory, a live socket never taken over), ``budget`` (the memory budget for held messages).
Rule: imports no part of :mod:`bruce.proxy.daemon`.
"""
