"""Bruce's integration checklist (docs/bruce-compatibility.md#test-checklist) against the fake broker: successful
delivery and key/value emptiness combinations, on the modern and the legacy (Kafka 0.8) protocol."""

from __future__ import annotations

import pytest
from fakebroker import FakeCluster
from fakebroker.harness import Outcomes, assert_accounting, bruce_config, running, scenario


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_successful_delivery(legacy: bool) -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1, 2])
        outcomes = Outcomes()
        async with running(bruce_config(cluster.bootstrap), sink=outcomes, require_topics=True) as p:
            handles = [p.send("t", f"body{i}".encode()) for i in range(4)]
            assert await p.flush(5) == 0
            results = [h.result() for h in handles]
            assert_accounting(p, outcomes, held=0)
        assert sorted(cluster.values("t")) == [b"body0", b"body1", b"body2", b"body3"]
        assert all(offset >= 0 for _, offset in results)
        produces = cluster.requests("Produce")
        assert len(produces) == 4  # produce request data limit 0: one message per request
        assert all(s.version == (0 if legacy else max(s.version for s in produces)) for s in produces)
        assert outcomes.delivered_count == 4 and outcomes.duplicate_count == 0 and not outcomes.discarded_rows

    scenario(body, legacy=legacy)
