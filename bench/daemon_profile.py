"""Where the daemon's CPU goes, stage by stage: the summary of a ``bench/proxy_bench.py --profile DIR`` run.

The run samples both of the daemon's processes on CPU time (``bench/profile_hook/sitecustomize.py``: ``SIGPROF``
every 200 µs of CPU, the Python stack each time) and each process writes ``DIR/<pid>.json``. Each sample is given a
stage by its innermost frame in the package's own code (``proxy/``, ``producer/``, ``wire/``): time in the standard
library or a C call counts for the bruce function that called it. A sample taken at the first instruction of a
callback the event loop called is the loop's own C work (uvloop) that ran before the callback, so it counts as
"event loop". A sample taken in the hook's garbage-collector callback came during a collection. A stage's share of its
process's samples times that process's CPU per message (measured from ``/proc`` over the same run) gives its ns per
message.

    .venv/bin/python bench/proxy_bench.py --configs plain --no-peer --messages 500000 --profile /tmp/prof
    .venv/bin/python bench/daemon_profile.py /tmp/prof/plain --messages 501000 --loop-us 2.77 --reader-us 1.77
"""

from __future__ import annotations

import argparse
import json
import linecache
import sys
from pathlib import Path

# (path suffix, function name prefix or "", stage): the first rule matching the innermost package frame wins; a frame
# no rule matches is skipped for the next frame out.
READER = "intake reader process"
INTAKE = "parse, intake (datagram → message, budget, counters)"
RULES: list[tuple[str, str, str]] = [
    ("proxy/intake/intake_process.py", "", "hand-off (pipe read, unpickle)"),
    ("wire/datagram.py", "parse_datagram", INTAKE),
    ("proxy/intake/intake.py", "_spool", "spool"),
    ("proxy/intake/intake.py", "", INTAKE),
    ("proxy/intake/intake_burst.py", "_spool", "spool"),
    ("proxy/intake/intake_burst.py", "", INTAKE),
    ("proxy/messages/message.py", "", INTAKE),
    ("proxy/messages/budget.py", "try_reserve", INTAKE),
    ("proxy/messages/budget.py", "release", "ACK handling, outcomes"),
    ("proxy/routing/router.py", "", "route"),
    ("proxy/routing/ratelimit.py", "", "route"),
    ("proxy/routing/batcher.py", "", "batch"),
    ("proxy/daemon/daemon.py", "_submit", "producer queues (submit, partition)"),
    ("producer/producer.py", "submit", "producer queues (submit, partition)"),
    ("producer/queueing.py", "_submit", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "route", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "_route_one", "producer queues (submit, partition)"),
    ("producer/queues/ledger.py", "admit", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "discard_bad_timestamps", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "keyed_queue", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "next_sticky", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "seal", "producer queues (submit, partition)"),
    ("producer/dispatch/dispatcher.py", "mark_ready", "producer queues (submit, partition)"),
    ("producer/metadata/partitioner.py", "", "producer queues (submit, partition)"),
    ("producer/dispatch/responses.py", "", "ACK handling, outcomes"),
    ("producer/queues/ledger.py", "", "ACK handling, outcomes"),
    ("producer/acks.py", "", "ACK handling, outcomes"),
    ("proxy/accounting/outcomes.py", "", "ACK handling, outcomes"),
    ("proxy/accounting/discards.py", "", "ACK handling, outcomes"),
    ("producer/dispatch/dispatcher.py", "", "producer queues (submit, partition)"),
    ("producer/queues/partition_queue.py", "", "producer queues (submit, partition)"),
    ("producer/queues/request.py", "", "encode (record batches, request)"),
    ("producer/dispatch/sender.py", "_encode", "encode (record batches, request)"),
    ("wire/recordbatch.py", "", "encode (record batches, request)"),
    ("wire/messageset.py", "", "encode (record batches, request)"),
    ("wire/crc.py", "", "encode (record batches, request)"),
    ("wire/compression.py", "", "encode (record batches, request)"),
    ("wire/protocol/base.py", "encode", "encode (record batches, request)"),
    ("wire/protocol/base.py", "decode", "ACK handling, outcomes"),
    ("producer/transport/framing.py", "send_request", "send (frames, socket writes)"),
    ("producer/transport/framing.py", "", "ACK handling, outcomes"),
    ("producer/transport/broker_connection.py", "data_received", "ACK handling, outcomes"),
    ("producer/transport/broker_connection.py", "", "send (frames, socket writes)"),
    ("producer/dispatch/sender.py", "_outcome", "ACK handling, outcomes"),
    ("producer/dispatch/sender.py", "on_result", "ACK handling, outcomes"),
    ("producer/dispatch/sender.py", "", "send (frames, socket writes)"),
    ("proxy/routing/packed.py", "", "packing"),
    ("proxy/status", "", "status pages (the bench polls them)"),
    ("proxy/daemon/status_source.py", "", "status pages (the bench polls them)"),
    ("producer/transport/health.py", "", "status pages (the bench polls them)"),
    ("producer/counters.py", "", "counters"),
]
PACKAGE = ("/proxy/", "/producer/", "/wire/")
LOOP = "event loop (uvloop, timers, tasks)"
GC = "garbage collector"
STARTUP = "start-up and shut-down (imports, set-up)"
STAGES = [
    "hand-off (pipe read, unpickle)",
    INTAKE,
    "spool",
    "route",
    "batch",
    "producer queues (submit, partition)",
    "encode (record batches, request)",
    "send (frames, socket writes)",
    "ACK handling, outcomes",
    "packing",
    "counters",
    "status pages (the bench polls them)",
    "other daemon code",
    GC,
    LOOP,
]


