"""Wire-library hot paths: datagram parsing, message-set building, checksums. Prints figures and peer ratios.

Record batches have their own: ``bench/recordbatch_bench.py``.

Message sets are built by the C encoder when the extension is built (``BRUCE_NO_EXTENSIONS=1``: the Python builder).

Usage: ``python bench/wire_bench.py [--quick]``. Figures are the best of several rounds (the machine is shared and
noisy); compare the ratios printed in one run rather than absolute times across runs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from kafka.record._crc32c import crc as kafka_python_crc32c
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from bruce.wire.compression import Codec
from bruce.wire.crc import crc32, crc32c, crc32c_crcmod
from bruce.wire.datagram import build_any_partition, parse_datagram, parse_datagram_schema
from bruce.wire.messageset import MESSAGE_SET, build_message_set, build_message_set_columns, spec_entry
from bruce.wire.speedups import message_set as c_message_set

c_crc32: Callable[[bytes], int] | None = None
if c_message_set is not None:  # the extension is in use (not BRUCE_NO_EXTENSIONS=1)
    from bruce.wire._speedups import crc32 as c_crc32

VALUE = bytes(range(100))
BLOCK = bytes(range(256)) * 256  # 64 KiB


def best_ns(fn: Callable[[], object], *, calls: int, rounds: int) -> float:
    """Best time per call over ``rounds`` rounds of ``calls`` calls, in nanoseconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def datagram_figures(scale: int, rounds: int) -> None:
    dg = build_any_partition("bench-topic", VALUE, timestamp=1_700_000_000_000)
    fast = best_ns(lambda: parse_datagram(dg), calls=2000 * scale, rounds=rounds)
    spec = best_ns(lambda: parse_datagram_schema(dg), calls=50 * scale, rounds=rounds)
    print(
        f"datagram parse+validate (AnyPartition, 100-byte value): {fast:8.0f} ns   (construct spec: {spec:.0f} ns, "
        f"{spec / fast:.0f}x slower)"
    )


def message_set_figures(scale: int, rounds: int) -> None:
    n = 1000
    messages = [(None, VALUE)] * n
    ours = best_ns(lambda: build_message_set(messages, magic=0), calls=scale, rounds=rounds) / n

    def kafka_python() -> bytes:
        builder = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 24)
        for offset in range(n):
            builder.append(offset, timestamp=None, key=None, value=VALUE)
        return builder.build()

    peer = best_ns(kafka_python, calls=scale, rounds=rounds) / n
    entries = {"entries": [spec_entry(i, 0, 0, None, VALUE) for i in range(100)]}
    spec = best_ns(lambda: MESSAGE_SET.build(entries), calls=1, rounds=rounds) / 100
    print(
        f"message set build (magic 0, uncompressed, 100-byte values): {ours:8.0f} ns/message   "
        f"(kafka-python: {peer:.0f} ns, {peer / ours:.1f}x; construct spec: {spec:.0f} ns, {spec / ours:.0f}x)"
    )
    keys, values, stamps = [None] * n, [VALUE] * n, [1_700_000_000_000 + i // 100 for i in range(n)]
    for magic, codec in ((1, Codec.NONE), (1, Codec.SNAPPY)):
        columns = best_ns(
            lambda: build_message_set_columns(keys, values, stamps, magic=magic, codec=codec),  # noqa: B023 (called here)
            calls=scale,
            rounds=rounds,
        )
        print(f"message set columns (magic {magic}, {codec.name.lower()}, the daemon's): {columns / n:8.0f} ns/message")


def crc_figures(scale: int, rounds: int) -> None:
    calls = 20 * scale
    mb = len(BLOCK) / 1e6
    for name, fn in [
        ("CRC-32 (zlib)", lambda: crc32(BLOCK)),
        *([("CRC-32 (bruce.wire C, message sets')", lambda: c_crc32(BLOCK))] if c_crc32 else []),
        ("CRC-32C (crc32c package)", lambda: crc32c(BLOCK)),
        ("CRC-32C (crcmod fallback)", lambda: crc32c_crcmod(BLOCK)),
        ("CRC-32C (kafka-python, pure Python)", lambda: kafka_python_crc32c(BLOCK)),
    ]:
        slow = "crcmod" in name or "pure" in name
        ns = best_ns(fn, calls=max(1, calls // 50) if slow else calls, rounds=rounds)
        print(f"{name + ' on 64 KiB:':48s} {mb / (ns / 1e9) / 1000:8.2f} GB/s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few iterations only (for tests)")
    args = parser.parse_args(argv)
    scale, rounds = (1, 1) if args.quick else (30, 7)
    datagram_figures(scale, rounds)
    message_set_figures(scale, rounds)
    crc_figures(scale, rounds)


if __name__ == "__main__":
    main()
