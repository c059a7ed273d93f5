"""Bruce's own config files load unchanged into exactly the expected model, their TOML renderings load to equal models,
and the per-topic lookups resolve as Bruce does."""

from __future__ import annotations

import dataclasses
import pickle
import tomllib
from pathlib import Path

import pytest
from reference_files import BRUCE_CONF, BRUCE_EXAMPLE_CONF

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

KIB = 1024


def test_bruce_conf_xml_loads_to_the_expected_model() -> None:
    assert load_config_file(BRUCE_CONF) == Config(
        batching=BatchingConfig(
            named_configs={
                "low_latency": BatchLimits(time_ms=500, messages=None, bytes=256 * KIB),
                "default_latency": BatchLimits(time_ms=10000, messages=None, bytes=256 * KIB),
            },
            produce_request_data_limit=1024 * KIB,
            message_max_bytes=1_000_000,
            combined_topics=CombinedTopics(enabled=True, config="default_latency"),
            default_topic=TopicBatching(TopicAction.COMBINED_TOPICS),  # config="" counts as absent
            topic_configs={},  # only a comment inside <topicConfigs>
        ),
        compression=CompressionConfig(
            named_configs={
                "snappy_config": CompressionCodec(CompressionType.SNAPPY, min_size=128),
                "no_compression": CompressionCodec(CompressionType.NONE, min_size=0),
            },
            size_threshold_percent=75,
            default_topic="snappy_config",
            topic_configs={},
        ),
        topic_rate_limiting=RateLimitingConfig(
            named_configs={
                "zero": RateLimit(interval_ms=1, max_count=0),
                "infinity": RateLimit(interval_ms=1, max_count=None),
                "config1": RateLimit(interval_ms=10000, max_count=1000),
                "config2": RateLimit(interval_ms=15000, max_count=4 * KIB),
            },
            default_topic="config1",
            topic_configs={"topic1": "zero", "topic2": "infinity", "topic3": "config1", "topic4": "config2"},
        ),
        initial_brokers=(Broker("broker_host_1", 9092), Broker("broker_host_2", 9092)),
    )


def test_bruce_example_conf_xml_loads_to_the_expected_model() -> None:
    config = load_config_file(BRUCE_EXAMPLE_CONF)
    assert config.batching == BatchingConfig(
        named_configs={
            "config1": BatchLimits(time_ms=50, messages=100, bytes=200),
            "config2": BatchLimits(time_ms=5, messages=None, bytes=20 * KIB),
        },
        produce_request_data_limit=100,
        message_max_bytes=200,
        combined_topics=CombinedTopics(enabled=True, config="config1"),
        default_topic=TopicBatching(TopicAction.PER_TOPIC, "config2"),
        topic_configs={
            "topic1": TopicBatching(TopicAction.PER_TOPIC, "config1"),
            "topic2": TopicBatching(TopicAction.PER_TOPIC, "config2"),
        },
    )
    assert config.compression == CompressionConfig(
        named_configs={
            "noComp": CompressionCodec(CompressionType.NONE),
            "snappy1": CompressionCodec(CompressionType.SNAPPY, 512),
            "snappy2": CompressionCodec(CompressionType.SNAPPY, 1024),
        },
        size_threshold_percent=100,
        default_topic="noComp",
        topic_configs={"topic1": "snappy1", "topic2": "snappy2"},
    )
    # No <topicRateLimiting>: Bruce builds an "unlimited" default.
    assert config.topic_rate_limiting == RateLimitingConfig(
        default_topic="unlimited", named_configs={"unlimited": RateLimit(interval_ms=1, max_count=None)}
    )
    assert config.initial_brokers == (Broker("host1", 9092), Broker("host2", 9093))


def test_a_config_is_a_value() -> None:
    config = load_config_file(BRUCE_CONF)
    assert hash(config) == hash(load_config_file(BRUCE_CONF))
    assert pickle.loads(pickle.dumps(config)) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batching = config.batching  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.compression.named_configs["x"] = config.compression.named_configs["snappy_config"]  # type: ignore[index]


def test_lookups_resolve_topics_like_bruce() -> None:
    example = load_config_file(BRUCE_EXAMPLE_CONF)
    assert example.batching_for("topic1") == BatchingPolicy(TopicAction.PER_TOPIC, BatchLimits(50, 100, 200))
    assert example.batching_for("anything") == BatchingPolicy(TopicAction.PER_TOPIC, BatchLimits(5, None, 20 * KIB))
    assert example.combined_limits == BatchLimits(50, 100, 200)
    assert example.compression_for("topic2") == CompressionCodec(CompressionType.SNAPPY, 1024)
    assert example.compression_for("other") == CompressionCodec(CompressionType.NONE)
    assert example.rate_limit_for("other") == RateLimit(1, None)

    shipped = load_config_file(BRUCE_CONF)
    assert shipped.batching_for("t") == BatchingPolicy(TopicAction.COMBINED_TOPICS, BatchLimits(10000, None, 256 * KIB))
    assert shipped.rate_limit_for("topic1") == RateLimit(1, 0)
    assert shipped.rate_limit_for("topic4") == RateLimit(15000, 4096)
    assert shipped.rate_limit_for("unlisted") == RateLimit(10000, 1000)


def test_combined_topics_action_without_combined_batching_is_unbatched() -> None:
    shipped = load_config_file(BRUCE_CONF)
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


@pytest.mark.parametrize("path", [BRUCE_CONF, BRUCE_EXAMPLE_CONF], ids=lambda p: p.name)
def test_toml_rendering_loads_to_an_equal_model(path: Path, tmp_path: Path) -> None:
    config = load_config_file(path)
    text = to_toml(config, comment=f"from {path.name}")
    assert load_toml(text) == config
    toml_file = tmp_path / "bruce.toml"
    toml_file.write_text(text)
    assert load_config_file(toml_file) == config
    assert load_config_file(path) == config  # the XML, found by its suffix


def test_toml_rendering_reads_like_the_xml() -> None:
    text = to_toml(load_config_file(BRUCE_CONF))
    raw = tomllib.loads(text)
    assert raw["batching"]["produce_request_data_limit"] == "1024k"
    assert raw["batching"]["combined_topics"] == {"enable": True, "config": "default_latency"}
    assert raw["batching"]["default_topic"] == {"action": "combined_topics"}
    assert raw["batching"]["named_configs"]["low_latency"] == {"time": 500, "messages": "disable", "bytes": "256k"}
    assert raw["compression"]["named_configs"]["no_compression"] == {"type": "none"}
    assert raw["topic_rate_limiting"]["named_configs"]["infinity"] == {"interval": 1, "max_count": "unlimited"}
    assert raw["topic_rate_limiting"]["topic_configs"]["topic4"] == "config2"
    assert raw["initial_brokers"] == [{"host": "broker_host_1", "port": 9092}, {"host": "broker_host_2", "port": 9092}]
    # Nothing limited: the section is left out, and loading it back gives the same default.
    assert "topic_rate_limiting" not in tomllib.loads(to_toml(load_config_file(BRUCE_EXAMPLE_CONF)))


def test_a_file_without_suffix_is_recognised_by_its_content(tmp_path: Path) -> None:
    xml, toml = tmp_path / "conf-a", tmp_path / "conf-b"
    xml.write_bytes(BRUCE_EXAMPLE_CONF.read_bytes())
    toml.write_text(to_toml(load_config_file(BRUCE_EXAMPLE_CONF)))
    assert load_config_file(xml) == load_config_file(toml) == load_config_file(BRUCE_EXAMPLE_CONF)
