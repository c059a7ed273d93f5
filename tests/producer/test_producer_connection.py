"""The sans-I/O connection core: correlation ids, the in-flight FIFO, framing fed whole, byte by byte and split
anywhere, and every protocol error (after which the connection is dead)."""

from __future__ import annotations

import asyncio
import struct

import pytest

from bruce.producer.acks import Failure
from bruce.producer.errors import BrokerProtocolError, TransportError
from bruce.producer.transport.broker_connection import Timeouts, connect
from bruce.producer.transport.framing import Connection
from bruce.wire.protocol.api_versions import ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse
from bruce.wire.protocol.base import encode_response
from bruce.wire.protocol.metadata import MetadataResponse, MetadataResponseBroker, metadata_request
from bruce.wire.protocol.produce import ProduceRequest

API = ApiVersionsResponse(0, (ApiVersionRange(0, 0, 9), ApiVersionRange(3, 0, 12)))
META = MetadataResponse(brokers=(MetadataResponseBroker(1, "h", 1),), topics=())


def _pair(conn: Connection) -> tuple[bytes, bytes]:
    """Send ApiVersions v3 and Metadata v1; return their responses' frames."""
    conn.send_request(ApiVersionsRequest(), 3, token="a")
    conn.send_request(metadata_request(None, version=1), 1, token="m")
    first, second = (p.correlation_id for p in conn.in_flight)
    api = encode_response(API, version=3, correlation_id=first)
    return api, encode_response(META, version=1, correlation_id=second)


def _feed(conn: Connection, chunks: list[bytes]) -> list[tuple[str, object]]:
    out = []
    for chunk in chunks:
        out += [(p.token, body) for p, body in conn.receive_data(chunk)]
    return out


@pytest.mark.parametrize("mode", ["whole", "bytewise", "split-everywhere"])
def test_responses_in_order_however_the_bytes_arrive(mode: str) -> None:
    conn = Connection("bruce")
    a, m = _pair(conn)
    data = a + m
    if mode == "whole":
        got = _feed(conn, [data])
        assert got == [("a", API), ("m", META)]
    elif mode == "bytewise":
        got = _feed(conn, [data[i : i + 1] for i in range(len(data))])
        assert got == [("a", API), ("m", META)]
    else:
        for cut in range(1, len(data)):
            c = Connection("bruce")
            a2, m2 = _pair(c)
            joined = a2 + m2
            assert _feed(c, [joined[:cut], joined[cut:]]) == [("a", API), ("m", META)], cut
            assert c.buffered == 0 and not c.in_flight


def test_partial_frame_waits_for_the_rest() -> None:
    conn = Connection("bruce")
    a, _ = _pair(conn)
    assert conn.receive_data(a[:-1]) == []
    assert conn.buffered == len(a) - 1 and len(conn.in_flight) == 2


def test_correlation_ids_count_from_one_and_wrap() -> None:
    conn = Connection("bruce")
    for expected in (1, 2, 3):
        frame = conn.send_request(ApiVersionsRequest(), 0)
        assert struct.unpack_from(">i", frame, 8)[0] == expected
    conn._next_id = 2**31 - 1
    conn.send_request(ApiVersionsRequest(), 0)
    frame = conn.send_request(ApiVersionsRequest(), 0)
    assert struct.unpack_from(">i", frame, 8)[0] == 1


def test_request_without_response_is_not_in_flight_and_its_answer_is_tolerated() -> None:
    conn = Connection("bruce")
    conn.send_request(ProduceRequest(topic_data=(), acks=0), 3, expect_response=False)
    assert not conn.in_flight
    from bruce.wire.protocol.produce import ProduceResponse

    stray = encode_response(ProduceResponse(responses=()), version=3, correlation_id=1)
    assert conn.receive_data(stray, tolerate_unsolicited=True) == [] and conn.error is None
    strict = Connection("bruce")
    assert strict.receive_data(stray) == []
    assert "no request outstanding" in str(strict.error)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (struct.pack(">i", -1), "outside"),
        (struct.pack(">i", 2) + b"xx", "outside"),
        (struct.pack(">i", 101 * 1024 * 1024), "outside"),
        (struct.pack(">ii", 4, 99), "while 1 was expected"),
        (struct.pack(">ii", 6, 1) + b"\xff\xff", "undecodable"),
    ],
    ids=["negative-size", "tiny-size", "over-the-cap", "correlation-mismatch", "undecodable-body"],
)
def test_protocol_errors_are_final(frame: bytes, message: str) -> None:
    conn = Connection("bruce")
    conn.send_request(ApiVersionsRequest(), 0, token="t")
    assert conn.receive_data(frame) == []
    assert isinstance(conn.error, BrokerProtocolError) and message in str(conn.error)
    assert [p.token for p in conn.in_flight] == ["t"]  # still there: the caller fails it
    with pytest.raises(BrokerProtocolError):
        conn.receive_data(b"")
    with pytest.raises(BrokerProtocolError):
        conn.send_request(ApiVersionsRequest(), 0)


def test_responses_before_a_bad_frame_are_returned_and_the_rest_stay_in_flight() -> None:
    """A good response and a bad frame in one read: the good one still gets its outcome, exactly once."""
    conn = Connection("bruce")
    a, _m = _pair(conn)
    conn.send_request(ApiVersionsRequest(), 0, token="third")
    assert _feed(conn, [a + struct.pack(">ii", 4, 77)]) == [("a", API)]
    assert "correlation id 77" in str(conn.error)
    assert [p.token for p in conn.in_flight] == ["m", "third"]  # the caller fails these


def test_states_by_inputs() -> None:
    """Every (state, input) pair: open or dead, times send / good bytes / bad bytes."""
    for dead in (False, True):
        for action in ("send", "good", "bad"):
            conn = Connection("bruce")
            a, _m = _pair(conn)
            if dead:
                conn.fail(BrokerProtocolError("x"))
            run = {
                "send": lambda c=conn: c.send_request(ApiVersionsRequest(), 0),
                "good": lambda c=conn, d=a: c.receive_data(d),
                "bad": lambda c=conn: c.receive_data(struct.pack(">ii", 4, 77)),
            }[action]
            if dead:
                with pytest.raises(BrokerProtocolError):
                    run()
            else:
                run()
                assert (conn.error is not None) == (action == "bad")


def test_the_shell_resolves_a_response_that_arrived_with_a_bad_frame() -> None:
    """Over loopback: one read holds the first answer and a bad frame; the first request succeeds, the second fails."""

    async def main() -> tuple[object, BaseException | None]:
        answered = asyncio.Event()

        async def broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            ids = []
            for _ in range(2):
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                ids.append(struct.unpack_from(">i", await reader.readexactly(size), 4)[0])
            writer.write(encode_response(API, version=0, correlation_id=ids[0]) + struct.pack(">ii", 4, 77))
            await writer.drain()
            await answered.wait()
            writer.close()

        server = await asyncio.start_server(broker, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            conn = await connect("127.0.0.1", port, "bruce", Timeouts(1, 1, 1))
            first, second = conn.request(ApiVersionsRequest(), 0), conn.request(ApiVersionsRequest(), 0)
            async with asyncio.timeout(5):
                done = await first
                failure = (await asyncio.gather(second, return_exceptions=True))[0]
            answered.set()
            return done, failure

    done, failure = asyncio.run(main())
    assert done == API
    assert isinstance(failure, TransportError) and failure.reason == Failure.PROTOCOL_ERROR
    assert "correlation id 77" in str(failure)
