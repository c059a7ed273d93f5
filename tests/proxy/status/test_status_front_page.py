"""The HTML front page: links to every page, the message debug commands, the "Update Metadata" form, held messages
per topic, and every shown value escaped."""

from __future__ import annotations

from html.parser import HTMLParser

from bruce.proxy.status import QueueStats, ServerInfo, StatusServer, TopicQueue
from bruce.proxy.status.pages import PAGES, render_front_page

from .conftest import FakeSource, LoopThread, RunningStatus

EVIL_TOPIC = '<script>alert("x")</script>&amp;'


class Collect(HTMLParser):
    """Every link, form (action, method) and table cell of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.forms: list[tuple[str, str]] = []
        self.cells: list[str] = []
        self.scripts = 0
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a":
            self.links.append(a["href"] or "")
        elif tag == "form":
            self.forms.append((a["action"] or "", a["method"] or ""))
        elif tag == "td":
            self._in_cell = True
            self.cells.append("")
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.cells[-1] += data


def parse(html: str) -> Collect:
    c = Collect()
    c.feed(html)
    c.close()
    return c


def test_front_page_over_http_links_every_page_and_posts_metadata_update(status: RunningStatus) -> None:
    reply = status.get("/")
    assert (reply.status, reply.content_type) == (200, "text/html; charset=utf-8")
    page = parse(reply.text)
    expected = {f"/{p}/{fmt}" for p in PAGES for fmt in ("plain", "json")} | {"/metrics", "/msg_debug/get_topics"}
    assert set(page.links) == expected
    for link in page.links:  # every link works
        assert status.get(link).status == 200, link
    assert ("/metadata_update", "post") in page.forms
    debug_forms = {action for action, method in page.forms if method == "get"}
    assert debug_forms == {"/msg_debug/add_all_topics", "/msg_debug/del_all_topics", "/msg_debug/truncate_files"}
    assert 'value="Update Metadata"' in reply.text
    assert page.cells[:4] == ["alpha", "1", "2", "3"]
    assert "pid 4321, version 9.8.7-test" in reply.text


def test_front_page_escapes_topics_and_version() -> None:
    info = ServerInfo(pid=1, version='1.0<b>"', start_time=0)
    html = render_front_page(info, QueueStats((TopicQueue(EVIL_TOPIC, 1, 0, 0),), 0), now=10)
    assert "<script>" not in html and "<b>" not in html
    page = parse(html)
    assert page.scripts == 0
    assert page.cells[0] == EVIL_TOPIC  # shown exactly as the topic's text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;" in html


def test_front_page_escapes_topics_over_http(status: RunningStatus) -> None:
    status.source.queues = QueueStats((TopicQueue(EVIL_TOPIC, 5, 6, 7),), 0)
    reply = status.get("/")
    assert "<script>" not in reply.text
    assert parse(reply.text).cells == [EVIL_TOPIC, "5", "6", "7"]


def test_without_metrics_there_is_no_route_and_no_link(loop_thread: LoopThread, source: FakeSource) -> None:
    server = StatusServer(source, metrics=False)
    loop_thread.run(server.start("127.0.0.1", 0))
    try:
        running = RunningStatus(server, source)
        assert running.get("/metrics").status == 404
        reply = running.get("/")
        assert reply.status == 200
        links = parse(reply.text).links
        assert "/metrics" not in links and "/counters/plain" in links
    finally:
        loop_thread.run(server.stop())
