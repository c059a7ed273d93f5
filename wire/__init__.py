"""bruce.wire: pure codecs for Bruce's input datagrams, plog packets and the Kafka protocol (see docs/wire.md).

Rules: bytes in, values out, no sockets, clocks or threads; nothing imported from the other layers. Every parser raises
:class:`~bruce.wire.errors.MalformedInput` (or a subclass) for any bad input and nothing else; every builder raises
:class:`~bruce.wire.errors.UsageError` for what cannot be encoded. construct schemas are the specification of each
format; a hand-written fast path sits next to its schema only with a differential test proving them equal.
"""
