"""The TCP listener over real loopback connections, with a fake sink: line splitting, over-long lines, many
connections, the connection limit, backpressure (pause while the budget is full, resume when it frees), and every
lost line reported to the sink."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from bruce.producer.reasons import DiscardReason
from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.plog.listeners import TcpListener


def tcp(**overrides) -> ListenerConfig:
    return ListenerConfig(**{"protocol": "tcp", "port": 0, "topic": "lines", "name": "tcp-test", **overrides})


async def started(config: ListenerConfig, sink) -> TcpListener:
    listener = TcpListener(config, sink)
    await listener.start()
    return listener


async def send_in_pieces(address, pieces: list[bytes], *, eof: bool = True):
    reader, writer = await asyncio.open_connection(*address)
    for piece in pieces:
        writer.write(piece)
        await writer.drain()
        await asyncio.sleep(0.005)  # separate reads on the server
    if eof:
        writer.write_eof()
    return reader, writer


def test_lines_split_across_reads(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)
        pieces = [b"hel", b"lo\nwor", b"ld\r\n", b"\n", b"tab\there\nlast without newline"]
        _, writer = await send_in_pieces(listener.address, pieces)
        await wait_for(lambda: len(sink.messages) == 5, "five lines")
        assert sink.values == [b"hello", b"world", b"", b"tab\there", b"last without newline"]
        assert {(m[0], m[1], m[3]) for m in sink.messages} == {("lines", None, "tcp-test")}
        assert listener.stats.tcp_lines == 5
        writer.close()
        await listener.stop()

    run(main())


def test_over_long_lines_are_counted_and_skipped_without_buffering(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(max_line=10), sink)
        _, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"0123456789\n" + b"x" * 11 + b"\n" + b"ok\r\n")  # exactly max, one over, fine
        await wait_for(lambda: len(sink.messages) == 2, "two lines")
        for _ in range(50):  # a 50 KB line in pieces: never held whole
            writer.write(b"y" * 1000)
            await writer.drain()
            await asyncio.sleep(0.001)
            (conn,) = listener.connections
            assert len(conn._buffer) <= 11 + 1000
        writer.write(b"y\nafter\n")
        await wait_for(lambda: len(sink.messages) == 3, "the line after the long one")
        assert sink.values == [b"0123456789", b"ok", b"after"]
        assert listener.stats.tcp_line_too_long == 2
        assert [(r[0], r[1][:11]) for r in sink.rejected] == [
            (DiscardReason.LONG_MSG, b"x" * 11),
            (DiscardReason.LONG_MSG, b"y" * 11),
        ]
        writer.close()
        await listener.stop()

    run(main())


def test_many_concurrent_connections_keep_their_order(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)

        async def client(n: int) -> None:
            _, writer = await asyncio.open_connection(*listener.address)
            for i in range(20):
                writer.write(b"client %d line %d\n" % (n, i))
                if i % 7 == 0:
                    await writer.drain()
                    await asyncio.sleep(0)
            writer.close()

        await asyncio.gather(*(client(n) for n in range(50)))
        await wait_for(lambda: len(sink.messages) == 1000, "1000 lines")
        for n in range(50):
            mine = [v for v in sink.values if v.startswith(b"client %d " % n)]
            assert mine == [b"client %d line %d" % (n, i) for i in range(20)]
        assert listener.stats.tcp_connections == 50
        await wait_for(lambda: not listener.connections, "every connection closed")
        await listener.stop()

    run(main())


def test_connections_beyond_the_limit_are_refused(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(max_connections=2), sink)
        kept = [await asyncio.open_connection(*listener.address) for _ in range(2)]
        await wait_for(lambda: len(listener.connections) == 2, "two connections")
        reader, writer = await asyncio.open_connection(*listener.address)
        with contextlib.suppress(ConnectionResetError):  # an abort may arrive as a reset
            assert await asyncio.wait_for(reader.read(), 5) == b""
        assert listener.stats.tcp_rejected_connections == 1
        kept[0][1].write(b"still served\n")
        await wait_for(lambda: sink.values == [b"still served"], "a line on a kept connection")
        for _, w in [*kept, (reader, writer)]:
            w.close()
        await listener.stop()

    run(main())


def test_a_full_budget_pauses_reading_until_it_frees(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)
        sink.full = True
        _, writer = await asyncio.open_connection(*listener.address)
        line = b"z" * 999 + b"\n"
        writer.write(line * 3)
        await wait_for(lambda: listener.stats.tcp_pauses == 1, "a pause")
        assert sink.messages == [] and sink.refused == []  # held, not refused
        assert list(sink.waiters.values()) == [999]  # it waits for room for its next line
        writer.write(line * 20_000)  # 20 MB: the kernel buffers fill and the client must wait
        stalled = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0.3)
        assert not stalled.done(), "the client could write 20 MB into a paused connection"
        (conn,) = listener.connections
        assert len(conn._buffer) <= 3 * 1000 + 256 * 1024  # only what was read before the pause
        sink.free()
        await asyncio.wait_for(stalled, 5)
        writer.write_eof()
        await wait_for(lambda: len(sink.messages) == 20_003, "every line after resuming")
        assert set(sink.values) == {line[:-1]}
        assert sink.refused == []
        writer.close()
        await listener.stop()

    run(main())


def test_pausing_again_after_a_resume(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)
        _, writer = await asyncio.open_connection(*listener.address)
        for round_ in range(3):
            sink.full = True
            writer.write(b"round %d\n" % round_)
            await wait_for(lambda r=round_: listener.stats.tcp_pauses == r + 1, "a pause")
            assert len(sink.messages) == round_
            sink.free()
            await wait_for(lambda r=round_: len(sink.messages) == r + 1, "the held line")
        assert sink.values == [b"round 0", b"round 1", b"round 2"]
        writer.close()
        await listener.stop()

    run(main())


def test_a_reset_loses_only_the_unterminated_line(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)
        _, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"complete\nhalf a li")
        await writer.drain()
        await wait_for(lambda: len(sink.messages) == 1, "the complete line")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends a reset
        writer.transport.abort()
        await wait_for(lambda: listener.stats.tcp_partial_lines == 1, "the partial line counted")
        assert sink.values == [b"complete"]
        assert sink.rejected == [(DiscardReason.MALFORMED, b"half a li", None, "tcp-test")]
        await listener.stop()

    run(main())


def test_stop_gives_held_lines_a_fate(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(), sink)
        sink.full = True
        reader, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"held 1\nheld 2\nunterminated")
        await wait_for(lambda: listener.stats.tcp_pauses == 1, "a pause")
        await listener.stop()
        assert [r[2] for r in sink.refused] == [b"held 1", b"held 2"]  # the sink saw them (and counts the discard)
        assert (listener.stats.failed_to_send, listener.stats.tcp_partial_lines) == (2, 1)
        assert sink.rejected == [(DiscardReason.MALFORMED, b"unterminated", None, "tcp-test")]
        assert sink.waiters == {}  # the paused connection withdrew its callback
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

    run(main())


def test_an_unexpected_error_aborts_the_connection_and_is_handed_to_the_sink(run, sink, wait_for) -> None:
    """A bug (here in the sink) is never swallowed: the connection is aborted and the error reported, which stops the
    daemon; other connections are untouched."""

    async def main() -> None:
        listener = await started(tcp(), sink)
        real_submit = sink.submit

        def flaky(topic, key, value, **kwargs):
            if value == b"bad":
                raise RuntimeError("sink bug")
            return real_submit(topic, key, value, **kwargs)

        sink.submit = flaky
        reader, writer = await asyncio.open_connection(*listener.address)
        writer.write(b"one\nbad\ntwo\n")
        await wait_for(lambda: sink.failures != [], "the failure reported")
        ((error, name),) = sink.failures
        assert (repr(error), name) == ("RuntimeError('sink bug')", "tcp-test")
        assert sink.values == [b"one"] and listener.connections == set()
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 5) == b""  # aborted
        _, other = await send_in_pieces(listener.address, [b"three\n"])
        await wait_for(lambda: sink.values == [b"one", b"three"], "another connection served")
        for w in (writer, other):
            w.close()
        await listener.stop()

    run(main())


def test_an_over_long_last_line_at_the_end_of_the_stream_is_rejected(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(tcp(max_line=5), sink)
        _, writer = await send_in_pieces(listener.address, [b"fine\n", b"toolong"])
        await wait_for(lambda: sink.rejected != [], "the rejection")
        assert (sink.values, sink.rejected) == ([b"fine"], [(DiscardReason.LONG_MSG, b"toolong", None, "tcp-test")])
        writer.close()
        await listener.stop()

    run(main())
