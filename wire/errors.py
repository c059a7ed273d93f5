"""The error tree shared by every layer of bruce-kafka.

Rules:
- One root, :class:`BruceError`. Every error carries ``reason``: the stable, upper-case name that reaches counters,
  discard reports and logs (Bruce's discard reason names where one exists).
- :class:`MalformedInput` is the *peer's* fault: bytes received from a client or a broker that do not parse. Every
  parser in ``bruce.wire`` raises it (or a subclass) for any bad input, and nothing else.
- :class:`UsageError` is the *local caller's* fault: bad arguments to a builder or an API. It is also a ``ValueError``.
- Higher layers derive their own errors from these; ``bruce.wire`` imports nothing of ours.
"""

from __future__ import annotations


class BruceError(Exception):
    """Root of every error raised by bruce-kafka."""

    reason: str = "ERROR"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class MalformedInput(BruceError):
    """Bytes from a peer (client datagram, broker response) that do not parse. ``path``, when known, names the field
    where decoding stopped (``body -> topic_data -> [0] -> name``)."""

    reason = "MALFORMED"
    path: str | None = None

    def __init__(self, message: str, *, reason: str | None = None, path: str | None = None) -> None:
        super().__init__(message, reason=reason)
        if path is not None:
            self.path = path


class UnsupportedApiKey(MalformedInput):
    """A Bruce input datagram whose API key (0x01xx range) is not one we implement."""

    reason = "API_KEY"

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unsupported input datagram API key {api_key}")
        self.api_key = api_key


class UnsupportedVersion(MalformedInput):
    """A Bruce input datagram (or legacy format) whose version we do not implement."""

    reason = "VERSION"

    def __init__(self, version: int, *, api_key: int | None = None) -> None:
        what = "legacy input datagram" if api_key is None else f"input datagram API key {api_key}"
        super().__init__(f"unsupported {what} version {version}")
        self.version = version
        self.api_key = api_key


class UsageError(BruceError, ValueError):
    """The local caller passed something invalid (a topic too long to encode, an unknown codec, ...)."""

    reason = "USAGE"
