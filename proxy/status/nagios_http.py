"""The one HTTP GET of ``bruce-check``: a status page read whole within a deadline, or a short reason why not.

Rules:
- One deadline for everything: the name lookup, the connection, the request, the headers and the body. A server that
  answers a byte a second, or never, is given up at the deadline (each wait is the time left, and the time left is
  checked after every read). The name lookup runs in a helper thread so that a slow resolver cannot stretch it.
- An HTTP/1.0 request (``Connection: close``): the answer is the status line, headers up to :data:`MAX_HEADER` bytes,
  then the body until the server closes, at most ``limit`` bytes (its ``Content-Length``, when given, must match).
- Anything else — no answer, a refused connection, a status other than 200, bytes that are not HTTP, an answer cut
  short — raises :class:`FetchError` with one short line; text from the server in it is the caller's to sanitize.
- Standard library only; nothing of the daemon.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import Any

MAX_HEADER = 64 * 1024
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: ([^\r\n]*))?\r?\n")
_CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*([0-9]{1,12})[ \t]*\r?$", re.I | re.M)
_TRANSFER_ENCODING = re.compile(rb"^transfer-encoding:", re.I | re.M)


class FetchError(Exception):
    """The page could not be read; the message says why, in one line."""


class _Clock:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def left(self) -> float:
        """Seconds left; FetchError when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise FetchError(f"no complete answer within {self.timeout:g} s")
        return left


def http_get(host: str, port: int, path: str, *, timeout: float, limit: int) -> bytes:
    """The body of ``GET path`` from ``host:port`` (status 200), all of it within ``timeout`` seconds."""
    clock = _Clock(timeout)
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    request = f"GET {path} HTTP/1.0\r\nHost: {where}\r\nConnection: close\r\nUser-Agent: bruce-check\r\n\r\n"
    with _connect(host, port, clock) as sock:
        try:
            sock.settimeout(clock.left())
            sock.sendall(request.encode("ascii"))
            answer = _read(sock, clock, MAX_HEADER + limit)
        except TimeoutError:
            raise FetchError(f"no complete answer within {timeout:g} s") from None
        except OSError as e:
            raise FetchError(f"the connection to {where} failed: {e.strerror or e}") from None
    return _body(answer, limit, where)


def _resolve(host: str, port: int, clock: _Clock) -> list[tuple[Any, ...]]:
    """getaddrinfo in a helper thread, given up at the deadline."""
    found: list[list[tuple[Any, ...]] | BaseException] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as e:
            found.append(e)

    thread = threading.Thread(target=lookup, name="bruce-check-resolve", daemon=True)
    thread.start()
    thread.join(clock.left())
    if not found:
        raise FetchError(f"the name {host} was not resolved within {clock.timeout:g} s")
    result = found[0]
    if isinstance(result, BaseException):
        reason = result.strerror if isinstance(result, OSError) and result.strerror else str(result)
        raise FetchError(f"cannot resolve {host}: {reason}")
    return result


def _connect(host: str, port: int, clock: _Clock) -> socket.socket:
    problem = "no address"
    for family, kind, proto, _, address in _resolve(host, port, clock):
        try:
            sock = socket.socket(family, kind, proto)
        except OSError as e:
            problem = e.strerror or str(e)
            continue
        try:
            sock.settimeout(clock.left())
            sock.connect(address)
        except OSError as e:
            sock.close()
            problem = (
                f"no connection within {clock.timeout:g} s" if isinstance(e, TimeoutError) else e.strerror or str(e)
            )
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise FetchError(f"cannot connect to {host}:{port}: {problem}")


def _read(sock: socket.socket, clock: _Clock, most: int) -> bytes:
    """Everything until the server closes; FetchError past ``most`` bytes or past the deadline."""
    answer = bytearray()
    while True:
        sock.settimeout(clock.left())
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(answer)
        answer += chunk
        if len(answer) > most:
            raise FetchError(f"the answer is longer than {most} bytes")


def _body(answer: bytes, limit: int, where: str) -> bytes:
    if not answer:
        raise FetchError(f"{where} closed the connection without answering")
    status = _STATUS_LINE.match(answer)
    if status is None:
        raise FetchError(f"{where} did not answer in HTTP: {answer[:40]!r}")
    end = answer.find(b"\r\n\r\n")
    end, gap = (end, 4) if end >= 0 else (answer.find(b"\n\n"), 2)
    if end < 0 or end > MAX_HEADER:
        raise FetchError(f"{where} sent no complete HTTP headers")
    headers, body = answer[: end + gap], answer[end + gap :]
    code, reason = int(status.group(1)), (status.group(2) or b"").decode("latin-1")
    if code != 200:
        raise FetchError(f"{where} answered HTTP {code} {reason[:60]}".rstrip())
    if _TRANSFER_ENCODING.search(headers):
        raise FetchError(f"{where} answered with a Transfer-Encoding (not for an HTTP/1.0 request)")
    length = _CONTENT_LENGTH.search(headers)
    if length is not None and int(length.group(1)) != len(body):
        raise FetchError(f"{where} sent {len(body)} of the {int(length.group(1))} bytes it announced")
    if len(body) > limit:
        raise FetchError(f"{where} answered more than {limit} bytes")
    return body
