"""``to_bruce``: send messages to the bruce daemon from the command line (Bruce's ``to_bruce`` options).

    to_bruce --topic clicks --value "hello"         # to the daemon's default socket
    to_bruce --socket_path /var/run/bruce/bruce.socket --topic clicks --value "hello"
    seq 1 100 | to_bruce --socket_path bruce.socket --topic numbers --stdin --count 5 --seq --pad 4
    to_bruce --socket_path bruce.socket --topic t --partition_key 7 --key k --value v --count 100000 --print 10000

Rules:
- Options and their meaning are Bruce's: ``--partition_key N`` sends PartitionKey datagrams (else AnyPartition);
  ``--value`` and ``--stdin`` exclude each other; ``--seq`` prefixes each value with its number (from 1, zero-padded
  to ``--pad`` digits) and a space; ``--interval`` spaces sends by that many microseconds (0: flat out); ``--bad``
  writes Size = length - 1 so the daemon discards the datagram as malformed; ``--print N`` reports every Nth message.
- Unlike Bruce, ``--stdin`` is read once and reused for every message (Bruce read it again per message, so the
  second and later values were empty).
- ``--nonblocking``: a full socket does not wait; the message is dropped and counted (EAGAIN), and the count is
  reported at the end.
- Refused before anything is sent (exit 2, the reason named): a ``--topic`` Kafka would refuse
  (:mod:`bruce.wire.topic_name`), and a datagram larger than the daemon's ``--max_input_msg_size`` (65536 bytes,
  its default; ``--max_input_msg_size`` here when the daemon has another). ``--unchecked`` sends them anyway, to test
  the daemon's own checks (BAD_TOPIC_NAME, LONG_MSG).
- A failure after some messages were sent says how many of ``--count`` were.
- ``--stdin`` reads at most 16 MiB (the daemon's largest ``--max_input_msg_size``); more is an error.
- ``--socket_path`` defaults to the daemon's default socket (``$XDG_RUNTIME_DIR/bruce.socket``, else
  ``/tmp/bruce-<uid>/bruce.socket``; Bruce's ``to_bruce`` required it). ``--key`` defaults to empty, which the daemon
  sends to Kafka as no key (null), as Bruce does.
- Says what it did: one line on stderr at the end (``N messages sent to PATH (topic T)``), unless ``-q``; drops on a
  full socket are reported with the kernel queue length (``net.unix.max_dgram_qlen``) and how to raise it.
- Exit status: 0 all sent; 1 an error (no daemon, message too large for the kernel, ...); 2 bad options, a topic
  name Kafka refuses, a datagram over the limit; 3 some messages dropped
  because the socket was full (``--nonblocking``); 130 interrupted (Ctrl-C), with how many were sent.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time

from bruce.wire import LEGAL, BruceError, build_any_partition, build_partition_key, topic_name_problem

from .client import DEFAULT_MAX_DATAGRAM_SIZE, BruceClient, SocketFullError, default_socket_path, now_ms

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_DROPPED = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # the shell's status for SIGINT
MAX_STDIN = 16 * 1024 * 1024  # the largest datagram the daemon can be configured to take
QLEN_PATH = "/proc/sys/net/unix/max_dgram_qlen"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="to_bruce", description="Send messages to the bruce daemon.")
    p.add_argument(
        "--socket_path",
        default=None,
        metavar="PATH",
        help="the daemon's UNIX datagram socket (default: the daemon's default, $XDG_RUNTIME_DIR/bruce.socket, "
        "else /tmp/bruce-<uid>/bruce.socket)",
    )
    p.add_argument("--topic", required=True, help="Kafka topic")
    p.add_argument(
        "--partition_key", type=_uint32, metavar="N", help="send PartitionKey messages (partition = N mod partitions)"
    )
    p.add_argument("--key", default="", help="message key (default: empty, which Kafka receives as no key)")
    value = p.add_mutually_exclusive_group()
    value.add_argument("--value", default="", help="message value")
    value.add_argument("--stdin", action="store_true", help="read the message value from standard input")
    p.add_argument("--count", type=_natural, default=1, help="number of messages to send (default 1)")
    p.add_argument(
        "--interval", type=_natural, default=0, metavar="MICROSECONDS", help="time between messages (0: flat out)"
    )
    p.add_argument("--seq", action="store_true", help="prefix each value with its number (from 1) and a space")
    p.add_argument("--pad", type=_natural, default=0, metavar="N", help="zero-pad the --seq number to N digits")
    p.add_argument("--bad", action="store_true", help="send malformed datagrams (Size field one too small)")
    p.add_argument("--print", type=_natural, default=0, metavar="N", help="print a progress line every Nth message")
    p.add_argument("--nonblocking", action="store_true", help="drop (and count) messages when the socket is full")
    p.add_argument(
        "--max_input_msg_size",
        type=_natural,
        default=DEFAULT_MAX_DATAGRAM_SIZE,
        metavar="BYTES",
        help="the daemon's --max_input_msg_size: larger datagrams are refused here "
        f"(default {DEFAULT_MAX_DATAGRAM_SIZE}, the daemon's default)",
    )
    p.add_argument(
        "--unchecked",
        action="store_true",
        help="send topic names Kafka refuses and datagrams over --max_input_msg_size anyway (to test the daemon)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no confirmation line at the end")
    return p


def _natural(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return n


def _uint32(text: str) -> int:
    try:
        n = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (decimal, or 0x... hexadecimal)") from None
    if not 0 <= n < 2**32:
        raise argparse.ArgumentTypeError(f"must be within 0..4294967295: {text}")
    return n - 2**32 if n >= 2**31 else n  # the same 32 bits as the wire's signed int32


def main(argv: list[str] | None = None) -> int:
    """Run ``to_bruce`` with ``argv`` (default: the command line); returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse printed the problem
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    sent = dropped = 0
    try:
        value = sys.stdin.buffer.read(MAX_STDIN + 1) if args.stdin else args.value.encode()
        if len(value) > MAX_STDIN:
            print(
                f"to_bruce: standard input holds more than {MAX_STDIN} bytes: too much for a datagram", file=sys.stderr
            )
            return EXIT_ERROR
        key, topic = args.key.encode(), args.topic.encode()
        if not args.unchecked and (refusal := _refusal(args, topic, key, value)):
            print(f"to_bruce: {refusal}", file=sys.stderr)
            return EXIT_USAGE
        socket_path = args.socket_path or default_socket_path()
        due = time.monotonic()
        with BruceClient(socket_path, blocking=not args.nonblocking, max_datagram_size=None) as client:
            for n in range(1, args.count + 1):
                body = (str(n).zfill(args.pad).encode() + b" " + value) if args.seq else value
                if args.partition_key is None:
                    datagram = build_any_partition(topic, body, key, timestamp=now_ms())
                else:
                    datagram = build_partition_key(
                        topic, body, key, partition_key=args.partition_key, timestamp=now_ms()
                    )
                if args.bad:
                    datagram = struct.pack(">i", len(datagram) - 1) + datagram[4:]
                if args.interval:
                    delay = due - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    due = time.monotonic() + args.interval / 1e6
                try:
                    client.send_datagram(datagram)
                    sent += 1
                except SocketFullError:
                    dropped += 1
                if args.print and n % args.print == 0:
                    print(f"{n} messages written", flush=True)
    except BruceError as e:
        done = f"; {sent} of {args.count} messages sent before the failure" if args.count > 1 else ""
        print(f"to_bruce: {e}{done}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"to_bruce: interrupted; {sent} of {args.count} messages sent", file=sys.stderr)
        return EXIT_INTERRUPTED
    if dropped:
        print(
            f"to_bruce: {dropped} of {args.count} messages dropped: the socket was full (EAGAIN); {sent} sent. "
            + _queue_hint(),
            file=sys.stderr,
        )
        return EXIT_DROPPED
    if not args.quiet:
        print(f"to_bruce: {_messages(sent)} sent to {socket_path} (topic {args.topic})", file=sys.stderr)
    return EXIT_OK


def _refusal(args: argparse.Namespace, topic: bytes, key: bytes, value: bytes) -> str | None:
    """Why the daemon would discard these messages (a topic name Kafka refuses, a datagram over its limit), or None."""
    problem = topic_name_problem(args.topic)
    if problem is not None:
        return f"--topic {args.topic!r} is not a valid Kafka topic name: {problem} ({LEGAL}); --unchecked sends it"
    body = len(value) + (len(str(args.count).zfill(args.pad)) + 1 if args.seq else 0)  # the longest --seq value
    if args.partition_key is None:
        size = len(build_any_partition(topic, b"", key, timestamp=0)) + body
    else:
        size = len(build_partition_key(topic, b"", key, partition_key=args.partition_key, timestamp=0)) + body
    if size <= args.max_input_msg_size:
        return None
    default = " by default" if args.max_input_msg_size == DEFAULT_MAX_DATAGRAM_SIZE else ""
    return (
        f"the datagram would be {size} bytes (value {body}, key {len(key)}, topic {len(topic)}): over the daemon's "
        f"--max_input_msg_size ({args.max_input_msg_size} bytes{default}), which discards it as LONG_MSG; give "
        "--max_input_msg_size BYTES when the daemon takes more, --unchecked to send it anyway"
    )


def _messages(n: int) -> str:
    return f"{n} message" + ("" if n == 1 else "s")


def _queue_hint() -> str:
    """Why a non-blocking send finds the socket full, and what to do about it."""
    try:
        with open(QLEN_PATH) as file:
            now = f" (now {int(file.read())})"
    except (OSError, ValueError):
        now = ""
    return (
        f"The kernel queues only net.unix.max_dgram_qlen{now} + 1 datagrams per socket: raise it "
        "(sysctl -w net.unix.max_dgram_qlen=512, then restart bruce so its socket gets the new length), "
        "or leave out --nonblocking to wait for room."
    )


if __name__ == "__main__":
    sys.exit(main())
