"""Producer.broker_states() against the fake broker: idle before any produce connection, connected after one, and a
broker that drops the connection shows ``disconnected`` with the error and its time, kept after reconnecting."""

from __future__ import annotations

import time

from fakebroker import FakeCluster, Fault
from fakebroker.harness import bruce_config, running, scenario

from bruce.wire.protocol import produce


def test_broker_states_follow_connection_events() -> None:
    async def body(cluster: FakeCluster) -> None:
        cluster.add_topic("t", [1])
        async with running(bruce_config(cluster.bootstrap), require_topics=True) as p:
            await p.ready(5)
            states = {b.node_id: b for b in p.broker_states()}
            assert sorted(states) == sorted(cluster.brokers)
            assert {b.state for b in states.values()} == {"idle"} and states[1].last_error == ""
            host, port = cluster.brokers[1].address.rsplit(":", 1)
            assert (states[1].host, states[1].port) == (host, int(port))
            before = time.time()
            assert await p.send("t", b"one", partition=0) == (0, 0)
            one = {b.node_id: b for b in p.broker_states()}[1]
            assert one.state == "connected" and before <= one.since <= time.time()
            cluster.brokers[1].script(produce.KEY, Fault.disconnect(store=False))
            await p.send("t", b"two", partition=0)  # resent after the reconnect
            after = {b.node_id: b for b in p.broker_states()}[1]
            assert after.state == "connected"  # reconnected, and the error is kept
            assert after.last_error.startswith("connection lost:") and before <= after.last_error_at <= after.since

    scenario(body)
