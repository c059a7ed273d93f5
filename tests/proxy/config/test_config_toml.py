"""The TOML config: the same rules as the XML (shared, not copied), its own syntax errors, and ``to_toml`` rendering any
valid configuration so that it loads back equal."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xml_samples import VALID_XML, variant

from bruce.proxy.config import (
    BatchingConfig,
    BatchLimits,
    Broker,
    CombinedTopics,
    CompressionCodec,
    CompressionConfig,
    CompressionType,
    Config,
    ConfigError,
    RateLimit,
    RateLimitingConfig,
    TopicAction,
    TopicBatching,
    load_toml,
    load_xml,
    to_toml,
)

VALID_TOML = to_toml(load_xml(VALID_XML))


def test_the_sample_renders_as_expected() -> None:
    assert VALID_TOML == (
        "[batching]\n"
        'produce_request_data_limit = "1024k"\n'
        "message_max_bytes = 1000000\n"
        'combined_topics = { enable = true, config = "fast" }\n'
        'default_topic = { action = "combined_topics" }\n'
        "\n"
        "[batching.named_configs.fast]\n"
        "time = 10\n"
        'messages = "disable"\n'
        'bytes = "64k"\n'
        "\n"
        "[batching.topic_configs]\n"
        't1 = { action = "per_topic", config = "fast" }\n'
        "\n"
        "[compression]\n"
        "size_threshold_percent = 75\n"
        'default_topic = "snappy"\n'
        "\n"
        "[compression.named_configs]\n"
        'snappy = { type = "snappy", min_size = "1k" }\n'
        'plain = { type = "none" }\n'
        "\n"
        "[compression.topic_configs]\n"
        't1 = "plain"\n'
        "\n"
        "[topic_rate_limiting]\n"
        'default_topic = "all"\n'
        "\n"
        "[topic_rate_limiting.named_configs]\n"
        'some = { interval = 1000, max_count = "10k" }\n'
        'all = { interval = 1, max_count = "unlimited" }\n'
        "\n"
        "[topic_rate_limiting.topic_configs]\n"
        't1 = "some"\n'
        "\n"
        "[[initial_brokers]]\n"
        'host = "b1"\n'
        "port = 9092\n"
        "\n"
        "[[initial_brokers]]\n"
        'host = "b2"\n'
        "port = 9093\n"
    )


# The same mistake in both formats gives the same problem at the same neutral path: the rules are shared.
PARITY = [
    ("time-k", ('<time value="10" />', '<time value="10k" />'), ("time = 10", 'time = "10k"')),
    ("time-zero", ('<time value="10" />', '<time value="0" />'), ("time = 10", "time = 0")),
    (
        "undefined",
        ('<combinedTopics enable="true" config="fast" />', '<combinedTopics enable="true" config="slow" />'),
        ('config = "fast" }\ndefault', 'config = "slow" }\ndefault'),
    ),
    (
        "per-topic-needs-config",
        ('<defaultTopic action="combinedTopics" />', '<defaultTopic action="perTopic" />'),
        ('{ action = "combined_topics" }', '{ action = "per_topic" }'),
    ),
    (
        "combined-with-config",
        ('<defaultTopic action="combinedTopics" />', '<defaultTopic action="combinedTopics" config="fast" />'),
        ('{ action = "combined_topics" }', '{ action = "combined_topics", config = "fast" }'),
    ),
    (
        "threshold",
        ('<sizeThresholdPercent value="75" />', '<sizeThresholdPercent value="101" />'),
        ("size_threshold_percent = 75", "size_threshold_percent = 101"),
    ),
    (
        "min-size",
        ('type="snappy" minSize="1k"', 'type="snappy"'),
        ('type = "snappy", min_size = "1k"', 'type = "snappy"'),
    ),
    ("interval", ('interval="1000"', 'interval="0"'), ("interval = 1000", "interval = 0")),
    ("max-count", ('maxCount="10k"', 'maxCount="lots"'), ('max_count = "10k"', 'max_count = "lots"')),
    ("port", ('port="9093"', 'port="0"'), ("port = 9093", "port = 0")),
    ("compression-type", ('type="none"', 'type="lzma"'), ('type = "none"', 'type = "lzma"')),
    ("missing-default", ('    <defaultTopic config="snappy" />\n', ""), ('default_topic = "snappy"\n', "")),
]


@pytest.mark.parametrize(("xml_edit", "toml_edit"), [case[1:] for case in PARITY], ids=[case[0] for case in PARITY])
def test_xml_and_toml_share_the_rules(xml_edit: tuple[str, str], toml_edit: tuple[str, str]) -> None:
    with pytest.raises(ConfigError) as from_xml:
        load_xml(variant(*xml_edit))
    with pytest.raises(ConfigError) as from_toml:
        load_toml(variant(*toml_edit, text=VALID_TOML), source="bruce.toml")
    assert from_toml.value.path == from_xml.value.path
    assert from_toml.value.problem == from_xml.value.problem
    assert str(from_toml.value).startswith(f"bruce.toml: {from_toml.value.where}: ")


TOML_CASES = [
    (
        "unknown-key",
        ("message_max_bytes", "message_max_byte"),
        "batching.message_max_byte",
        'unknown setting; did you mean "message_max_bytes"?',
    ),
    ("unknown-section", ("[compression]", "[compresion]"), "compresion", 'did you mean "compression"?'),
    (
        "float",
        ("time = 10", "time = 10.5"),
        "batching.named_configs.fast.time",
        '10.5 is not valid here: expected a whole number or "disable"',
    ),
    ("bool-as-number", ("time = 10", "time = true"), "batching.named_configs.fast.time", "true is not valid here"),
    ("negative", ("time = 10", "time = -10"), "batching.named_configs.fast.time", "-10 is negative"),
    ("too-large", ("message_max_bytes = 1000000", "message_max_bytes = 9223372036854775807"), None, None),
    (
        "string-as-bool",
        ("enable = true", 'enable = "yes"'),
        "batching.combined_topics.enable",
        'expected "true" or "false"',
    ),
    (
        "number-as-name",
        ('default_topic = "snappy"', "default_topic = 5"),
        "compression.default_topic",
        "expected a name in quotes",
    ),
    (
        "not-a-table",
        ('default_topic = { action = "combined_topics" }', 'default_topic = "combined_topics"'),
        "batching.default_topic",
        "expected a table of settings",
    ),
    (
        "xml-action-spelling",
        ('{ action = "per_topic"', '{ action = "perTopic"'),
        "batching.topic_configs.t1.action",
        'expected one of "per_topic", "combined_topics", "disable"',
    ),
    (
        "quoted-key-path",
        ('t1 = "plain"', '"my topic" = "nothing"'),
        'compression.topic_configs."my topic"',
        'names the compression config "nothing"',
    ),
    ("broker-index", ('host = "b2"', 'host = ""'), "initial_brokers[2].host", "the host must not be empty"),
]


@pytest.mark.parametrize(
    ("edit", "where", "words"), [case[1:] for case in TOML_CASES], ids=[case[0] for case in TOML_CASES]
)
def test_toml_mistakes_are_named(edit: tuple[str, str], where: str | None, words: str | None) -> None:
    text = variant(*edit, text=VALID_TOML)
    if where is None:  # within range: accepted
        assert load_toml(text).batching.message_max_bytes == 2**63 - 1
        return
    with pytest.raises(ConfigError) as caught:
        load_toml(text, source="bruce.toml")
    assert caught.value.where == where
    assert words is not None and words in caught.value.problem
    assert str(caught.value) == f"bruce.toml: {where}: {caught.value.problem}"


def test_brokers_must_be_a_list() -> None:
    text = 'initial_brokers = "b1:9092"\n' + VALID_TOML[: VALID_TOML.index("\n[[initial_brokers]]")]
    with pytest.raises(ConfigError, match=r"^b\.toml: initial_brokers: expected a list of brokers, each with a host"):
        load_toml(text, source="b.toml")


def test_toml_syntax_errors_give_the_line() -> None:
    with pytest.raises(ConfigError, match=r"^bruce\.toml: not valid TOML: .*\(at line 3, column"):
        load_toml(variant("message_max_bytes = 1000000", "message_max_bytes = = 1", VALID_TOML), source="bruce.toml")
    with pytest.raises(ConfigError, match=r"not valid TOML: Cannot overwrite a value"):
        load_toml(VALID_TOML.replace("time = 10\n", "time = 10\ntime = 11\n"))


def test_toml_must_be_utf8() -> None:
    with pytest.raises(ConfigError, match=r"a TOML file must be UTF-8 \(invalid start byte at byte 0\)"):
        load_toml(b"\xff" + VALID_TOML.encode())


def test_sizes_are_written_as_xml_writes_them() -> None:
    text = variant('bytes = "64k"', 'bytes = " 64 K "', text=VALID_TOML)
    text = variant('max_count = "10k"', "max_count = 10240", text=text)
    assert load_toml(text) == load_toml(VALID_TOML)


# -- to_toml renders every valid configuration faithfully ----------------------------------------------------------

names = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() == s)
topics = st.text(min_size=1, max_size=12)
counts = st.integers(min_value=1, max_value=2**63 - 1)
sizes = st.integers(min_value=0, max_value=2**63 - 1) | st.sampled_from([1024, 256 * 1024, 1024**3])


@st.composite
def configs(draw: st.DrawFn) -> Config:
    batch_names = draw(st.lists(names, max_size=3, unique=True))
    limits = st.tuples(st.none() | counts, st.none() | counts, st.none() | counts).filter(lambda t: t != (None,) * 3)
    named = {name: BatchLimits(*draw(limits)) for name in batch_names}

    def topic_batching() -> TopicBatching:
        actions = [TopicAction.COMBINED_TOPICS, TopicAction.DISABLE] + ([TopicAction.PER_TOPIC] if named else [])
        action = draw(st.sampled_from(actions))
        return TopicBatching(action, draw(st.sampled_from(batch_names)) if action is TopicAction.PER_TOPIC else None)

    enabled = bool(named) and draw(st.booleans())
    batching = BatchingConfig(
        named_configs=named,
        produce_request_data_limit=draw(sizes),
        message_max_bytes=draw(sizes),
        combined_topics=CombinedTopics(enabled, draw(st.sampled_from(batch_names)) if enabled else None),
        default_topic=topic_batching(),
        topic_configs={topic: topic_batching() for topic in draw(st.lists(topics, max_size=3, unique=True))},
    )
    codec_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    codecs = st.builds(CompressionCodec, st.sampled_from(list(CompressionType)), sizes)
    compression = CompressionConfig(
        named_configs={name: draw(codecs) for name in codec_names},
        size_threshold_percent=draw(st.integers(0, 100)),
        default_topic=draw(st.sampled_from(codec_names)),
        topic_configs={t: draw(st.sampled_from(codec_names)) for t in draw(st.lists(topics, max_size=3, unique=True))},
    )
    rate_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    rates = st.one_of(
        st.builds(RateLimit, counts, st.integers(0, 2**63 - 1)), st.builds(RateLimit, st.integers(0, 10**6), st.none())
    )
    limiting = draw(
        st.just(RateLimitingConfig.unlimited())
        | st.just(
            RateLimitingConfig(
                named_configs={name: draw(rates) for name in rate_names},
                default_topic=draw(st.sampled_from(rate_names)),
                topic_configs={t: draw(st.sampled_from(rate_names)) for t in draw(st.lists(topics, max_size=3))},
            )
        )
    )
    hosts = st.text(string.ascii_letters + string.digits + ".-:", min_size=1, max_size=20) | names
    brokers = draw(st.lists(st.builds(Broker, hosts, st.integers(1, 65535)), min_size=1, max_size=3))
    return Config(batching=batching, compression=compression, topic_rate_limiting=limiting, initial_brokers=brokers)


@settings(max_examples=300, deadline=None)
@given(configs())
def test_to_toml_round_trips_any_valid_config(config: Config) -> None:
    assert load_toml(to_toml(config, comment="generated\nby a property test\x00\r\u2028")) == config
