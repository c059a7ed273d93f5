"""A small valid Bruce XML config exercising every element, and helpers to derive variants from it."""

from __future__ import annotations

VALID_XML = """\
<?xml version="1.0" encoding="US-ASCII"?>
<bruceConfig>
  <batching>
    <namedConfigs>
      <config name="fast">
        <time value="10" />
        <messages value="disable" />
        <bytes value="64k" />
      </config>
    </namedConfigs>
    <produceRequestDataLimit value="1024k" />
    <messageMaxBytes value="1000000" />
    <combinedTopics enable="true" config="fast" />
    <defaultTopic action="combinedTopics" />
    <topicConfigs>
      <topic name="t1" action="perTopic" config="fast" />
    </topicConfigs>
  </batching>
  <compression>
    <namedConfigs>
      <config name="snappy" type="snappy" minSize="1k" />
      <config name="plain" type="none" />
    </namedConfigs>
    <sizeThresholdPercent value="75" />
    <defaultTopic config="snappy" />
    <topicConfigs>
      <topic name="t1" config="plain" />
    </topicConfigs>
  </compression>
  <topicRateLimiting>
    <namedConfigs>
      <config name="some" interval="1000" maxCount="10k" />
      <config name="all" interval="1" maxCount="unlimited" />
    </namedConfigs>
    <defaultTopic config="all" />
    <topicConfigs>
      <topic name="t1" config="some" />
    </topicConfigs>
  </topicRateLimiting>
  <initialBrokers>
    <broker host="b1" />
    <broker host="b2" port="9093" />
  </initialBrokers>
</bruceConfig>
"""


def variant(old: str, new: str, text: str = VALID_XML) -> str:
    """``text`` with the first ``old`` replaced by ``new`` (``old`` must occur)."""
    assert old in text, f"{old!r} is not in the sample"
    return text.replace(old, new, 1)


def line_of(snippet: str, text: str) -> int:
    """The 1-based line where ``snippet`` starts in ``text``."""
    return text[: text.index(snippet)].count("\n") + 1
