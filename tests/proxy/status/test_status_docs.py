"""docs/status.md names every route the server has and every metric /metrics always carries."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bruce.proxy.status import MetadataTimes, QueueStats, ServerInfo, StatusServer, TopicQueue
from bruce.proxy.status.prometheus import render_metrics

from .conftest import FakeSource

DOC = (Path(__file__).resolve().parents[3] / "docs" / "status.md").read_text()


def test_every_route_is_documented(source: FakeSource) -> None:
    app = StatusServer(source).build_app()
    routes = {(r.method, r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"}
    assert len(routes) == 14
    documented = set(re.findall(r"`(/[a-z_/{}<>]*)`", DOC))
    for method, path in routes:
        if path == "/msg_debug/{command}":
            continue
        assert path in documented, path
        assert re.search(rf"^\| {method} \|.*`{re.escape(path)}`", DOC, re.M), (method, path)
    for command in ["get_topics", "add_all_topics", "del_all_topics", "truncate_files", "add_topic/<topic>"]:
        assert f"`/msg_debug/{command}`" in DOC


def test_every_builtin_metric_is_documented() -> None:
    text = render_metrics(
        ServerInfo(1, "v", 0), [], [], QueueStats((TopicQueue("t", 1, 1, 1),), 1), MetadataTimes(1, 1)
    )
    names = {f.name for f in text_string_to_metric_families(text)}
    assert len(names) == 6
    for name in names:
        assert f"`{name}`" in DOC, name
