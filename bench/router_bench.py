"""Router benchmark: CPU nanoseconds per message from the intake's hand-off to the producer's queues.

Messages (100-byte values, created beforehand: their cost is the intake's) go through ``Router.route`` →
``Batcher.add`` → a complete batch handed to ``submit``. Each row is run for AnyPartition messages and for
PartitionKey messages (a key per message). ``submit`` is either a no-op (router + batcher alone) or the producer's
own routing of the batch onto partition queues (``Ledger.admit`` + ``Dispatcher.route``: what ``Producer.submit`` does,
with no sockets), so the last rows are the daemon's whole routing cost per message inside the event loop. Each figure is
also given as a ratio to an empty method call per message measured in the same run, and as a share of the daemon's
5 µs per-message CPU budget (200,000 messages/s end to end).

Batching rows: ``combined`` is Bruce's shipped config (every topic in one combined batch, 10 s / 256 KiB); ``bursts
of 256`` routes the same through ``Router.route_many``, a burst per call, as the daemon's intake does (``one topic``:
every message of a burst on one topic and received at one time, as bench/proxy_bench.py sends them: the router
batches such runs in one step);
``per-topic`` batches of 1,000 messages; ``unbatched`` hands each message to the producer alone. ``rate limit`` adds
a per-topic rate limiter with a limit that is never reached.

    .venv/bin/python bench/router_bench.py            # 200,000 messages per run, best of 5
    .venv/bin/python bench/router_bench.py --quick    # a short run: checks that it runs
"""

from __future__ import annotations

import argparse
import gc
import time
from types import SimpleNamespace as NS

from bruce.producer.config import ProducerConfig
from bruce.producer.counters import Counters
from bruce.producer.dispatch.dispatcher import Dispatcher
from bruce.producer.metadata.cluster import build_view
from bruce.producer.reasons import DiscardReason
from bruce.proxy.config.model import (
    BatchingConfig,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    RateLimit,
    RateLimitingConfig,
    TopicAction,
    TopicBatching,
)
from bruce.proxy.messages.message import HeldMessage
from bruce.proxy.routing.batcher import Batcher
from bruce.proxy.routing.ratelimit import RateLimiter
from bruce.proxy.routing.router import Router

BUDGET_NS = 5000  # the daemon's CPU budget per message, all stages together
TOPICS = [f"topic-{i}" for i in range(8)]
PARTITIONS = 8


def _config(action: TopicAction, *, limited: bool = False) -> Config:
    named = {"latency": BatchLimits(time_ms=10_000, messages=None, bytes=256 * 1024)}
    named["thousand"] = BatchLimits(time_ms=10_000, messages=1000, bytes=None)
    default = {
        TopicAction.COMBINED_TOPICS: TopicBatching(TopicAction.COMBINED_TOPICS),
        TopicAction.PER_TOPIC: TopicBatching(TopicAction.PER_TOPIC, "thousand"),
        TopicAction.DISABLE: TopicBatching(TopicAction.DISABLE),
    }[action]
    rate = RateLimitingConfig.unlimited()
    if limited:
        rate = RateLimitingConfig(default_topic="big", named_configs={"big": RateLimit(1000, 10**9)})
    return Config(
        batching=BatchingConfig(
            produce_request_data_limit=1024 * 1024,
            message_max_bytes=1_000_000,
            combined_topics=CombinedTopics(True, "latency"),
            default_topic=default,
            named_configs=named,
        ),
        compression=CompressionConfig(
            default_topic="none", named_configs={"none": CompressionCodec(CompressionType.NONE)}
        ),
        initial_brokers=(Broker("127.0.0.1"),),
        topic_rate_limiting=rate,
    )


def _view():
    brokers = [NS(node_id=i, host="127.0.0.1", port=9000 + i) for i in (1, 2, 3)]
    topics = [
        NS(
            name=t,
            error_code=0,
            partitions=[NS(partition_index=p, leader_id=1 + p % 3, error_code=0) for p in range(PARTITIONS)],
        )
        for t in TOPICS
    ]
    return build_view(brokers, topics)


def _messages(n: int, keyed: bool) -> list[HeldMessage]:
    value = b"v" * 100
    return [
        HeldMessage(TOPICS[i % len(TOPICS)], b"", value, 1_700_000_000_000 + i, i if keyed else None, i * 5e-6)
        for i in range(n)
    ]


