"""The HTML front page's links to every page, the message debug commands and the "Update Metadata" form (its
dashboard values: test_status_dashboard.py)."""

from __future__ import annotations

import re
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


def _sections(html: str) -> dict[str, str]:
    """Each section's HTML by its heading."""
    return {m[1]: m[2] for m in re.finditer(r"<section[^>]*>\s*<h2>(.*?)</h2>(.*?)</section>", html, re.S)}


def test_the_message_debug_commands_have_a_section_of_their_own_and_say_what_they_do(status: RunningStatus) -> None:
    """Bruce's names kept, each beside what it does, under a heading of their own (not among the server's
    management), which says what the files are and that they hold message contents."""
    sections = _sections(status.get("/").text)
    debug, management = sections["Message debug files"], sections["Server management"]
    assert "/msg_debug/" not in management and "/metadata_update" in management
    assert "Ask Kafka for its metadata now" in management
    assert "contents included" in debug and "<code>--msg_debug_time_limit</code>" in debug
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", debug, re.S):
        words = re.sub(r"<[^>]+>", " ", row).split()
        button = re.search(r'<input type="submit" value="(\w+)"', row)  # a button's name is its value
        rows[button[1] if button else words[0]] = " ".join(words)
    assert rows["get_topics"].endswith("which topics are being written")
    assert rows["add_all_topics"].endswith("start writing the messages of every topic")
    assert rows["del_all_topics"].endswith("stop writing them")
    assert rows["truncate_files"].endswith("empty the three files")
    assert "start or stop one topic" in rows["/msg_debug/add_topic/&lt;topic&gt;"]


def test_the_layout_fills_a_wide_window_and_stacks_in_a_narrow_one(status: RunningStatus) -> None:
    """Nothing caps the content short of a 1400-px window (it stopped ~150 px short); below 1000 px the two-column
    rows become one column, so no section is squeezed beside another."""
    html = status.get("/").text
    (main,) = re.findall(r"\bmain \{([^}]*)\}", html)
    cap = re.search(r"max-width:\s*(\d+)px", main)
    assert cap is None or int(cap[1]) >= 1400 - 2 * 28, main  # the window less main's padding
    assert re.search(r"@media \(max-width: 1000px\) \{ \.cols \{ grid-template-columns: 1fr; \}", html)
