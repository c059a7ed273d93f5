"""Every rule of Bruce's config file: one invalid file per rule, each rejected with a message that names the file, the
line, the element path and the problem; and the quirks Bruce accepts, accepted."""

from __future__ import annotations

import pytest
from xml_samples import VALID_XML, line_of, variant

from bruce.proxy.config import (
    BatchLimits,
    CompressionCodec,
    CompressionType,
    ConfigError,
    RateLimit,
    TopicAction,
    TopicBatching,
    load_config_file,
    load_xml,
)

BATCH = 'batching/namedConfigs/config[name="fast"]'
RATE = 'topicRateLimiting/namedConfigs/config[name="some"]'

# (id, old snippet, new snippet, expected where, expected words in the problem)
CASES = [
    # structure
    (
        "unknown-element",
        "  <initialBrokers>",
        "  <initialBroker/>\n  <initialBrokers>",
        "bruceConfig",
        "<initialBroker>; did you mean <initialBrokers>",
    ),
    (
        "duplicate-section",
        "  <compression>",
        "  <batching/>\n  <compression>",
        "batching[2]",
        "<batching> appears twice",
    ),
    (
        "missing-batching",
        VALID_XML[VALID_XML.index("  <batching>") : VALID_XML.index("  <compression>")],
        "",
        "batching",
        "is missing",
    ),
    (
        "missing-compression",
        VALID_XML[VALID_XML.index("  <compression>") : VALID_XML.index("  <topicRateLimiting>")],
        "",
        "compression",
        "is missing",
    ),
    (
        "missing-brokers",
        VALID_XML[VALID_XML.index("  <initialBrokers>") : VALID_XML.index("</bruceConfig>")],
        "",
        "initialBrokers",
        "is missing",
    ),
    (
        "text-in-section",
        "    <produceRequestDataLimit",
        "    oops <produceRequestDataLimit",
        "batching",
        'unexpected text "oops"',
    ),
    (
        "text-in-leaf",
        '<messageMaxBytes value="1000000" />',
        '<messageMaxBytes value="1000000">9</messageMaxBytes>',
        "batching/messageMaxBytes",
        'unexpected text "9"',
    ),
    (
        "cdata-text",
        '<messageMaxBytes value="1000000" />',
        '<messageMaxBytes value="1000000"><![CDATA[x]]></messageMaxBytes>',
        "batching/messageMaxBytes",
        'unexpected text "x"',
    ),
    (
        "leaf-with-child",
        '<messageMaxBytes value="1000000" />',
        '<messageMaxBytes value="1000000"><x/></messageMaxBytes>',
        "batching/messageMaxBytes",
        "unexpected element <x>: this element must be empty",
    ),
    (
        "unknown-attribute",
        '<messageMaxBytes value="1000000" />',
        '<messageMaxBytes value="1000000" unit="B" />',
        "batching/messageMaxBytes",
        'unexpected attribute "unit"',
    ),
    (
        "section-attribute",
        "  <batching>",
        '  <batching mode="x">',
        "batching",
        'unexpected attribute "mode"; it takes no attributes',
    ),
    ("root-attribute", "<bruceConfig>", '<bruceConfig version="2">', "bruceConfig", 'unexpected attribute "version"'),
    (
        "value-missing",
        '<messageMaxBytes value="1000000" />',
        "<messageMaxBytes />",
        "batching/messageMaxBytes",
        'the attribute "value" is missing',
    ),
    (
        "item-without-name",
        '<config name="fast">',
        "<config>",
        "batching/namedConfigs/config",
        'the attribute "name" is missing',
    ),
    (
        "wrong-item",
        '<config name="plain" type="none" />',
        '<conf name="plain" type="none" />',
        "compression/namedConfigs",
        "unexpected element <conf>; did you mean <config>",
    ),
    (
        "duplicate-named-config",
        '<config name="all" ',
        '<config name=" some " ',
        'topicRateLimiting/namedConfigs/config[name=" some "]',
        'the name "some" is used twice',
    ),
    (
        "duplicate-topic",
        '<topic name="t1" config="plain" />',
        '<topic name="t1" config="plain" /><topic name="t1" config="snappy" />',
        'compression/topicConfigs/topic[name="t1"]',
        'the name "t1" is used twice',
    ),
    (
        "duplicate-namedConfigs",
        "    <sizeThresholdPercent",
        "    <namedConfigs/>\n    <sizeThresholdPercent",
        "compression/namedConfigs[2]",
        "<namedConfigs> appears twice",
    ),
    # batching named configs
    (
        "time-k",
        '<time value="10" />',
        '<time value="10k" />',
        f"{BATCH}/time",
        "the k suffix (* 1024) is not allowed here",
    ),
    (
        "time-zero",
        '<time value="10" />',
        '<time value="0" />',
        f"{BATCH}/time",
        '0 is not allowed: to turn this limit off write "disable"',
    ),
    (
        "messages-zero-k",
        '<messages value="disable" />',
        '<messages value="0k" />',
        f"{BATCH}/messages",
        "0 is not allowed",
    ),
    ("bytes-text", '<bytes value="64k" />', '<bytes value="lots" />', f"{BATCH}/bytes", '"lots" is not valid here'),
    ("bytes-negative", '<bytes value="64k" />', '<bytes value="-5" />', f"{BATCH}/bytes", '"-5" is not valid here'),
    ("bytes-empty", '<bytes value="64k" />', '<bytes value=" " />', f"{BATCH}/bytes", "the value is empty"),
    (
        "bytes-overflow",
        '<bytes value="64k" />',
        '<bytes value="99999999999999999999k" />',
        f"{BATCH}/bytes",
        "too large",
    ),
    (
        "all-disabled",
        '<time value="10" />\n        <messages value="disable" />\n        <bytes value="64k" />',
        '<time value="DISABLE" />\n        <messages value="disable" />\n        <bytes value=" disable" />',
        BATCH,
        'time, messages and bytes are all "disable"',
    ),
    ("time-missing", '        <time value="10" />\n', "", f"{BATCH}/time", "is missing"),
    (
        "batching-name-empty",
        '<config name="fast">',
        '<config name=" ">',
        'batching/namedConfigs/config[name=""]',
        "must not be empty",
    ),
    # batching settings
    (
        "request-limit-disable",
        '<produceRequestDataLimit value="1024k" />',
        '<produceRequestDataLimit value="disable" />',
        "batching/produceRequestDataLimit",
        '"disable" is not valid here',
    ),
    ("max-bytes-missing", '    <messageMaxBytes value="1000000" />\n', "", "batching/messageMaxBytes", "is missing"),
    (
        "combined-missing",
        '    <combinedTopics enable="true" config="fast" />\n',
        "",
        "batching/combinedTopics",
        "is missing",
    ),
    (
        "combined-enable-missing",
        '<combinedTopics enable="true" config="fast" />',
        '<combinedTopics config="fast" />',
        "batching/combinedTopics/@enable",
        "is missing",
    ),
    (
        "combined-enable-bad",
        '<combinedTopics enable="true"',
        '<combinedTopics enable="yes"',
        "batching/combinedTopics/@enable",
        'expected "true" or "false"',
    ),
    (
        "combined-config-missing",
        '<combinedTopics enable="true" config="fast" />',
        '<combinedTopics enable="true" />',
        "batching/combinedTopics/@config",
        "is required: name one of the batching named configs",
    ),
    (
        "combined-config-undefined",
        '<combinedTopics enable="true" config="fast" />',
        '<combinedTopics enable="true" config="slow" />',
        "batching/combinedTopics/@config",
        'names the batching config "slow", which is not defined; defined: "fast"',
    ),
    (
        "default-action-missing",
        '<defaultTopic action="combinedTopics" />',
        "<defaultTopic />",
        "batching/defaultTopic/@action",
        "is missing",
    ),
    (
        "default-action-case",
        '<defaultTopic action="combinedTopics" />',
        '<defaultTopic action="CombinedTopics" />',
        "batching/defaultTopic/@action",
        'expected one of "perTopic", "combinedTopics", "disable"',
    ),
    (
        "default-name-attribute",
        '<defaultTopic action="combinedTopics" />',
        '<defaultTopic name="x" action="combinedTopics" />',
        'batching/defaultTopic[name="x"]',
        'unexpected attribute "name"',
    ),
    (
        "per-topic-needs-config",
        '<defaultTopic action="combinedTopics" />',
        '<defaultTopic action="perTopic" />',
        "batching/defaultTopic/@config",
        "is required",
    ),
    (
        "per-topic-empty-config",
        '<defaultTopic action="combinedTopics" />',
        '<defaultTopic action="perTopic" config="" />',
        "batching/defaultTopic/@config",
        "is required",
    ),
    (
        "combined-topics-with-config",
        '<defaultTopic action="combinedTopics" />',
        '<defaultTopic action="combinedTopics" config="fast" />',
        "batching/defaultTopic/@config",
        "must be empty or absent for combined-topics batching",
    ),
    (
        "topic-config-undefined",
        '<topic name="t1" action="perTopic" config="fast" />',
        '<topic name="t1" action="perTopic" config="fats" />',
        'batching/topicConfigs/topic[name="t1"]/@config',
        'names the batching config "fats"',
    ),
    (
        "topic-name-empty",
        '<topic name="t1" action="perTopic" config="fast" />',
        '<topic name="" action="disable" />',
        'batching/topicConfigs/topic[name=""]',
        "a topic name must not be empty",
    ),
    # compression
    (
        "compression-named-missing",
        VALID_XML[
            VALID_XML.index('    <namedConfigs>\n      <config name="snappy"') : VALID_XML.index(
                "    <sizeThresholdPercent"
            )
        ],
        "",
        "compression/namedConfigs",
        "is missing",
    ),
    (
        "type-unknown",
        'type="snappy"',
        'type="brotli"',
        'compression/namedConfigs/config[name="snappy"]/@type',
        'expected one of "none", "gzip", "snappy", "lz4", "zstd"',
    ),
    (
        "type-missing",
        '<config name="plain" type="none" />',
        '<config name="plain" />',
        'compression/namedConfigs/config[name="plain"]/@type',
        "is missing",
    ),
    (
        "min-size-missing",
        '<config name="snappy" type="snappy" minSize="1k" />',
        '<config name="snappy" type="snappy" />',
        'compression/namedConfigs/config[name="snappy"]/@minSize',
        "is required for snappy compression",
    ),
    (
        "min-size-bad-for-none",
        '<config name="plain" type="none" />',
        '<config name="plain" type="none" minSize="x" />',
        'compression/namedConfigs/config[name="plain"]/@minSize',
        '"x" is not valid here',
    ),
    (
        "threshold-over-100",
        '<sizeThresholdPercent value="75" />',
        '<sizeThresholdPercent value="101" />',
        "compression/sizeThresholdPercent",
        "101 is more than 100",
    ),
    (
        "threshold-k",
        '<sizeThresholdPercent value="75" />',
        '<sizeThresholdPercent value="1k" />',
        "compression/sizeThresholdPercent",
        "the k suffix (* 1024) is not allowed here",
    ),
    (
        "compression-default-missing",
        '    <defaultTopic config="snappy" />\n',
        "",
        "compression/defaultTopic/@config",
        "is missing",
    ),
    (
        "compression-default-undefined",
        '<defaultTopic config="snappy" />',
        '<defaultTopic config="zstd" />',
        "compression/defaultTopic/@config",
        'names the compression config "zstd", which is not defined; defined: "snappy", "plain"',
    ),
    (
        "compression-topic-undefined",
        '<topic name="t1" config="plain" />',
        '<topic name="t1" config="none" />',
        'compression/topicConfigs/topic[name="t1"]/@config',
        'names the compression config "none"',
    ),
    (
        "compression-name-empty",
        '<config name="plain" type="none" />',
        '<config name="" type="none" />',
        'compression/namedConfigs/config[name=""]',
        "must not be empty",
    ),
    # rate limiting
    ("interval-zero", 'interval="1000"', 'interval="0"', f"{RATE}/@interval", "0 is not allowed: expected at least 1"),
    (
        "interval-k",
        'interval="1000"',
        'interval="1k"',
        f"{RATE}/@interval",
        "the k suffix (* 1024) is not allowed here",
    ),
    ("interval-missing", ' interval="1000"', "", f"{RATE}/@interval", "is missing"),
    (
        "max-count-bad",
        'maxCount="10k"',
        'maxCount="many"',
        f"{RATE}/@maxCount",
        'expected a whole number, a number with the k suffix such as "256k" (256 * 1024) or "unlimited"',
    ),
    (
        "rate-default-missing",
        '    <defaultTopic config="all" />\n',
        "",
        "topicRateLimiting/defaultTopic/@config",
        "is missing",
    ),
    (
        "rate-topic-undefined",
        '<topic name="t1" config="some" />',
        '<topic name="t1" config="none" />',
        'topicRateLimiting/topicConfigs/topic[name="t1"]/@config',
        'names the rate limiting config "none"',
    ),
    (
        "rate-named-missing",
        VALID_XML[
            VALID_XML.index('    <namedConfigs>\n      <config name="some"') : VALID_XML.index(
                '    <defaultTopic config="all" />'
            )
        ],
        "",
        "topicRateLimiting/namedConfigs",
        "is missing",
    ),
    # brokers
    (
        "no-brokers",
        '    <broker host="b1" />\n    <broker host="b2" port="9093" />\n',
        "",
        "initialBrokers",
        "lists no broker",
    ),
    (
        "host-empty",
        '<broker host="b1" />',
        '<broker host=" " />',
        "initialBrokers/broker[1]/@host",
        "the host must not be empty",
    ),
    ("host-missing", '<broker host="b1" />', '<broker port="1" />', "initialBrokers/broker[1]/@host", "is missing"),
    (
        "port-zero",
        'port="9093"',
        'port="0"',
        "initialBrokers/broker[2]/@port",
        "0 is not a TCP port: expected 1 to 65535",
    ),
    ("port-too-big", 'port="9093"', 'port="65536"', "initialBrokers/broker[2]/@port", "65536 is not a TCP port"),
    (
        "port-k",
        'port="9093"',
        'port="9k"',
        "initialBrokers/broker[2]/@port",
        "the k suffix (* 1024) is not allowed here",
    ),
    (
        "broker-unknown-child",
        '<broker host="b1" />',
        '<host name="b1" />',
        "initialBrokers",
        "unexpected element <host>; expected <broker>",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "where", "words"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_invalid_config_is_rejected_with_place_and_problem(old: str, new: str, where: str, words: str) -> None:
    text = variant(old, new)
    with pytest.raises(ConfigError) as caught:
        load_xml(text, source="bruce.xml")
    error = caught.value
    assert error.source == "bruce.xml"
    assert error.where == where
    assert words in error.problem
    assert error.line is not None and 1 <= error.line <= text.count("\n") + 1
    if new.strip() and "\n" not in new:
        assert error.line == line_of(new.strip(), text)  # the changed element's own line
    assert str(error) == f"bruce.xml, line {error.line}: {where}: {error.problem}"


def test_every_case_is_one_rule() -> None:
    assert len({case[0] for case in CASES}) == len(CASES)


DOCUMENT_CASES = [
    ("empty", b"", "the config file is empty"),
    ("blank", b"  \n", "the config file is empty"),
    (
        "no-declaration",
        VALID_XML.split("\n", 1)[1].encode(),
        'must start with the XML declaration <?xml version="1.0" encoding="US-ASCII"?>',
    ),
    (
        "no-encoding",
        variant(' encoding="US-ASCII"', "").encode(),
        'the XML declaration has no encoding: Bruce requires config files to declare encoding="US-ASCII" (a rule '
        'kept here so that one file works with both); write <?xml version="1.0" encoding="US-ASCII"?> as the first '
        "line",
    ),
    ("utf-8", variant("US-ASCII", "UTF-8").encode(), 'has encoding="UTF-8"'),
    ("unknown-encoding", variant("US-ASCII", "S-ASCII").encode(), 'has encoding="S-ASCII"'),  # found by fuzzing
    ("non-ascii-byte", variant('host="b1"', 'host="b\xe9"').encode("latin-1"), "not well-formed XML"),
    ("mismatched-tag", variant("</bruceConfig>", "</bruceconfig>").encode(), "not well-formed XML: mismatched tag"),
    ("junk-after-root", (VALID_XML + "<more/>").encode(), "not well-formed XML: junk after document element"),
    (
        "wrong-root",
        variant("</bruceConfig>", "</config>", variant("<bruceConfig>", "<config>")).encode(),
        "the root element is <config>",
    ),
    (
        "doctype",
        variant("<bruceConfig>", "<!DOCTYPE bruceConfig>\n<bruceConfig>").encode(),
        "a DOCTYPE or entity declaration is not allowed",
    ),
    (
        "entity-expansion",
        variant(
            "<bruceConfig>",
            '<!DOCTYPE bruceConfig [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n<bruceConfig>',
        ).encode(),
        "a DOCTYPE or entity declaration is not allowed",
    ),
    (
        "external-entity",
        variant("<bruceConfig>", '<!DOCTYPE bruceConfig [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<bruceConfig>')
        .replace('<broker host="b1" />', '<broker host="&x;" />')
        .encode(),
        "a DOCTYPE or entity declaration is not allowed",
    ),
    ("undefined-entity", variant('host="b1"', 'host="&x;"').encode(), "not well-formed XML: undefined entity"),
]


@pytest.mark.parametrize(
    ("data", "words"), [case[1:] for case in DOCUMENT_CASES], ids=[case[0] for case in DOCUMENT_CASES]
)
def test_invalid_document_is_rejected(data: bytes, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_xml(data, source="bruce.xml")
    assert words in caught.value.problem
    assert str(caught.value).startswith("bruce.xml")


def test_stray_text_is_reported_on_its_own_line() -> None:
    text = variant("    <produceRequestDataLimit", "\n\n    stray\n    words\n\n    <produceRequestDataLimit")
    with pytest.raises(ConfigError) as caught:
        load_xml(text)
    assert caught.value.line == line_of("stray", text)
    assert caught.value.problem.startswith('unexpected text "stray"')


def test_unreadable_file_names_the_file(tmp_path) -> None:
    missing = tmp_path / "nope.xml"
    with pytest.raises(ConfigError, match=r"nope\.xml: cannot read the config file: No such file or directory"):
        load_config_file(missing)


# -- what Bruce accepts ---------------------------------------------------------------------------------------------


def test_values_are_read_like_bruce_reads_them() -> None:
    text = variant('<time value="10" />', '<time value=" +10 " />')
    text = variant('<messages value="disable" />', '<messages value=" 3 K " />', text)
    text = variant('<bytes value="64k" />', '<bytes value="DISABLE" />', text)
    text = variant('type="snappy"', 'type=" SNAPPY "', text)
    text = variant('maxCount="unlimited"', 'maxCount="Unlimited"', text)
    text = variant('<combinedTopics enable="true"', '<combinedTopics enable=" TRUE "', text)
    text = variant('config="fast" />\n    <defaultTopic', 'config=" fast " />\n    <defaultTopic', text)
    text = variant("US-ASCII", "us-ascii", text)
    config = load_xml(text)
    assert config.batching.named_configs["fast"] == BatchLimits(time_ms=10, messages=3 * 1024, bytes=None)
    assert config.compression.named_configs["snappy"] == CompressionCodec(CompressionType.SNAPPY, 1024)
    assert config.topic_rate_limiting.named_configs["all"] == RateLimit(1, None)
    assert config.batching.combined_topics.config == "fast"


def test_what_bruce_ignores_is_ignored() -> None:
    text = variant('<combinedTopics enable="true" config="fast" />', '<combinedTopics enable="false" config="gone" />')
    text = variant('<defaultTopic action="combinedTopics" />', '<defaultTopic action="disable" config="gone" />', text)
    text = variant('<config name="plain" type="none" />', '<config name="plain" type="none" minSize="5k" />', text)
    text = variant('<config name="all" interval="1"', '<config name="all" interval="0"', text)  # unlimited: unused
    text = variant("  <batching>", "  <!-- a comment -->\n  <?pi ignored?>\n  <batching>", text)
    config = load_xml(text)
    assert config.batching.combined_topics.enabled is False
    assert config.batching.combined_topics.config is None
    assert config.batching.default_topic == TopicBatching(TopicAction.DISABLE)
    assert config.compression.named_configs["plain"] == CompressionCodec(CompressionType.NONE, 0)
    assert config.topic_rate_limiting.named_configs["all"] == RateLimit(0, None)


def test_optional_elements_may_be_left_out() -> None:
    text = variant(
        VALID_XML[VALID_XML.index("    <namedConfigs>") : VALID_XML.index("    <produceRequestDataLimit")], ""
    )
    text = variant('<combinedTopics enable="true" config="fast" />', '<combinedTopics enable="false" />', text)
    text = variant('<topic name="t1" action="perTopic" config="fast" />', '<topic name="t1" action="disable" />', text)
    text = variant('    <sizeThresholdPercent value="75" />\n', "", text)
    text = variant(
        VALID_XML[VALID_XML.index("  <topicRateLimiting>") : VALID_XML.index("  <initialBrokers>")], "", text
    )
    text = variant(
        '    <topicConfigs>\n      <topic name="t1" config="plain" />\n    </topicConfigs>\n',
        "    <topicConfigs/>\n",
        text,
    )
    config = load_xml(text)
    assert config.batching.named_configs == {}
    assert config.compression.size_threshold_percent == 100
    assert config.compression.topic_configs == {}
    assert config.rate_limit_for("t1") == RateLimit(1, None)
    assert config.initial_brokers[0].port == 9092


def test_topic_names_keep_their_spaces_and_config_names_do_not() -> None:
    text = variant('<topic name="t1" config="some" />', '<topic name=" t1" config=" some " />')
    config = load_xml(text)
    assert config.topic_rate_limiting.topic_configs == {" t1": "some"}
