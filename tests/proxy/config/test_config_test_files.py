"""The Bruce-format test configs (tests/data/) load into exactly the expected model and together use every element
and attribute of Bruce's format; their TOML renderings load to equal models; per-topic lookups resolve as Bruce's."""

from __future__ import annotations

import dataclasses
import pickle
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest
from config_files import COMBINED_CONF, PER_TOPIC_CONF

from bruce.proxy.config import (
    BatchingConfig,
    BatchingPolicy,
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
    load_config_file,
    load_toml,
    to_toml,
)
from bruce.proxy.config.xml_config import BRUCE_CONFIG, Items, Leaf, Node

KIB = 1024


def test_combined_conf_loads_to_the_expected_model() -> None:
    assert load_config_file(COMBINED_CONF) == Config(
        batching=BatchingConfig(
            named_configs={
                "interactive": BatchLimits(time_ms=100, messages=None, bytes=64 * KIB),
                "bulk": BatchLimits(time_ms=10000, messages=8 * KIB, bytes=512 * KIB),
            },
            produce_request_data_limit=800 * KIB,
            message_max_bytes=1_048_588,
            combined_topics=CombinedTopics(enabled=True, config="bulk"),
            default_topic=TopicBatching(TopicAction.COMBINED_TOPICS),  # config="" counts as absent
            topic_configs={},  # only a comment inside <topicConfigs>
        ),
        compression=CompressionConfig(
            named_configs={
                "snappy_over_1k": CompressionCodec(CompressionType.SNAPPY, min_size=KIB),
                "uncompressed": CompressionCodec(CompressionType.NONE, min_size=0),
            },
            size_threshold_percent=80,
            default_topic="snappy_over_1k",
            topic_configs={"already_compressed": "uncompressed"},
        ),
        topic_rate_limiting=RateLimitingConfig(
            named_configs={
                "drop_all": RateLimit(interval_ms=1, max_count=0),
                "no_limit": RateLimit(interval_ms=1, max_count=None),
                "steady": RateLimit(interval_ms=60000, max_count=5000),
                "burst": RateLimit(interval_ms=2000, max_count=KIB),
            },
            default_topic="steady",
            topic_configs={"debug_noise": "drop_all", "audit": "no_limit", "orders": "steady", "clicks": "burst"},
        ),
        initial_brokers=(Broker("kafka-1.invalid", 9092), Broker("kafka-2.invalid", 9092)),
    )


def test_per_topic_conf_loads_to_the_expected_model() -> None:
    config = load_config_file(PER_TOPIC_CONF)
    assert config.batching == BatchingConfig(
        named_configs={
            "quick": BatchLimits(time_ms=20, messages=100, bytes=300),
            "roomy": BatchLimits(time_ms=5, messages=None, bytes=16 * KIB),
        },
        produce_request_data_limit=64 * KIB,
        message_max_bytes=100 * KIB,
        combined_topics=CombinedTopics(enabled=True, config="quick"),
        default_topic=TopicBatching(TopicAction.PER_TOPIC, "roomy"),
        topic_configs={
            "alerts": TopicBatching(TopicAction.PER_TOPIC, "quick"),
            "metrics": TopicBatching(TopicAction.PER_TOPIC, "roomy"),
            "mixed": TopicBatching(TopicAction.COMBINED_TOPICS),
            "unbatched": TopicBatching(TopicAction.DISABLE),  # the config of a "disable" action is ignored
        },
    )
    assert config.compression == CompressionConfig(
        named_configs={
            "plain": CompressionCodec(CompressionType.NONE),
            "snappy_small": CompressionCodec(CompressionType.SNAPPY, 256),
            "snappy_large": CompressionCodec(CompressionType.SNAPPY, 2 * KIB),
        },
        size_threshold_percent=90,
        default_topic="plain",
        topic_configs={"alerts": "snappy_small", "metrics": "snappy_large"},
    )
    # No <topicRateLimiting>: Bruce builds an "unlimited" default.
    assert config.topic_rate_limiting == RateLimitingConfig(
        default_topic="unlimited", named_configs={"unlimited": RateLimit(interval_ms=1, max_count=None)}
    )
    assert config.initial_brokers == (Broker("broker-a.invalid", 9092), Broker("broker-b.invalid", 9093))


def test_the_test_configs_use_every_element_and_attribute_of_bruces_format() -> None:
    """Every element and attribute the XML loader knows (bar bruce-kafka's own <kafka>) appears in the test data."""
    used: set[tuple[str, str]] = set()
    for path in (COMBINED_CONF, PER_TOPIC_CONF):
        for element in ElementTree.parse(path).iter():
            used.add((element.tag, ""))
            used.update((element.tag, attribute) for attribute in element.attrib)
    known: set[tuple[str, str]] = set()

    def walk(tag: str, spec: object) -> None:
        known.add((tag, ""))
        if isinstance(spec, Node):
            for child_tag, (_, child) in spec.children.items():
                if child_tag != "kafka":
                    walk(child_tag, child)
        elif isinstance(spec, Items):
            if spec.named:
                known.add((spec.tag, "name"))
            walk(spec.tag, spec.item)
        elif isinstance(spec, Leaf):
            known.update((tag, attribute) for attribute in spec.attrs)

    walk("bruceConfig", BRUCE_CONFIG)
    assert known <= used, sorted(known - used)


