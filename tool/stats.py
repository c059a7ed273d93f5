"""``--stats``: per API and version, how many requests and answers, their bytes, request → answer latency percentiles,
and the error codes the answers carried.

Rules:
- Bounded: latencies are kept in a fixed-size uniform sample per (API, version) (reservoir sampling, seeded, so the
  same capture gives the same figures).
- Error codes are counted wherever an answer's tree has a non-zero ``error_code`` (top level, per topic, per
  partition), by API and code name.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bruce.wire import errorcodes

SAMPLE = 10_000
PERCENTILES = (50, 90, 99, 100)


@dataclass(slots=True)
class _Api:
    requests: int = 0
    request_bytes: int = 0
    answers: int = 0
    answer_bytes: int = 0
    latencies: list[float] = field(default_factory=list)
    seen: int = 0


class Stats:
    """Counts of one capture."""

    def __init__(self, *, sample: int = SAMPLE) -> None:
        self.sample = sample
        self.apis: dict[tuple[str, int | None], _Api] = {}
        self.errors: dict[tuple[str, int], int] = {}  # (api, error code) -> answers carrying it
        self.random = random.Random(0)

    def add(self, name: str, version: int | None, from_client: bool, size: int, latency: float | None) -> None:
        api = self.apis.setdefault((name, version), _Api())
        if from_client:
            api.requests += 1
            api.request_bytes += size
            return
        api.answers += 1
        api.answer_bytes += size
        if latency is not None:
            api.seen += 1
            if len(api.latencies) < self.sample:
                api.latencies.append(latency)
            else:
                slot = self.random.randrange(api.seen)
                if slot < self.sample:
                    api.latencies[slot] = latency

    def add_errors(self, name: str, tree: Any) -> None:
        for code in error_codes(tree):
            key = (name, code)
            self.errors[key] = self.errors.get(key, 0) + 1

    def summary(self) -> dict[str, Any]:
        apis = []
        for (name, version), a in sorted(self.apis.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1)):
            entry: dict[str, Any] = {
                "api": name,
                "version": version,
                "requests": a.requests,
                "request_bytes": a.request_bytes,
                "answers": a.answers,
                "answer_bytes": a.answer_bytes,
            }
            if a.latencies:
                ordered = sorted(a.latencies)
                entry["latency_ms"] = {
                    f"p{p}": round(ordered[max(0, -(-len(ordered) * p // 100) - 1)] * 1000, 3)  # nearest rank
                    for p in PERCENTILES
                }
            apis.append(entry)
        errors = [
            {"api": api, "error": errorcodes.lookup(code).name, "code": code, "count": n}
            for (api, code), n in sorted(self.errors.items())
        ]
        return {"apis": apis, "errors": errors}

    def text(self) -> str:
        s = self.summary()
        w = max([len("api"), *(len(a["api"]) for a in s["apis"])])
        head = f"{'api':<{w}} {'v':>3} {'requests':>9} {'bytes':>12} {'answers':>9} {'bytes':>12}"
        lines = [head + "  latency ms p50/p90/p99/max"]
        for a in s["apis"]:
            lat = a.get("latency_ms")
            latency = "/".join(f"{lat[f'p{p}']:g}" for p in PERCENTILES) if lat else "-"
            version = "?" if a["version"] is None else a["version"]
            lines.append(
                f"{a['api']:<{w}} {version:>3} {a['requests']:>9} {a['request_bytes']:>12} {a['answers']:>9} "
                f"{a['answer_bytes']:>12}  {latency}"
            )
        if s["errors"]:
            w = max(len(e["api"]) for e in s["errors"])
            lines.append("errors:")
            for e in s["errors"]:
                named = f"{e['error']} ({e['code']})"
                lines.append(f"  {e['api']:<{w}} {named:<45} {e['count']}")
        return "\n".join(lines) + "\n"


def error_codes(tree: Any) -> list[int]:
    """Every non-zero ``error_code`` in a tree, in order."""
    found: list[int] = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "error_code" and isinstance(value, int) and value:
                found.append(value)
            elif isinstance(value, dict | list):
                found += error_codes(value)
    elif isinstance(tree, list):
        for value in tree:
            found += error_codes(value)
    return found