def _burst_messages(n: int, keyed: bool) -> list[HeldMessage]:
    """One topic; each 256 messages (a burst) received at one time, as the intake stamps a burst."""
    value = b"v" * 100
    return [
        HeldMessage(TOPICS[0], b"", value, 1_700_000_000_000 + i, i if keyed else None, (i // 256) * 256 * 5e-6)
        for i in range(n)
    ]


def _discard(msg: HeldMessage, reason: DiscardReason) -> None:
    raise AssertionError(f"the benchmark discarded a message: {reason}")


def _run_router(
    messages: list[HeldMessage], cfg: Config, submit_kind: str, limited: bool, burst: int = 0
) -> tuple[float, int]:
    """Route every message (one ``route`` call each, or ``route_many`` per ``burst`` messages as the intake hands
    them over); returns (seconds, messages that reached submit)."""
    view = _view()
    reached = [0]
    if submit_kind == "producer":
        dispatcher = Dispatcher(ProducerConfig(), Counters(), None)
        dispatcher.apply_view(view, 0.0)
        admit, route = dispatcher.ledger.admit, dispatcher.route

        def submit(topic: str, batch: list) -> None:
            admit(batch)
            route(topic, batch)
            reached[0] += len(batch)
    else:

        def submit(topic: str, batch: list) -> None:
            reached[0] += len(batch)

    limiter = None
    if limited:
        limiter = RateLimiter.from_limits(cfg.rate_limit_for, cfg.topic_rate_limiting.named_configs.values())
    batcher = Batcher(cfg.batching_for, submit)
    router = Router(
        cluster=lambda: view,
        batcher=batcher,
        discard=_discard,
        message_max_bytes=cfg.batching.message_max_bytes,
        rate_limiter=limiter,
    )
    route_one = router.route
    bursts = [messages[i : i + burst] for i in range(0, len(messages), burst)] if burst else []
    gc.collect()
    start = time.process_time()
    if burst:
        for chunk in bursts:
            router.route_many(chunk)
    else:
        for m in messages:
            route_one(m)
    batcher.flush_all()
    elapsed = time.process_time() - start
    return elapsed, reached[0]


def _baseline(messages: list[HeldMessage]) -> float:
    class Empty:
        def route(self, msg: HeldMessage) -> None:
            pass

    call = Empty().route
    start = time.process_time()
    for m in messages:
        call(m)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=200_000, help="messages per run (default 200000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per row; the best is shown (default 5)")
    ap.add_argument("--quick", action="store_true", help="20,000 messages, 2 runs: checks that it runs")
    args = ap.parse_args()
    n, repeat = (20_000, 2) if args.quick else (args.messages, args.repeat)

    rows = [
        ("combined", TopicAction.COMBINED_TOPICS, "none", False),
        ("combined, bursts of 256", TopicAction.COMBINED_TOPICS, "none", False),
        ("combined, bursts of 256, one topic", TopicAction.COMBINED_TOPICS, "none", False),
        ("per-topic", TopicAction.PER_TOPIC, "none", False),
        ("unbatched", TopicAction.DISABLE, "none", False),
        ("combined, rate limit", TopicAction.COMBINED_TOPICS, "none", True),
        ("combined + producer routing", TopicAction.COMBINED_TOPICS, "producer", False),
        ("unbatched + producer routing", TopicAction.DISABLE, "producer", False),
    ]
    shape = f"{len(TOPICS)} topics x {PARTITIONS} partitions"
    print(f"router benchmark: {n:,} messages of 100 bytes over {shape}, best of {repeat}")
    for keyed in (False, True):
        messages = _messages(n, keyed)
        one_topic = _burst_messages(n, keyed)
        base = min(_baseline(messages) for _ in range(repeat)) / n * 1e9
        kind = "PartitionKey" if keyed else "AnyPartition"
        print(f"{kind}: ratio to an empty method call per message ({base:.0f} ns)")
        for name, action, submit_kind, limited in rows:
            cfg = _config(action, limited=limited)
            times = []
            for _ in range(repeat):
                burst = 256 if "bursts" in name else 0
                batch = one_topic if "one topic" in name else messages
                elapsed, reached = _run_router(batch, cfg, submit_kind, limited, burst)
                assert reached == n, f"{name}: {reached} of {n} messages reached submit"
                times.append(elapsed)
            ns = min(times) / n * 1e9
            print(f"  {name:32s} {ns:7.0f} ns  {ns / base:5.1f}x  {ns / BUDGET_NS * 100:4.1f}% of the 5 µs budget")


if __name__ == "__main__":
    main()
