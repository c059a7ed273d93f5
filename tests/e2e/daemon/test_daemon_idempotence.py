"""The daemon with idempotence on (its default) against tansu, every connection through the fault-injecting proxy
(tests/netproxy.py): datagrams stream in while acknowledgements are lost and the connection is cut with requests in
flight; confluent-kafka reads every message back once, in order (CRC checks on), and no possible duplicate is
reported."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from netproxy import tansu_behind_proxy

from bruce.proxy.config import Broker

from .harness import consume_topic, daemon_starter, make_config, wait_for

pytestmark = pytest.mark.e2e


def test_lost_acks_and_a_cut_connection_store_every_datagram_once_in_order(workdir: Path) -> None:
    with tansu_behind_proxy(delay_ms=5) as (broker, proxy):
        broker.create_topic("idem", 1)
        brokers = (Broker("127.0.0.1", int(proxy.address.rsplit(":", 1)[1])),)
        with daemon_starter(workdir, brokers) as start:
            d = start(make_config(brokers, time_ms=5, nbytes=2000))  # small batches: several requests in flight
            wait_for(lambda: d.call(d.daemon.producer.cluster) is not None, what="the first metadata")
            values = [b"d%05d" % i for i in range(3000)]
            with d.client() as client:
                for i, value in enumerate(values):
                    client.send_partition_key("idem", 0, value)
                    if i == 0:  # connected, idempotence settled and a producer id assigned before any fault
                        wait_for(lambda: d.counter("ProducerIdAssigned") == 1, what="a producer id")
                    elif i == 1000:
                        proxy.set_drop_answers(True)  # stored by tansu, answers lost
                    elif i == 1500:
                        time.sleep(0.05)
                        proxy.cut()
                        proxy.set_drop_answers(False)
            a = d.settle(len(values))
            assert (a.delivered, a.discarded) == (len(values), 0)
            assert d.counter("PossibleDuplicateMsg") == 0 and d.counter("ProducerIdAssigned") >= 1
            assert d.counter("Pause") >= 1
            d.stop()
        reads = consume_topic(proxy.address, "idem", 1, len(values))
        assert [r.value for r in reads] == values
