"""Bruce-format XML configs written for the tests (tests/data/): together they use every element and attribute of
Bruce's config files, and their brokers end in ``.invalid`` (a name that never resolves)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
COMBINED_CONF = DATA / "combined_conf.xml"
"""Combined-topics batching, snappy by default, a rate limit per topic (every section Bruce has)."""
PER_TOPIC_CONF = DATA / "per_topic_conf.xml"
"""Per-topic batching with each action, three codecs, no rate limiting section."""
