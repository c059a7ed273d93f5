"""The TCP listener against hostile clients: a flood of idle connections (the slots free after ``idle_timeout``; a
client rejected meanwhile still has what it sent read and submitted), a line trickled byte by byte (reset after
``line_timeout``, the partial line discarded as MALFORMED), and a paused connection that must not time out."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.config.listeners import ListenerConfig, PlogConfigError, check_descriptors
from bruce.proxy.plog.listeners import TcpListener

FLOOD = 1000


def tcp(**overrides) -> ListenerConfig:
    return ListenerConfig(**{"protocol": "tcp", "port": 0, "topic": "lines", "name": "tcp-hostile", **overrides})


async def started(config: ListenerConfig, sink, **kwargs) -> TcpListener:
    listener = TcpListener(config, sink, **kwargs)
    await listener.start()
    return listener


def test_a_flood_of_idle_connections_neither_holds_the_slots_nor_loses_a_rejected_clients_lines(
    run, sink, wait_for
) -> None:
    async def main() -> None:
        now = [0.0]  # the listener's clock: the flood takes no time for it, however busy this machine is
        listener = await started(tcp(), sink, clock=lambda: now[0])
        flood: list[asyncio.StreamWriter] = []
        for _ in range(FLOOD // 100):
            opened = await asyncio.gather(*(asyncio.open_connection(*listener.address) for _ in range(100)))
            flood += [w for _, w in opened]
        stats = listener.stats
        await wait_for(lambda: stats.tcp_connections + stats.tcp_rejected_connections == FLOOD, "every accept")
        assert (len(listener.connections), stats.tcp_rejected_connections) == (256, FLOOD - 256)

        late = socket.create_connection(listener.address)  # accepted by the kernel while every slot is taken
        late.sendall(b"first line\nsecond line\ncut")  # before the listener even accepts it
        await wait_for(lambda: stats.tcp_rejected_connections == FLOOD - 256 + 1, "the late client rejected")
        assert sink.values == [b"first line", b"second line"]  # read before the reset, submitted
        assert [(r[0], r[1]) for r in sink.rejected] == [(DiscardReason.MALFORMED, b"cut")]
        assert stats.tcp_partial_lines == 1
        late.close()

        now[0] += 61  # idle_timeout (60 s) passes: the next sweep (every second) closes them
        await wait_for(lambda: not listener.connections, "the idle connections closed", timeout=5)
        assert stats.tcp_idle_closed == 256
        _, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"served again\n")
        await wait_for(lambda: sink.values[-1:] == [b"served again"], "a line on a new connection")
        assert stats.tcp_connections == 257
        for w in [*flood, writer]:
            w.close()
        await listener.stop()

    run(main())


def test_a_trickled_line_is_cut_off_after_line_timeout(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(line_timeout=0.3, idle_timeout=60), sink)
        reader, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"whole\n")
        await wait_for(lambda: sink.values == [b"whole"], "the whole line")
        with contextlib.suppress(ConnectionError):
            for _ in range(100):  # a byte every 50 ms: never idle, never ends the line
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.05)
                if listener.stats.tcp_line_timeouts:
                    break
        await wait_for(lambda: not listener.connections, "the connection reset")
        assert listener.stats.tcp_line_timeouts == 1 and listener.stats.tcp_idle_closed == 0
        assert len(sink.rejected) == 1 and sink.rejected[0][0] is DiscardReason.MALFORMED
        assert set(sink.rejected[0][1]) == {ord("x")} and listener.stats.tcp_partial_lines == 1
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        await listener.stop()

    run(main())


def test_a_connection_paused_for_the_budget_never_times_out(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(idle_timeout=0.2, line_timeout=0.2), sink)
        sink.full = True
        _, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"held\n" * 3)
        await wait_for(lambda: listener.stats.tcp_pauses == 1, "a pause")
        await asyncio.sleep(0.6)  # three times the timeouts: the daemon is the one waiting
        assert len(listener.connections) == 1
        sink.free()
        await wait_for(lambda: sink.values == [b"held"] * 3, "the held lines")
        assert listener.stats.tcp_idle_closed == listener.stats.tcp_line_timeouts == 0
        writer.close()
        await listener.stop()

    run(main())


@pytest.mark.parametrize("key", ["idle_timeout", "line_timeout"])
@pytest.mark.parametrize("value", [0, -1, 86401, "60", True])
def test_timeouts_are_checked(key: str, value: object) -> None:
    with pytest.raises(PlogConfigError, match=rf"plog.listener.{key}: must be a number of seconds in \(0, 86400\]"):
        tcp(**{key: value})


def test_tcp_listeners_may_take_at_most_half_the_descriptors() -> None:
    check_descriptors([tcp(max_connections=256), tcp(max_connections=256, port=1)], 1024)  # the defaults fit twice
    with pytest.raises(PlogConfigError, match=r"max_connections add up to 513, more than half of the 1024 .*ulimit -n"):
        check_descriptors([tcp(max_connections=256), tcp(max_connections=257, port=1)], 1024)
    check_descriptors([tcp(max_connections=100_000)], -1)  # no limit
