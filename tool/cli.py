"""``bruce-wire``: the command line. One subcommand per input: ``pcap``, ``segment``, ``spool``, ``datagram``,
``plog``.

Rules:
- Exit status: 0 when everything decoded, 1 when something did not (each such frame, batch or record reported where
  it is), 2 for a usage error (bad options, a file that cannot be opened, input that is not of the kind asked for,
  ``pcap`` without dpkt, which the ``tools`` extra installs).
- Never a traceback: bad input is reported and the command goes on; a broken pipe (``| head``) ends it quietly.
- Output is written as it is produced; with input from a pipe (``-``) each message is flushed as it completes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import BinaryIO

USAGE = 2
TOOLS_EXTRA = "bruce-wire pcap needs dpkt, which the tools extra installs: pip install 'bruce-kafka[tools]'"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # argparse's declares NoReturn; so does this
        self.print_usage(sys.stderr)
        sys.stderr.write(f"bruce-wire: {message}\n")
        raise SystemExit(USAGE)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bruce-wire", description="Decode Kafka captures, log segments, bruce's spool and datagrams.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    pcap = sub.add_parser("pcap", help="decode the Kafka traffic of a pcap or pcapng capture ('-': standard input)")
    pcap.add_argument("file", help="capture file, or - for standard input (tcpdump -U -w - ... | bruce-wire pcap -)")
    pcap.add_argument("--json", action="store_true", help="newline-delimited JSON, one object per request or answer")
    pcap.add_argument("--stats", action="store_true", help="only counts, bytes, latencies and errors per API")
    pcap.add_argument("--api", action="append", default=[], help="only this API (name or key; repeatable)")
    pcap.add_argument("--topic", action="append", default=[], help="only messages about this topic (repeatable)")
    pcap.add_argument("--conn", action="append", default=[], help="only connections whose name contains this")
    pcap.add_argument("--port", type=int, help="decode connections to this port as Kafka whatever their shape")
    pcap.add_argument("--plog", type=int, action="append", default=[], help="decode UDP and TCP to this port as plog")
    pcap.add_argument("--max-frame", type=int, default=100 << 20, help="largest frame believed (bytes)")

    seg = sub.add_parser("segment", help="a Kafka log segment (.log), with its .index and .timeindex if present")
    seg.add_argument("file")
    seg.add_argument("--json", action="store_true")

    spool = sub.add_parser("spool", help="what bruce's spool directory and batch journal hold")
    spool.add_argument("dir")
    spool.add_argument("--json", action="store_true")
    spool.add_argument("--records", action="store_true", help="every record held, not only the counts")

    dg = sub.add_parser("datagram", help="decode a bruce input datagram (file, --hex, or standard input)")
    dg.add_argument("file", nargs="?", default="-")
    dg.add_argument("--hex", help="the datagram as hex digits")
    dg.add_argument("--json", action="store_true")
    dg.add_argument("--encode", action="store_true", help="build a datagram from JSON (file or stdin) to stdout")
    dg.add_argument("--output-hex", action="store_true", help="with --encode: write hex digits, not bytes")

    plog = sub.add_parser("plog", help="decode a plog UDP packet (file, --hex, or standard input)")
    plog.add_argument("file", nargs="?", default="-")
    plog.add_argument("--hex", help="the packet as hex digits")
    plog.add_argument("--json", action="store_true")
    return p


def _pcap(args: argparse.Namespace) -> int:
    try:
        import dpkt  # noqa: F401  # only captures need it: the other commands run without the tools extra
    except ImportError:
        sys.stderr.write(f"bruce-wire: {TOOLS_EXTRA}\n")
        return USAGE
    from .capture import CaptureError
    from .pcap_cmd import PcapOptions, PcapRun

    live = args.file == "-"
    options = PcapOptions(
        json=args.json,
        stats=args.stats,
        apis=frozenset(a.lower() for a in args.api),
        topics=frozenset(args.topic),
        conns=tuple(args.conn),
        port=args.port,
        plog_ports=frozenset(args.plog),
        max_frame=args.max_frame,
        live=live,
    )
    stream: BinaryIO
    try:
        stream = sys.stdin.buffer if live else open(args.file, "rb")  # noqa: SIM115  # closed below
    except OSError as e:
        sys.stderr.write(f"bruce-wire: cannot open {args.file}: {e.strerror}\n")
        return USAGE
    try:
        run = PcapRun(options, sys.stdout)
        result = run.run(stream)
    except CaptureError as e:
        sys.stderr.write(f"bruce-wire: {args.file}: {e}\n")
        return USAGE
    finally:
        if not live:
            stream.close()
    sys.stdout.flush()
    for note in result.notes:
        sys.stderr.write(f"bruce-wire: {note}\n")
    return result.status


def main(argv: Sequence[str] | None = None) -> int:
    """The ``bruce-wire`` command."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "pcap":
            return _pcap(args)
        if args.command == "segment":
            from .segment import main as segment_main

            return segment_main(args)
        if args.command == "spool":
            from .spool import main as spool_main

            return spool_main(args)
        if args.command == "datagram":
            from .datagram import main as datagram_main

            return datagram_main(args)
        from .datagram import plog_main

        return plog_main(args)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the reader went away: nothing more to say, and no error at exit
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
