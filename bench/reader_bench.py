"""Reading a topic into Arrow columns outside Spark: bruce.spark's ``KafkaReader.read_arrow`` vs confluent-kafka's
Consumer building the same columns, side by side, to the same tansu broker. Prints rows/s and their ratio.

Usage: python bench/reader_bench.py [--rows 500000] [--size 100] [--codec none] [--repeat 3] [--quick]

The topic (one partition) is written once by bruce.producer (``send_many``, batches of up to 1 MiB, ``--codec``);
then each reader, in turns for ``--repeat`` rounds (the best counts), reads all of it into Arrow record batches of
the read schema of ``format("bruce")`` (key, value, topic, partition, offset, timestamp, timestampType):

- ``bruce read_arrow``: ``KafkaReader.read_arrow`` (Fetch, the columnar decoder, Arrow buffers wrapped as they are);
- ``confluent Consumer``: ``assign`` + ``consume(10_000)``, each batch of messages made into the same Arrow columns
  (``bench/spark_bench.py``'s peer, ``confluent_batch``, without Spark).

Every reader's row count and last offset are checked. Goal: bruce >= 3x confluent-kafka.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from spark_bench import confluent_batch

from bruce.producer import Producer, ProducerConfig
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.spark import KafkaReader
from bruce.spark.options import ClientConfig

TOPIC = "reader-bench"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


async def _fill(address: str, rows: int, size: int, codec: str) -> None:
    config = ProducerConfig(bootstrap_servers=(address,), compression_codec=codec)
    async with Producer(config) as producer:
        values = [str(i).rjust(size, "x").encode() for i in range(rows)]
        for low in range(0, rows, 50_000):
            await producer.send_many(TOPIC, values[low : low + 50_000], partition=0)


def read_bruce(address: str, rows: int) -> tuple[int, int]:
    count = last = 0
    with KafkaReader(ClientConfig((address,))) as kafka:
        for batch in kafka.read_arrow(TOPIC, 0, 0, rows, include_headers=False):
            count += batch.num_rows
            last = batch.column("offset")[-1].as_py()
    return count, last


def read_confluent(address: str, rows: int) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": address, "group.id": "reader-bench", "log_level": 3})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    count = offset = 0
    while offset < rows:
        msgs = [m for m in consumer.consume(10_000, 1.0) if m.error() is None and m.offset() < rows]
        if not msgs:
            continue
        offset = msgs[-1].offset() + 1
        count += confluent_batch(msgs, TOPIC, 0).num_rows
    consumer.close()
    return count, offset - 1


READERS = {"bruce read_arrow": read_bruce, "confluent Consumer": read_confluent}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--codec", choices=CODECS, default="none")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one round (keeps the script from rotting)")
    args = parser.parse_args(argv)
    rows, repeat = (20_000, 1) if args.quick else (args.rows, args.repeat)
    print(f"reading {rows:,} x {args.size}-byte rows ({args.codec}) into Arrow, one partition, tansu")
    best: dict[str, float] = {}
    with EmbeddedBroker() as broker:
        broker.create_topic(TOPIC, 1)
        asyncio.run(_fill(broker.address, rows, args.size, args.codec))
        for round_ in range(repeat):
            names = list(READERS)[round_ % 2 :] + list(READERS)[: round_ % 2]
            figures = []
            for name in names:
                started = time.perf_counter()
                count, last = READERS[name](broker.address, rows)
                rate = rows / (time.perf_counter() - started)
                if (count, last) != (rows, rows - 1):
                    raise RuntimeError(f"{name}: read {count} rows up to offset {last}, expected {rows}")
                best[name] = max(best.get(name, 0.0), rate)
                figures.append(f"{name} {rate:,.0f}")
            print(f"round {round_ + 1}: " + ", ".join(figures), flush=True)
    for name, rate in best.items():
        print(f"read   {name:20} {rate:12,.0f} rows/s")
    ratio = best["bruce read_arrow"] / best["confluent Consumer"]
    print(f"ratio  bruce read_arrow / confluent Consumer: {ratio:.2f}x (goal >= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