def test_a_config_is_a_value() -> None:
    config = load_config_file(COMBINED_CONF)
    assert hash(config) == hash(load_config_file(COMBINED_CONF))
    assert pickle.loads(pickle.dumps(config)) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batching = config.batching  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.compression.named_configs["x"] = config.compression.named_configs["snappy_over_1k"]  # type: ignore[index]


def test_lookups_resolve_topics_like_bruce() -> None:
    example = load_config_file(PER_TOPIC_CONF)
    assert example.batching_for("alerts") == BatchingPolicy(TopicAction.PER_TOPIC, BatchLimits(20, 100, 300))
    assert example.batching_for("anything") == BatchingPolicy(TopicAction.PER_TOPIC, BatchLimits(5, None, 16 * KIB))
    assert example.batching_for("mixed") == BatchingPolicy(TopicAction.COMBINED_TOPICS, BatchLimits(20, 100, 300))
    assert example.batching_for("unbatched") == BatchingPolicy(TopicAction.DISABLE, None)
    assert example.combined_limits == BatchLimits(20, 100, 300)
    assert example.compression_for("metrics") == CompressionCodec(CompressionType.SNAPPY, 2 * KIB)
    assert example.compression_for("other") == CompressionCodec(CompressionType.NONE)
    assert example.rate_limit_for("other") == RateLimit(1, None)

    shipped = load_config_file(COMBINED_CONF)
    assert shipped.batching_for("t") == BatchingPolicy(
        TopicAction.COMBINED_TOPICS, BatchLimits(10000, 8 * KIB, 512 * KIB)
    )
    assert shipped.compression_for("already_compressed") == CompressionCodec(CompressionType.NONE)
    assert shipped.rate_limit_for("debug_noise") == RateLimit(1, 0)
    assert shipped.rate_limit_for("clicks") == RateLimit(2000, KIB)
    assert shipped.rate_limit_for("unlisted") == RateLimit(60000, 5000)


def test_combined_topics_action_without_combined_batching_is_unbatched() -> None:
    shipped = load_config_file(COMBINED_CONF)
    off = BatchingConfig(
        named_configs=shipped.batching.named_configs,
        produce_request_data_limit=0,
        message_max_bytes=1,
        combined_topics=CombinedTopics(enabled=False),
        default_topic=TopicBatching(TopicAction.COMBINED_TOPICS),
        topic_configs={"quiet": TopicBatching(TopicAction.DISABLE)},
    )
    config = Config(batching=off, compression=shipped.compression, initial_brokers=shipped.initial_brokers)
    assert config.batching_for("t") == BatchingPolicy(TopicAction.DISABLE, None)
    assert config.batching_for("quiet") == BatchingPolicy(TopicAction.DISABLE, None)
    assert config.combined_limits is None


@pytest.mark.parametrize("path", [COMBINED_CONF, PER_TOPIC_CONF], ids=lambda p: p.name)
def test_toml_rendering_loads_to_an_equal_model(path: Path, tmp_path: Path) -> None:
    config = load_config_file(path)
    text = to_toml(config, comment=f"from {path.name}")
    assert load_toml(text) == config
    toml_file = tmp_path / "bruce.toml"
    toml_file.write_text(text)
    assert load_config_file(toml_file) == config
    assert load_config_file(path) == config  # the XML, found by its suffix


def test_toml_rendering_reads_like_the_xml() -> None:
    text = to_toml(load_config_file(COMBINED_CONF))
    raw = tomllib.loads(text)
    assert raw["batching"]["produce_request_data_limit"] == "800k"
    assert raw["batching"]["combined_topics"] == {"enable": True, "config": "bulk"}
    assert raw["batching"]["default_topic"] == {"action": "combined_topics"}
    assert raw["batching"]["named_configs"]["interactive"] == {"time": 100, "messages": "disable", "bytes": "64k"}
    assert raw["compression"]["named_configs"]["uncompressed"] == {"type": "none"}
    assert raw["topic_rate_limiting"]["named_configs"]["no_limit"] == {"interval": 1, "max_count": "unlimited"}
    assert raw["topic_rate_limiting"]["topic_configs"]["clicks"] == "burst"
    assert raw["initial_brokers"] == [
        {"host": "kafka-1.invalid", "port": 9092},
        {"host": "kafka-2.invalid", "port": 9092},
    ]
    # Nothing limited: the section is left out, and loading it back gives the same default.
    assert "topic_rate_limiting" not in tomllib.loads(to_toml(load_config_file(PER_TOPIC_CONF)))


def test_a_file_without_suffix_is_recognised_by_its_content(tmp_path: Path) -> None:
    xml, toml = tmp_path / "conf-a", tmp_path / "conf-b"
    xml.write_bytes(PER_TOPIC_CONF.read_bytes())
    toml.write_text(to_toml(load_config_file(PER_TOPIC_CONF)))
    assert load_config_file(xml) == load_config_file(toml) == load_config_file(PER_TOPIC_CONF)
