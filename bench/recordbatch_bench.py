"""RecordBatch v2 build and decode cost, against peers in the same run.

Prints ns per record to build one batch of 100-byte values (uncompressed and lz4) with bruce.wire's fast builder, its
columns entry (the producer's and the daemon's: C records when the extension is built; BRUCE_NO_EXTENSIONS=1 for the
Python builder), its construct schema, kafka-python (pure Python) and aiokafka (C extension), and the same to decode
an lz4 batch (plus bruce.wire's columnar decoder, ``decode_columns``: C when the extension is built).
Ratios compare within this run. Figures to reach: <= 2 us per record to build or decode. Checksum throughput is in
``bench/wire_bench.py``.

Usage: python bench/recordbatch_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from bruce.wire.columns import decode_columns
from bruce.wire.compression import Codec
from bruce.wire.recordbatch import (
    build_record_batch,
    build_record_batch_columns,
    build_record_batch_with_schema,
    build_value_batch,
    decode_record_batch,
    decode_record_batch_with_schema,
)

VALUE = bytes(range(100))
TIMESTAMP = 1_700_000_000_000


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs (the machine is shared and noisy)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def build_peers(count: int, codec: Codec) -> dict[str, Callable[[], object]]:
    records = [(None, VALUE, TIMESTAMP + i, None) for i in range(count)]
    keys, values, stamps = [None] * count, [VALUE] * count, [TIMESTAMP + i for i in range(count)]

    def peer(builder_cls) -> Callable[[], object]:
        def build() -> object:
            b = builder_cls(magic=2, compression_type=int(codec), is_transactional=False, producer_id=-1,
                            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)  # fmt: skip
            for i in range(count):
                b.append(i, timestamp=TIMESTAMP + i, key=None, value=VALUE, headers=[])
            return b.build()

        return build

    return {
        "bruce fast builder": lambda: build_record_batch(records, codec=codec),
        "bruce column builder": lambda: build_value_batch(values, stamps, codec=codec),  # send_many's, send's chunks
        "bruce columns (C records)": lambda: build_record_batch_columns(keys, values, stamps, codec=codec),  # daemon's
        "bruce schema (construct)": lambda: build_record_batch_with_schema(records, codec=codec),
        "kafka-python": peer(KafkaPythonBuilder),
        "aiokafka (C)": peer(AioBuilder),
    }


def bench_build(count: int, repeat: int) -> None:
    for codec in (Codec.NONE, Codec.LZ4):
        print(f"build one batch of {count} x 100-byte values, {codec.name.lower()}: ns per record")
        results = {}
        for name, fn in build_peers(count, codec).items():
            runs = 1 if "schema" in name else repeat
            results[name] = best_seconds(fn, runs) / count * 1e9
        ours = results["bruce fast builder"]
        for name, ns in results.items():
            print(f"  {name:26s} {ns:10.0f} ns/record   {ns / ours:6.2f}x bruce")


def bench_decode(count: int, repeat: int) -> None:
    data = build_record_batch([(None, VALUE, TIMESTAMP + i, None) for i in range(count)], codec=Codec.LZ4)
    print(f"decode one lz4 batch of {count} x 100-byte values: ns per record")
    peers = {
        "bruce fast decoder": lambda: decode_record_batch(data),
        "bruce columns (C when built)": lambda: decode_columns(data),
        "bruce schema (construct)": lambda: decode_record_batch_with_schema(data),
        "kafka-python": lambda: list(KafkaPythonBatch(data)),
        "aiokafka (C)": lambda: list(AioBatch(data)),
    }
    results = {name: best_seconds(fn, 1 if "schema" in name else repeat) / count * 1e9 for name, fn in peers.items()}
    ours = results["bruce fast decoder"]
    for name, ns in results.items():
        print(f"  {name:26s} {ns:10.0f} ns/record   {ns / ours:6.2f}x bruce")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run that only checks the benchmark works")
    args = parser.parse_args()
    count, repeat = (50, 2) if args.quick else (1000, 30)
    bench_build(count, repeat)
    bench_decode(count, repeat)


if __name__ == "__main__":
    main()
