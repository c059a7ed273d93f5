"""Pipelining headroom of idempotent produce at the wire level: batches sent to tansu through the delaying proxy
(tests/netproxy.py) with 1 and with 5 in flight on one partition, each sequenced by
bruce.producer.idempotence.sequence_state and encoded by bruce.wire. Prints batches/s and messages/s for both and their
ratio, measured in the same run.

Usage: python bench/idempotence_bench.py [--latency 20] [--batches 200] [--batch-size 100] [--size 100]

Not the producer's figure (``bench/producer_bench.py --latency`` measures the producer): the ceiling on this path
without a producer's own work, and a check that tansu stores pipelined idempotent batches in order (every value is
read back and compared).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kafkaclient import KafkaClient
from netproxy import proxy_in_thread

from bruce.producer.acks import Action, classify
from bruce.producer.idempotence.sequence_state import Idempotence
from bruce.proxy.daemon.embedded import EmbeddedBroker
from bruce.wire.protocol.init_producer_id import InitProducerIdRequest
from bruce.wire.protocol.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from bruce.wire.recordbatch import build_record_batch


def run(address: str, topic: str, in_flight: int, batches: int, batch_size: int, size: int) -> float:
    """Seconds to get ``batches`` batches acknowledged with at most ``in_flight`` outstanding."""
    idem = Idempotence(max_in_flight=in_flight)
    tp = (topic, 0)
    with KafkaClient.connect(address) as client:
        idem.init_request()
        idem.on_init_response(client.request(InitProducerIdRequest()))
        outstanding = []
        sent = 0
        started = time.perf_counter()
        while sent < batches or outstanding:
            while sent < batches and idem.may_send(tp):
                values = [b"%08d-" % (sent * batch_size + i) + b"x" * (size - 9) for i in range(batch_size)]
                batch = idem.assign(tp, batch_size, values)
                data = build_record_batch(
                    [(None, v, 0, None) for v in values],
                    producer_id=batch.producer_id,
                    producer_epoch=batch.producer_epoch,
                    base_sequence=batch.base_sequence,
                )
                request = ProduceRequest((TopicProduceData(topic, (PartitionProduceData(0, data),)),), timeout_ms=5000)
                outstanding.append((batch, client.send(request)))
                sent += 1
            batch, request = outstanding.pop(0)
            code = client.receive(request).responses[0].partition_responses[0].error_code
            if idem.on_answer(batch, classify(code, legacy=False, idempotent=True)).action is not Action.OK:
                raise SystemExit(f"batch {batch.base_sequence} answered {code}")
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=20.0, help="ms added per direction")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args()
    with EmbeddedBroker() as broker:
        host, _, port = broker.address.rpartition(":")
        with proxy_in_thread(host, int(port), delay_ms=args.latency) as proxy:
            rates = {}
            for in_flight in (1, 5):
                topic = f"idempotence-bench-{in_flight}"
                broker.create_topic(topic, 1)
                seconds = run(proxy.address, topic, in_flight, args.batches, args.batch_size, args.size)
                with KafkaClient.connect(broker.address) as reader:
                    stored = reader.fetch_all(topic, 0, expected=args.batches * args.batch_size, max_rounds=500)
                expected = [b"%08d-" % i for i in range(args.batches * args.batch_size)]
                if [r.value[:9] for r in stored] != expected:
                    raise SystemExit(f"{in_flight} in flight: tansu did not store every message once, in order")
                rates[in_flight] = args.batches / seconds
                print(
                    f"{in_flight} in flight, {args.latency:g} ms each way: {rates[in_flight]:8.1f} batches/s "
                    f"{rates[in_flight] * args.batch_size:10.0f} msgs/s"
                )
            print(f"5 in flight vs 1: {rates[5] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
