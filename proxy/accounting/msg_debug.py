"""Message debug logs (Bruce's ``/msg_debug/...``, docs/bruce-compatibility.md#message-debug-logs).

Rules:
- Three files in ``debug_dir``: ``msg_receive`` (a message passed router validation), ``msg_send`` (it was sent in a
  complete produce request), ``msg_got_ack`` (its broker acknowledged it). One line per message::

      ts: <client ts> topic: <len>[<topic>] key: <len>[<b64>] value: <len>[<b64>]

  (the key and value lengths are those of their base64 text).
- The files are deleted at startup. Logging is off until topics are enabled over HTTP (one topic at a time, or all
  topics). Going from off to on starts a new session: the directory is created, the old files are deleted, and the
  session's time limit (``time_limit_s``) and byte budget (``byte_limit``, shared by the three files) start afresh.
  When either runs out, logging turns itself off (``MsgDebugAutoOff{cause=time|bytes}`` and a warning) and the topic
  list is cleared, so ``get_topics`` tells the truth. A write failure turns it off the same way
  (``MsgDebugWriteError`` and an error). Deleting the last topic also turns logging off; the files stay until the
  next session starts.
- The topic filter filters: with some topics enabled, only those topics are logged. (Bruce stores the list but never
  checks it, so enabling any topic logs every topic.)
- Cheap when off: the daemon checks the ``active`` attribute before calling ``on_receive`` / ``on_send`` /
  ``on_ack`` (the methods check it too). When on, lines go through 64 KiB buffered files on the calling thread;
  call :meth:`MessageDebugLog.tick` about once a second to flush them and enforce the time limit.
- Commands (``handle_command``) answer with Bruce's texts. ``add_topic`` fails when the topic is already enabled or
  all topics are; ``del_topic`` fails when it is absent or all topics are enabled; failing to open or truncate the
  files fails the command with the reason.
- Bounded: at most :data:`MAX_TOPICS` topics are enabled one by one (``add_all_topics`` covers any number).
"""

from __future__ import annotations

import logging
import os
import time
from binascii import b2a_base64
from collections.abc import Callable
from typing import BinaryIO

from bruce.producer import Counters
from bruce.wire import UsageError

from .discard_log import topic_bytes

log = logging.getLogger(__name__)

FILE_NAMES = ("msg_receive", "msg_send", "msg_got_ack")
RECEIVE, SEND, GOT_ACK = range(3)
DEFAULT_TIME_LIMIT_S = 3600  # --msg_debug_time_limit
DEFAULT_BYTE_LIMIT = 2 * 1024**3  # --msg_debug_byte_limit
BUFFER_SIZE = 64 * 1024
MAX_TOPICS = 1000


def _b64(data: bytes | None) -> bytes:
    return b2a_base64(data, newline=False) if data else b""


def format_debug_line(ts: int, topic: bytes, key: bytes | None, value: bytes | None) -> bytes:
    """One debug log line, with its newline."""
    k, v = _b64(key), _b64(value)
    return b"ts: %d topic: %d[%s] key: %d[%s] value: %d[%s]\n" % (ts, len(topic), topic, len(k), k, len(v), v)


