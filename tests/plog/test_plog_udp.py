"""The UDP listener over real loopback sockets, with a fake sink: unboxed messages, multipart messages (keys placed as
plog's producer places them), commands, malformed packets and every other drop reported to the sink, bursts, and an
orderly stop."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.config.listeners import ListenerConfig
from bruce.proxy.plog import listeners
from bruce.proxy.plog.listeners import UdpListener
from bruce.wire.errors import UsageError
from bruce.wire.plog import Fragment, build_command, build_fragment, build_fragments, plog_partition_key

MALFORMED, LONG_MSG, BAD_TOPIC = DiscardReason.MALFORMED, DiscardReason.LONG_MSG, DiscardReason.BAD_TOPIC


def udp(**overrides) -> ListenerConfig:
    return ListenerConfig(**{"protocol": "udp", "port": 0, "topic": "default-topic", "name": "udp-test", **overrides})


async def started(config: ListenerConfig, sink, **kwargs) -> UdpListener:
    listener = UdpListener(config, sink, **kwargs)
    await listener.start()
    return listener


def test_unboxed_datagrams_go_to_the_default_topic(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        for text in (b"first message", b"\xffbinary after a high byte", b" "):
            client.send(text)
        await wait_for(lambda: len(sink.messages) == 3, "three messages")
        assert sink.messages == [
            ("default-topic", None, b"first message", "udp-test"),
            ("default-topic", None, b"\xffbinary after a high byte", "udp-test"),
            ("default-topic", None, b" ", "udp-test"),
        ]
        assert (listener.stats.udp_simple_messages, listener.stats.seen_messages) == (3, 3)
        client.close()
        await listener.stop()

    run(main())


def test_multipart_messages_are_reassembled_out_of_order(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        big = bytes(range(256)) * 800  # 204,800 bytes in 26 fragments
        tagged = build_fragments(big, message_id=0x444, fragment_size=8000, topic="tagged", partition_key="user-7")
        plain = build_fragments(b"x" * 2500, message_id=0x445, fragment_size=1000)
        for packet in list(reversed(tagged)) + plain:
            client.send(packet)
        await wait_for(lambda: len(sink.messages) == 2, "two reassembled messages")
        assert sorted(sink.messages) == [
            ("default-topic", None, b"x" * 2500, "udp-test"),
            ("tagged", b"user-7", big, "udp-test"),
        ]
        keys = dict(zip([m[1] for m in sink.messages], sink.partition_keys, strict=True))
        assert keys == {None: None, b"user-7": plog_partition_key(b"user-7")}  # placed as plog's producer did
        assert sum(listener.stats.v0_fragments) == 29
        assert listener.stats.v0_fragments[(25).bit_length()] == 10  # indices 16..25
        assert listener.stats.v0_multipart_messages == 2
        client.close()
        await listener.stop()

    run(main())


def test_ping_pong_with_trailing_payload_any_case(run, sink, udp_client) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        client.send(build_command("PING", b"\x00token\xff"))
        assert await client.reply() == b"PONG\x00token\xff"
        client.send(b"\x00\x00ping")
        assert await client.reply() == b"PONG"
        assert listener.stats.v0_commands == 2
        assert sink.messages == []
        client.close()
        await listener.stop()

    run(main())


def test_stat_reports_plog_fields(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        client.send(b"an unboxed message")
        client.send(b"\x05 invalid version")
        client.send(b"\x00\x09")  # invalid type
        client.send(b"\x00\x01short")  # invalid multipart header
        for packet in build_fragments(b"abcdef", message_id=1, fragment_size=4):
            client.send(packet)
        await wait_for(lambda: len(sink.messages) == 2, "both messages")
        client.send(b"\x00\x00statfordatadogplease")  # plog's datadog check sends this
        stats = json.loads(await client.reply())
        assert stats["listener"] == "udp-test"
        assert stats["udp_simple_messages"] == 1
        assert stats["udp_invalid_version"] == 1
        assert stats["v0_invalid_type"] == 1
        assert stats["v0_invalid_multipart_header"] == 1
        assert stats["v0_fragments"][:2] == [1, 1] and sum(stats["v0_fragments"]) == 2
        assert stats["defragmenter"]["misses"] == 1 and stats["defragmenter"]["hits"] == 1
        assert stats["handlers"] == [{"name": "kafka", "seen_messages": 2, "failed_to_send": 0, "no_topic": 0}]
        assert stats["v0_commands"] == 1  # STAT counts itself before answering
        for field in (
            "version",
            "uptime",
            "unknown_command",
            "exceptions",
            "holes_from_dead_port",
            "dropped_fragments",
        ):
            assert field in stats
        assert len(stats["v0_invalid_fragments"]) == 17 and len(stats["v0_invalid_fragments"][16]) == 17
        assert sink.rejected == [  # each bad packet reported to the sink, as it came
            (MALFORMED, b"\x05 invalid version", None, "udp-test"),
            (MALFORMED, b"\x00\x09", None, "udp-test"),
            (MALFORMED, b"\x00\x01short", None, "udp-test"),
        ]
        client.close()
        await listener.stop()

    run(main())


def test_envi_returns_the_listener_config(run, sink, udp_client) -> None:
    async def main() -> None:
        listener = await started(udp(defrag_expiry=3.5), sink)
        client = await udp_client.connect(listener.address)
        client.send(b"\x00\x00ENVI")
        env = json.loads(await client.reply())
        assert (env["protocol"], env["topic"], env["defrag_expiry"], env["enable_kill"]) == (
            "udp",
            "default-topic",
            3.5,
            False,
        )
        client.close()
        await listener.stop()

    run(main())


def test_unknown_commands_are_counted_and_not_answered(run, sink, udp_client) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        client.send(b"\x00\x00HELP")
        client.send(b"\x00\x00PI")  # too short to be a command
        client.send(build_command("PING", b"after"))
        assert await client.reply() == b"PONGafter"  # the first reply: nothing answered the unknown ones
        assert (listener.stats.unknown_command, listener.stats.v0_commands) == (2, 1)
        assert sink.rejected == [(MALFORMED, b"\x00\x00PI", None, "udp-test")]  # a command, unknown: not a message
        client.close()
        await listener.stop()

    run(main())


def test_kill_is_refused_unless_enabled(run, sink, udp_client) -> None:
    async def main() -> None:
        kills: list[str] = []
        listener = await started(udp(), sink, on_kill=lambda: kills.append("killed"))
        client = await udp_client.connect(listener.address)
        client.send(b"\x00\x00KILL")
        client.send(build_command("PING"))
        assert await client.reply() == b"PONG"
        assert kills == []
        assert (listener.stats.kill_refused, listener.stats.unknown_command) == (1, 1)
        client.close()
        await listener.stop()

    run(main())


def test_enabled_kill_calls_the_shutdown_callback_and_the_listener_survives(run, sink, udp_client) -> None:
    async def main() -> None:
        kills: list[str] = []
        listener = await started(udp(enable_kill=True), sink, on_kill=lambda: kills.append("killed"))
        client = await udp_client.connect(listener.address)
        client.send(b"\x00\x00kill")
        client.send(build_command("PING"))
        assert await client.reply() == b"PONG"
        assert kills == ["killed"]
        assert (listener.stats.v0_commands, listener.stats.kill_refused) == (2, 0)
        client.close()
        await listener.stop()

    run(main())


def test_enabling_kill_requires_a_callback(sink) -> None:
    with pytest.raises(UsageError, match="KILL"):
        UdpListener(udp(enable_kill=True), sink)


def test_malformed_packets_are_counted_by_reason(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:  # asyncio's sendto() skips empty datagrams
            raw.sendto(b"", listener.address)
        for packet in (b"\x01x", b"\x00", b"\x00\x01" + bytes(22) + b"kt", b"\x00\x01" + bytes(30)):
            client.send(packet)
        client.send(build_command("PING"))
        assert await client.reply() == b"PONG"
        await wait_for(lambda: listener.stats.udp_empty_packets == 1, "the empty datagram")  # from another socket
        s = listener.stats
        assert (s.udp_empty_packets, s.udp_invalid_version, s.v0_invalid_type) == (1, 1, 1)
        assert s.v0_invalid_multipart_header == 2  # both fragment headers say 0 fragments
        assert (sink.failures, sink.messages) == ([], [])
        assert sink.reasons == ["MALFORMED"] * 5
        assert sorted(r[1] for r in sink.rejected)[:2] == [b"", b"\x00"]
        client.close()
        await listener.stop()

    run(main())


def test_without_a_topic_only_tagged_messages_are_sent(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(topic="null"), sink)  # plog's "null" default topic
        client = await udp_client.connect(listener.address)
        client.send(b"untagged")
        for packet in build_fragments(b"tagged", message_id=1, fragment_size=100, topic="chosen"):
            client.send(packet)
        for packet in build_fragments(b"to null", message_id=2, fragment_size=100, topic="null"):
            client.send(packet)
        await wait_for(lambda: listener.stats.no_topic == 2, "two messages without topic")
        assert sink.messages == [("chosen", None, b"tagged", "udp-test")]
        assert sink.rejected == [
            (BAD_TOPIC, b"untagged", "null", "udp-test"),
            (BAD_TOPIC, b"to null", "null", "udp-test"),
        ]
        client.close()
        await listener.stop()

    run(main())


def test_refused_submissions_are_counted(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        sink.full = True
        client = await udp_client.connect(listener.address)
        client.send(b"dropped: the budget is full")
        await wait_for(lambda: listener.stats.failed_to_send == 1, "a refused message")
        assert sink.refused == [("default-topic", None, b"dropped: the budget is full", "udp-test")]
        client.close()
        await listener.stop()

    run(main())


def test_stop_handles_datagrams_still_queued_in_the_kernel(run, sink) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(200):  # sent without yielding to the loop: all still queued at stop()
                s.sendto(b"queued %d" % i, listener.address)
        await listener.stop()
        assert sink.values == [b"queued %d" % i for i in range(200)]

    run(main())


def test_incomplete_messages_expire_and_are_counted(run, sink, udp_client, wait_for, monkeypatch) -> None:
    monkeypatch.setattr(listeners, "SWEEP_INTERVAL", 0.02)

    async def main() -> None:
        listener = await started(udp(defrag_expiry=0.1), sink)
        client = await udp_client.connect(listener.address)
        first, _second, third = build_fragments(b"abcdefghi", message_id=9, fragment_size=3)
        client.send(first)
        client.send(third)
        await wait_for(lambda: listener.stats.defrag_expired == 1, "the expiry sweep")
        assert listener.stats.dropped_fragments[2] == [0, 1, 0]  # fragment 1 of 3 never came
        assert (len(listener.defrag), listener.defrag.used, sink.messages) == (0, 0, [])
        assert sink.rejected == [(MALFORMED, b"abc", None, "udp-test")]  # the message, with its first bytes
        client.close()
        await listener.stop()


def test_bad_checksums_invalid_fragments_and_oversized_messages_are_rejected(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(defrag_capacity=8192), sink)
        client = await udp_client.connect(listener.address)
        good = build_fragments(b"0123456789", message_id=1, fragment_size=5)
        corrupt = Fragment(2, 1, 5, 1, 10, int.from_bytes(good[0][16:20], "big"), (), b"XXXXX")
        client.send(good[0])
        client.send(build_fragment(corrupt))  # completes message 1 with the wrong bytes
        client.send(build_fragment(Fragment(2, 0, 5, 2, 10, 0, (), b"abc")))  # payload shorter than promised
        client.send(build_fragment(Fragment(3, 0, 9000, 3, 27000, 0, (), b"y" * 9000)))  # cannot fit 8 KiB
        await wait_for(lambda: len(sink.rejected) == 3, "three rejections")
        assert sink.rejected == [
            (MALFORMED, b"01234XXXXX", None, "udp-test"),
            (MALFORMED, b"abc", None, "udp-test"),
            (LONG_MSG, b"y" * 9000, None, "udp-test"),
        ]
        s = listener.stats
        assert (sum(s.v0_invalid_checksum), sum(map(sum, s.v0_invalid_fragments)), s.defrag_too_large) == (1, 1, 1)
        assert sink.messages == []
        client.close()
        await listener.stop()

    run(main())


def test_stop_rejects_incomplete_messages(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        client.send(build_fragments(b"never completed", message_id=5, fragment_size=5)[0])
        await wait_for(lambda: len(listener.defrag) == 1, "a pending message")
        await listener.stop()
        assert sink.rejected == [(MALFORMED, b"never", None, "udp-test")]
        client.close()

    run(main())


def test_bursts_larger_than_one_wakeup_are_all_read(run, sink, wait_for) -> None:
    async def main() -> None:
        listener = await started(udp(), sink)
        count = 3 * listeners.UDP_BURST + 17
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            for i in range(count):  # queued without yielding: several wake-ups must read them
                s.sendto(b"burst %d" % i, listener.address)
        await wait_for(lambda: len(sink.messages) == count, f"{count} datagrams")
        assert sink.values == [b"burst %d" % i for i in range(count)]
        await listener.stop()

    run(main())


def test_a_reply_the_socket_refuses_is_counted(run, sink) -> None:
    class FullSocket:
        def sendto(self, data: bytes, addr: tuple) -> int:
            raise BlockingIOError("send buffer full")

    async def main() -> None:
        listener = await started(udp(), sink)
        listener._reply(FullSocket(), b"PONG", ("127.0.0.1", 9))  # type: ignore[arg-type]
        assert listener.stats.reply_failures == 1
        await listener.stop()

    run(main())

    run(main())


def test_listeners_on_one_loop_keep_separate_stats(run, sink, udp_client, wait_for) -> None:
    async def main() -> None:
        one = await started(udp(name="one"), sink)
        two = await started(udp(name="two", topic="other"), sink)
        c1, c2 = await udp_client.connect(one.address), await udp_client.connect(two.address)
        c1.send(b"to one")
        c2.send(b"to two")
        await wait_for(lambda: len(sink.messages) == 2, "both")
        assert sorted(sink.messages) == [("default-topic", None, b"to one", "one"), ("other", None, b"to two", "two")]
        assert (one.stats.udp_simple_messages, two.stats.udp_simple_messages) == (1, 1)
        for c in (c1, c2):
            c.close()
        await one.stop()
        await two.stop()

    run(main())


def test_an_unexpected_error_stops_reading_and_is_handed_to_the_sink(run, sink, udp_client, wait_for) -> None:
    """A bug (here in the sink) is never swallowed: the listener stops reading and reports the error, which stops the
    daemon. Datagrams sent afterwards stay in the kernel until the orderly stop reads them."""

    def broken(*args, **kwargs):
        raise RuntimeError("sink bug")

    async def main() -> None:
        listener = await started(udp(), sink)
        client = await udp_client.connect(listener.address)
        real_submit, sink.submit = sink.submit, broken
        client.send(b"hits the bug")
        await wait_for(lambda: sink.failures != [], "the failure reported")
        ((error, name),) = sink.failures
        assert (repr(error), name) == ("RuntimeError('sink bug')", "udp-test")
        sink.submit = real_submit
        client.send(b"not read while failed")
        await asyncio.sleep(0.05)
        assert sink.values == [] and listener.stats.udp_simple_messages == 1
        await listener.stop()  # the stop still reads what the kernel holds
        assert sink.values == [b"not read while failed"]
        client.close()

    run(main())
