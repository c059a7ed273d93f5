"""The project's fake Kafka broker (fault injection only; never a substitute for the real broker)."""

from .cluster import SERVED, FakeBroker, FakeCluster, Fault, Seen
from .fetchlog import FetchLog

__all__ = ["SERVED", "FakeBroker", "FakeCluster", "Fault", "FetchLog", "Seen"]
