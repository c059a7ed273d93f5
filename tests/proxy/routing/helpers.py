"""Shared pieces of the routing tests: messages, configs, a recording submit, a fake cluster view."""

from __future__ import annotations

import itertools
from types import SimpleNamespace as NS
from typing import Any

from bruce.producer.counters import Counters
from bruce.producer.metadata.cluster import ClusterView, build_view
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
from bruce.proxy.routing.router import Router

_timestamps = itertools.count(1_700_000_000_000)


def msg(
    topic: str, value: bytes | str, received: float = 0.0, *, key: bytes = b"", pk: int | None = None
) -> HeldMessage:
    """A daemon message received at ``received`` (monotonic seconds) with an unrelated client timestamp."""
    value = value.encode() if isinstance(value, str) else value
    return HeldMessage(topic, key, value, next(_timestamps), pk, received)


def limits(time_s: int | None = None, messages: int | None = None, nbytes: int | None = None) -> BatchLimits:
    """Batch limits with the time in whole seconds (exact in floating point, so boundaries are exact)."""
    return BatchLimits(time_ms=None if time_s is None else time_s * 1000, messages=messages, bytes=nbytes)


def config(
    *,
    named: dict[str, BatchLimits] | None = None,
    combined: str | None = None,
    default: TopicBatching | None = None,
    topics: dict[str, TopicBatching] | None = None,
    message_max_bytes: int = 1_000_000,
    compression: CompressionConfig | None = None,
    rate_limits: dict[str, RateLimit] | None = None,
) -> Config:
    """A Config with the given batching (default: disabled), and optionally compression and per-topic rate limits."""
    rate = RateLimitingConfig.unlimited()
    if rate_limits:
        rate = RateLimitingConfig(
            default_topic="unlimited",
            named_configs={"unlimited": RateLimit(1, None), **{f"limit_{t}": r for t, r in rate_limits.items()}},
            topic_configs={t: f"limit_{t}" for t in rate_limits},
        )
    return Config(
        batching=BatchingConfig(
            produce_request_data_limit=1024 * 1024,
            message_max_bytes=message_max_bytes,
            combined_topics=CombinedTopics(combined is not None, combined),
            default_topic=default or TopicBatching(TopicAction.DISABLE),
            named_configs=named or {},
            topic_configs=topics or {},
        ),
        compression=compression
        or CompressionConfig(default_topic="none", named_configs={"none": CompressionCodec(CompressionType.NONE)}),
        initial_brokers=(Broker("127.0.0.1"),),
        topic_rate_limiting=rate,
    )


class Submitted:
    """A recording ``submit``: every batch handed to the producer, in order."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[HeldMessage]]] = []

    def __call__(self, topic: str, messages: list[HeldMessage]) -> None:
        assert messages, "an empty batch was submitted"
        assert all(m.topic == topic for m in messages), "a batch mixes topics"
        self.batches.append((topic, list(messages)))

    def take(self) -> list[tuple[str, list[str]]]:
        """The batches since the last call, as (topic, [values])."""
        out = [(t, [m.value.decode() for m in ms]) for t, ms in self.batches]
        self.batches.clear()
        return out


def view(topics: dict[str, list[int | None]], *, errors: dict[str, int] | None = None) -> ClusterView:
    """A cluster view built from a Metadata answer: partition i of a topic is led by ``leaders[i]`` (None: no leader,
    error 5); ``errors`` gives topic-level error codes."""
    brokers = [NS(node_id=i, host="127.0.0.1", port=9000 + i) for i in (1, 2, 3)]
    answer = [
        NS(
            name=name,
            error_code=(errors or {}).get(name, 0),
            partitions=[
                NS(partition_index=i, leader_id=-1 if b is None else b, error_code=5 if b is None else 0)
                for i, b in enumerate(leaders)
            ],
        )
        for name, leaders in topics.items()
    ]
    return build_view(brokers, answer)


CLUSTER = {"good": [1, 2], "dead": [None, None], "half": [1, None]}


class Rig:
    """A router with unbatched topics, a swappable cluster view, and recorders for batches and discards."""

    def __init__(
        self, *, cluster: dict | None = CLUSTER, errors: dict[str, int] | None = None, **router_kw: Any
    ) -> None:
        cfg = router_kw.pop("cfg", None) or config()
        self.state = NS(view=None if cluster is None else view(cluster, errors=errors))
        self.out = Submitted()
        self.discards: list[tuple[DiscardReason, str, str]] = []
        self.counters = Counters()
        router_kw.setdefault("message_max_bytes", cfg.batching.message_max_bytes)
        self.router = Router(
            cluster=lambda: self.state.view,
            batcher=Batcher(cfg.batching_for, self.out),
            discard=self.discard,
            counters=self.counters,
            **router_kw,
        )

    def discard(self, m: HeldMessage, reason: DiscardReason) -> None:
        self.discards.append((reason, m.topic, m.value.decode()))  # type: ignore[attr-defined]

    def send(self, topic: str, value: str | bytes, now: float = 1.0, **kw: Any) -> None:
        self.router.route(msg(topic, value, now, **kw))

    def take_discards(self) -> list[tuple[DiscardReason, str, str]]:
        out, self.discards = self.discards, []
        return out
