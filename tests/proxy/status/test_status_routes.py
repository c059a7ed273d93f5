"""Every status route over real HTTP on 127.0.0.1: shapes of the plain pages, JSON that parses with Bruce's fields,
content types, 404 / 405 for what is not a page, the metadata update trigger, the message debug commands, and a
failing source answering 500 while the server keeps serving."""

from __future__ import annotations

import json
import re
import socket
import time

import pytest

from bruce.proxy.status.bruce_counters import SERVED

from .conftest import NOW, START, RunningStatus, bruce_counter_parse

PLAIN = "text/plain; charset=utf-8"
JSON = "application/json; charset=utf-8"


def get_json(status: RunningStatus, path: str) -> dict:
    reply = status.get(path)
    assert (reply.status, reply.content_type) == (200, JSON), reply.text
    return json.loads(reply.text)


def get_plain(status: RunningStatus, path: str) -> str:
    reply = status.get(path)
    assert (reply.status, reply.content_type) == (200, PLAIN), reply.text
    return reply.text


# -- the pages --------------------------------------------------------------------------------------------------------


def test_server_info(status: RunningStatus) -> None:
    now, since = int(NOW), int(START)
    assert get_plain(status, "/server_info/plain") == (
        f"pid: 4321\nnow: {now} {time.ctime(now)}\nversion: 9.8.7-test\nsince: {since} {time.ctime(since)}\n"
    )
    assert get_json(status, "/server_info/json") == {"pid": 4321, "now": now, "version": "9.8.7-test", "since": since}


def test_counters_plain_is_bruces_catalogue_and_reads_with_bruces_parser(status: RunningStatus) -> None:
    text = get_plain(status, "/counters/plain")
    assert text.startswith(f"now={int(NOW)} {time.ctime(int(NOW))}\nsince={int(START)} ")
    lines = text.splitlines()
    assert "pid=4321" in lines and "version=9.8.7-test" in lines
    assert "[bruce].MsgCreate=10" in lines
    assert "[bruce].ConnectorGotSuccessfulAck=7" in lines
    assert "[bruce].MongooseGetCountersRequest=1" in lines
    assert "[bruce].InputAgentDiscardMsgMalformed=0" in lines  # the fake tracker counts Discard, not InputAgent*
    parsed = bruce_counter_parse(text)
    assert list(parsed) == list(SERVED)
    assert parsed["AckErrorUndocumented"] == 2  # the fake's code "6" is not an error name


def test_counters_json(status: RunningStatus) -> None:
    body = get_json(status, "/counters/json")
    assert (body["now"], body["since"], body["pid"], body["version"]) == (int(NOW), int(START), 4321, "9.8.7-test")
    names = [c["name"] for c in body["counters"]]
    assert names == list(SERVED)  # each name once
    assert all(set(c) == {"location", "name", "value"} and isinstance(c["value"], int) for c in body["counters"])
    rows = {c["name"]: c["value"] for c in body["counters"]}
    assert rows["MsgCreate"] == 10 and rows["MongooseGetCountersRequest"] == 1


def test_discards_use_the_tracker_report(status: RunningStatus) -> None:
    text = get_plain(status, "/discards/plain")
    assert text.startswith(f"pid: 4321\nnow: {int(NOW)} ")
    assert "    rate limit discard topic: 5[rated] count 1" in text
    assert "    malformed msg count: 1" in text
    body = get_json(status, "/discards/json")
    assert (body["pid"], body["version"], body["interval"]) == (4321, "9.8.7-test", 600)
    report = body["unfinished_report"]
    assert report["malformed_msg_count"] == 1
    assert report["rate_limit_discard"] == [{"topic": "rated", "count": 1}]
    assert report["discard_topic"][0]["topic"] == "rated"