def reader_stage(stack: list[list]) -> str:
    """A sample of the reader process: by the line of ``forward`` it was on."""
    if stack[0][1] == "_on_gc":
        return GC
    for filename, func, line, _ in stack:
        if filename.endswith("proxy/intake/intake_reader.py") and func == "forward":
            text = linecache.getline(filename, line)
            if "recv(" in text:
                return "reader: recv (system calls)"
            if "dumps(" in text:
                return "reader: pickle a burst"
            if "write(" in text or "view" in text:
                return "reader: pipe write"
            return "reader: its loop"
    if any("importlib" in f or func == "<module>" for f, func, _, _ in stack):
        return STARTUP
    return "reader: other"


def daemon_stage(stack: list[list]) -> str:
    """A sample of the event loop's process (module doc): the first rule matching a package frame, innermost first."""
    _, func, _, start = stack[0]
    if func == "_on_gc":
        return GC  # the signal came during a collection (bench/profile_hook)
    if start and (len(stack) == 1 or "asyncio" in stack[1][0] or stack[1][0].endswith("producer/aio.py")):
        return LOOP
    if not any("asyncio" in f for f, _, _, _ in stack):
        return STARTUP  # not under the event loop: imports, set-up before it runs, shut-down after
    ours = False
    for filename, func, _, _ in stack:
        if not any(p in filename for p in PACKAGE):
            continue
        for suffix, prefix, stage in RULES:
            if suffix in filename and func.startswith(prefix):
                return stage
        if filename.endswith(("proxy/daemon/daemon.py", "proxy/daemon/cli.py", "producer/aio.py")):
            break  # the daemon's tasks themselves: what they call matched no rule
        ours = True
    return "other daemon code" if ours else LOOP


def load(directory: Path) -> dict[str, dict]:
    """The per-process sample files of one run: ``{"daemon": ..., "reader": ...}``."""
    out: dict[str, dict] = {}
    for path in sorted(directory.glob("*.json")):
        body = json.loads(path.read_text())
        role = "reader" if any("intake_reader" in a for a in body["argv"]) else "daemon"
        out[role] = body
    return out


def stage_table(directory: Path, messages: int, loop_us: float, reader_us: float) -> list[dict]:
    """Rows ``{process, stage, samples, share, ns_per_msg}``: each process's samples (start-up and shut-down left
    out) shared out over its CPU µs per message."""
    rows: list[dict] = []
    for role, classify, us in (("reader", reader_stage, reader_us), ("daemon", daemon_stage, loop_us)):
        body = load(directory).get(role)
        if body is None:
            continue
        counts: dict[str, int] = {}
        for stack, n in body["stacks"]:
            stage = classify(stack)
            counts[stage] = counts.get(stage, 0) + n
        counts.pop(STARTUP, None)
        total = sum(counts.values()) or 1
        order = STAGES if role == "daemon" else sorted(counts)
        for stage in order + [s for s in counts if s not in order]:
            if stage in counts:
                share = counts[stage] / total
                process = READER if role == "reader" else "event loop process"
                rows.append(
                    {
                        "process": process,
                        "stage": stage,
                        "samples": counts[stage],
                        "share": share,
                        "ns_per_msg": share * us * 1000,
                    }
                )
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'process':<22} {'stage':<45} {'samples':>8} {'share':>7} {'ns/msg':>8}")
    for r in rows:
        print(f"{r['process']:<22} {r['stage']:<45} {r['samples']:>8} {r['share']:>7.1%} {r['ns_per_msg']:>8.0f}")
    print(
        f"{'':<22} {'all':<45} {sum(r['samples'] for r in rows):>8} {'':>7} {sum(r['ns_per_msg'] for r in rows):>8.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, help="the --profile directory of one configuration")
    p.add_argument("--messages", type=int, required=True)
    p.add_argument("--loop-us", type=float, required=True, help="the event loop process's CPU µs per message")
    p.add_argument("--reader-us", type=float, required=True, help="the reader process's CPU µs per message")
    a = p.parse_args(argv)
    print_table(stage_table(a.directory, a.messages, a.loop_us, a.reader_us))
    return 0


if __name__ == "__main__":
    sys.exit(main())
