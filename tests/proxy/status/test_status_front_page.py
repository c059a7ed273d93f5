"""The HTML front page's links to every page, the message debug commands and the "Update Metadata" form (its
dashboard values: test_status_dashboard.py)."""

from __future__ import annotations

from html.parser import HTMLParser

from bruce.proxy.status import StatusServer
from bruce.proxy.status.pages import PAGES

from .conftest import FakeSource, LoopThread, RunningStatus


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
    assert page.scripts == 0


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