def test_queues(status: RunningStatus) -> None:
    text = get_plain(status, "/queues/plain")
    lines = text.splitlines()
    assert lines[:4] == ["pid: 4321", f"now: {int(NOW)} {time.ctime(int(NOW))}", "version: 9.8.7-test", ""]
    assert lines[4] == "batch:          1  send_wait:          2  ack_wait:          3  topic: [alpha]"
    assert lines[5] == "batch:         10  send_wait:         20  ack_wait:         30  topic: [beta.events]"
    assert lines[7:] == [
        "         5 total new",
        "        11 total batch",
        "        22 total send_wait",
        "        33 total ack_wait",
        "        71 total (all states: new + batch + send_wait + ack_wait)",
    ]
    body = get_json(status, "/queues/json")
    assert body == {
        "now": int(NOW),
        "pid": 4321,
        "version": "9.8.7-test",
        "sending": [
            {"topic": "alpha", "batch": 1, "send_wait": 2, "ack_wait": 3},
            {"topic": "beta.events", "batch": 10, "send_wait": 20, "ack_wait": 30},
        ],
        "new": 5,
    }


def test_metadata_fetch_time_json_is_valid_json(status: RunningStatus) -> None:
    now_ms = int(NOW * 1000)
    text = get_plain(status, "/metadata_fetch_time/plain")
    assert text.splitlines() == [
        "pid: 4321",
        "version: 9.8.7-test",
        f"now (milliseconds since epoch): {now_ms} {time.ctime(now_ms // 1000)}",
        f"metadata last updated at (milliseconds since epoch): 1700000100123 {time.ctime(1700000100)}",
        f"metadata last modified at (milliseconds since epoch): 1700000050456 {time.ctime(1700000050)}",
    ]
    reply = status.get("/metadata_fetch_time/json")
    assert ",\n}" not in reply.text  # Bruce's trailing comma
    assert json.loads(reply.text) == {
        "pid": 4321,
        "version": "9.8.7-test",
        "now": now_ms,
        "last_updated": 1700000100123,
        "last_modified": 1700000050456,
    }


def test_post_metadata_update_calls_the_trigger(status: RunningStatus) -> None:
    assert status.source.metadata_update_requests == 0
    reply = status.request("/metadata_update", method="POST", data=b"")
    assert (reply.status, reply.content_type) == (200, PLAIN)
    assert reply.text == f"Metadata update initiated at {int(NOW)} {time.ctime(int(NOW))}\n"
    assert status.source.metadata_update_requests == 1
    # A GET does not trigger it.
    assert status.get("/metadata_update").status == 405
    assert status.source.metadata_update_requests == 1


# -- message debug ----------------------------------------------------------------------------------------------------


def test_msg_debug_commands_reach_the_debug_log(status: RunningStatus) -> None:
    debug = status.source.debug
    assert get_plain(status, "/msg_debug/get_topics") == "No message debug topics are currently enabled\n"
    assert get_plain(status, "/msg_debug/add_topic/orders") == "Enabled debug topic [orders]\n"
    assert debug.active
    assert get_plain(status, "/msg_debug/add_topic/orders") == "Failed to enable debug topic [orders]\n"
    assert get_plain(status, "/msg_debug/get_topics") == "topic: [orders]\n"
    assert get_plain(status, "/msg_debug/truncate_files") == "Message debug files truncated\n"
    assert get_plain(status, "/msg_debug/del_topic/orders") == "Disabled debug topic [orders]\n"
    assert not debug.active
    assert get_plain(status, "/msg_debug/add_all_topics") == "All message debug topics enabled\n"
    assert get_plain(status, "/msg_debug/get_topics") == "All message debug topics are currently enabled\n"
    assert get_plain(status, "/msg_debug/del_all_topics") == "All message debug topics disabled\n"
    assert not debug.active


def test_msg_debug_topic_is_url_decoded(status: RunningStatus) -> None:
    assert get_plain(status, "/msg_debug/add_topic/a%20b") == "Enabled debug topic [a b]\n"
    assert get_plain(status, "/msg_debug/get_topics") == "topic: [a b]\n"


@pytest.mark.parametrize("path", ["/msg_debug/nope", "/msg_debug/get_topics/extra", "/msg_debug/add_topics/x"])
def test_unknown_msg_debug_command_is_404(status: RunningStatus, path: str) -> None:
    reply = status.get(path)
    assert (reply.status, reply.content_type) == (404, PLAIN)
    assert path in reply.text
    assert not status.source.debug.active