class MessageDebugLog:
    """Per-topic message debug logging, switched on and off by HTTP commands."""

    def __init__(
        self,
        debug_dir: str,
        *,
        time_limit_s: float = DEFAULT_TIME_LIMIT_S,
        byte_limit: int = DEFAULT_BYTE_LIMIT,
        counters: Counters | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not debug_dir.startswith("/"):
            raise UsageError(f"debug directory must be an absolute path: {debug_dir!r}")
        if time_limit_s <= 0 or byte_limit <= 0:
            raise UsageError(f"message debug limits must be positive: {time_limit_s} s, {byte_limit} bytes")
        self.debug_dir = debug_dir.rstrip("/") or "/"
        self.paths = tuple(os.path.join(self.debug_dir, name) for name in FILE_NAMES)
        self.time_limit_s = time_limit_s
        self.byte_limit = byte_limit
        self.counters = counters if counters is not None else Counters()
        self.clock = clock
        self.active = False  # the one attribute the daemon checks per message
        self._names: set[str] = set()  # enabled topics (when not all)
        self._all = False
        self._filter: frozenset[str] | None = frozenset()  # None: every topic
        self._files: list[BinaryIO] = []
        self._session_start = 0.0
        self._bytes_left = 0

    def start(self) -> None:
        """Delete the debug files a previous run left (Bruce does this at startup)."""
        self._delete_files()

    def close(self) -> None:
        """Flush and close the files (logging stops)."""
        self._close_files()
        self.active = False

    # -- per message -------------------------------------------------------------------------------------------------

    def on_receive(self, topic: str, key: bytes | None, value: bytes | None, ts: int) -> None:
        if self.active:
            self._log(RECEIVE, topic, key, value, ts)

    def on_send(self, topic: str, key: bytes | None, value: bytes | None, ts: int) -> None:
        if self.active:
            self._log(SEND, topic, key, value, ts)

    def on_ack(self, topic: str, key: bytes | None, value: bytes | None, ts: int) -> None:
        if self.active:
            self._log(GOT_ACK, topic, key, value, ts)

    def tick(self) -> None:
        """Flush buffered lines and enforce the time limit; call about once a second."""
        if not self.active:
            return
        if self.clock() - self._session_start >= self.time_limit_s:
            self._auto_off("time")
            return
        try:
            for f in self._files:
                f.flush()
        except OSError as e:
            self._fail(f"cannot write debug files in {self.debug_dir}: {e}")

    # -- commands ----------------------------------------------------------------------------------------------------

    def handle_command(self, command: str) -> str | None:
        """Run ``/msg_debug/<command>``; None when the command is unknown (the caller answers 404)."""
        if command == "get_topics":
            return self.get_topics()
        if command == "add_all_topics":
            return self.add_all_topics()
        if command == "del_all_topics":
            return self.del_all_topics()
        if command == "truncate_files":
            return self.truncate_files()
        if command.startswith("add_topic/"):
            return self.add_topic(command[len("add_topic/") :])
        if command.startswith("del_topic/"):
            return self.del_topic(command[len("del_topic/") :])
        return None

    def get_topics(self) -> str:
        if self._all:
            return "All message debug topics are currently enabled\n"
        if not self._names:
            return "No message debug topics are currently enabled\n"
        return "".join(f"topic: [{t}]\n" for t in sorted(self._names))

    def add_all_topics(self) -> str:
        error = self._set(all_topics=True, names=set())
        return (
            f"Failed to enable all message debug topics: {error}\n" if error else "All message debug topics enabled\n"
        )

    def del_all_topics(self) -> str:
        self._set(all_topics=False, names=set())
        return "All message debug topics disabled\n"

    def add_topic(self, topic: str) -> str:
        if not topic or self._all or topic in self._names:
            return f"Failed to enable debug topic [{topic}]\n"
        if len(self._names) >= MAX_TOPICS:
            return f"Failed to enable debug topic [{topic}]: {MAX_TOPICS} topics are enabled, the most there can be\n"
        error = self._set(all_topics=False, names=self._names | {topic})
        return f"Failed to enable debug topic [{topic}]: {error}\n" if error else f"Enabled debug topic [{topic}]\n"

    def del_topic(self, topic: str) -> str:
        if self._all or topic not in self._names:
            return f"Failed to disable debug topic [{topic}]\n"
        self._set(all_topics=False, names=self._names - {topic})
        return f"Disabled debug topic [{topic}]\n"

    def truncate_files(self) -> str:
        try:
            for f in self._files:
                f.flush()
                os.ftruncate(f.fileno(), 0)
            if not self._files:
                for path in self.paths:
                    if os.path.exists(path):
                        os.truncate(path, 0)
        except OSError as e:
            log.error("cannot truncate message debug files in %s: %s", self.debug_dir, e)
            return f"Failed to truncate message debug files: {e}\n"
        return "Message debug files truncated\n"

    # -- internals ---------------------------------------------------------------------------------------------------

    def _set(self, *, all_topics: bool, names: set[str]) -> str | None:
        """Apply a new topic selection; an off-to-on change starts a session. Returns an error text or None."""
        turning_on = (all_topics or bool(names)) and not self.active
        if turning_on:
            error = self._open_session()
            if error:
                return error
        self._all, self._names = all_topics, names
        self._filter = None if all_topics else frozenset(names)
        if not all_topics and not names:
            self._close_files()
            self.active = False
        else:
            self.active = True
        return None

    def _open_session(self) -> str | None:
        self._close_files()
        try:
            os.makedirs(self.debug_dir, mode=0o700, exist_ok=True)  # the files hold message contents
            self._delete_files()
            for path in self.paths:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o660)
                self._files.append(os.fdopen(fd, "ab", buffering=BUFFER_SIZE))
        except OSError as e:
            self._close_files()
            log.error("cannot open message debug files in %s: %s", self.debug_dir, e)
            return str(e)
        self._session_start = self.clock()
        self._bytes_left = self.byte_limit
        return None

    def _log(self, index: int, topic: str, key: bytes | None, value: bytes | None, ts: int) -> None:
        topics = self._filter
        if topics is not None and topic not in topics:
            return
        if self.clock() - self._session_start >= self.time_limit_s:
            self._auto_off("time")
            return
        line = format_debug_line(ts, topic_bytes(topic), key, value)
        if len(line) > self._bytes_left:
            self._auto_off("bytes")
            return
        self._bytes_left -= len(line)
        try:
            self._files[index].write(line)
        except OSError as e:
            self._fail(f"cannot write {self.paths[index]}: {e}")

    def _auto_off(self, cause: str) -> None:
        self.counters.inc("MsgDebugAutoOff", labels=(("cause", cause),))
        limit = f"{self.time_limit_s} s" if cause == "time" else f"{self.byte_limit} bytes"
        log.warning("message debug logging turned itself off: the session reached its limit of %s", limit)
        self._set(all_topics=False, names=set())

    def _fail(self, why: str) -> None:
        self.counters.inc("MsgDebugWriteError")
        log.error("message debug logging turned off: %s", why)
        self._set(all_topics=False, names=set())

    def _close_files(self) -> None:
        files, self._files = self._files, []
        for path, f in zip(self.paths, files, strict=False):
            try:
                f.close()
            except OSError as e:
                log.error("cannot flush message debug file %s: %s", path, e)

    def _delete_files(self) -> None:
        for path in self.paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                log.error("cannot delete old message debug file %s: %s", path, e)