# -- what is not a page -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/nope", "/server_info", "/server_info/xml", "/counters/plain/", "/metrics/x", "/index.html", "/msg_debug"]
)
def test_unknown_paths_are_404_with_a_text_body(status: RunningStatus, path: str) -> None:
    reply = status.get(path)
    assert (reply.status, reply.content_type) == (404, PLAIN)
    assert reply.text == f"[not found: {path}; the front page / lists every page]\n"
    assert status.server.counters.get("StatusNotFound") == 1


def test_unknown_post_is_404(status: RunningStatus) -> None:
    reply = status.request("/sys/metadata_update", method="POST", data=b"")
    assert reply.status == 404
    assert status.source.metadata_update_requests == 0


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_are_405_with_allow(status: RunningStatus, method: str) -> None:
    reply = status.request("/counters/json", method=method, data=b"" if method in ("PUT", "PATCH") else None)
    assert (reply.status, reply.content_type) == (405, PLAIN)
    assert reply.headers["Allow"] == "GET,HEAD"
    assert f"method {method} not allowed on /counters/json" in reply.text
    assert status.server.counters.get("StatusMethodNotAllowed") == 1


def test_head_is_served(status: RunningStatus) -> None:
    reply = status.request("/server_info/json", method="HEAD")
    assert (reply.status, reply.content_type, reply.text) == (200, JSON, "")


# -- failures ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("broken", "path"),
    [
        ("queue_stats", "/queues/json"),
        ("queue_stats", "/"),
        ("counter_sets", "/counters/plain"),
        ("discard_report", "/discards/json"),
        ("metadata_times", "/metadata_fetch_time/plain"),
        ("gauges", "/metrics"),
        ("msg_debug_command", "/msg_debug/get_topics"),
    ],
)
def test_a_failing_source_answers_500_and_the_server_keeps_serving(
    status: RunningStatus, broken: str, path: str
) -> None:
    status.source.fail = broken
    reply = status.get(path)
    assert (reply.status, reply.content_type) == (500, PLAIN)
    assert reply.text == f"[internal error on {path}: RuntimeError: {broken} is broken]\n"
    assert status.server.counters.get("StatusHandlerError") == 1
    status.source.fail = None
    assert status.get(path).status == 200


def test_failing_metadata_update_is_500(status: RunningStatus) -> None:
    status.source.fail = "request_metadata_update"
    reply = status.request("/metadata_update", method="POST", data=b"")
    assert reply.status == 500
    assert "request_metadata_update is broken" in reply.text


def test_requests_are_counted_per_page(status: RunningStatus) -> None:
    for path in ["/", "/queues/plain", "/queues/json", "/metrics", "/msg_debug/get_topics"]:
        assert status.get(path).status == 200
    counters = status.server.counters
    assert counters.get("StatusRequest", (("page", "queues"),)) == 2
    assert counters.get("StatusRequest", (("page", "front"),)) == 1
    assert counters.get("StatusRequest", (("page", "metrics"),)) == 1
    assert counters.get("StatusRequest", (("page", "msg_debug"),)) == 1


# -- malformed HTTP ---------------------------------------------------------------------------------------------------


def raw_exchange(status: RunningStatus, request: bytes) -> bytes:
    assert status.server.port is not None
    with socket.create_connection(("127.0.0.1", status.server.port), timeout=5) as s:
        s.sendall(request)
        chunks = []  # the server closes the connection after a 400
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"FOO /counters/plain HTTP/1.1\r\nHost: x\r\n\r\n",  # not an HTTP method
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",  # request line over 8 KiB
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",  # header over 8 KiB
        b"\x00\x01\x02 not http\r\n\r\n",
    ],
)
def test_malformed_http_is_400_and_the_server_keeps_serving(status: RunningStatus, request_bytes: bytes) -> None:
    answer = raw_exchange(status, request_bytes)
    assert re.match(rb"HTTP/1\.[01] 400 ", answer), answer[:200]
    assert b"Content-Type: text/plain" in answer
    assert status.get("/server_info/json").status == 200
