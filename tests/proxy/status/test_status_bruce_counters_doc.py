"""docs/bruce-counters.md lists exactly the catalogue: every served name (in the pages' order, with its meaning) and
every name marked not served (with the reason), none twice."""

from __future__ import annotations

import re
from pathlib import Path

from bruce.proxy.status.bruce_counters import ABSENT, SERVED

DOC = Path(__file__).resolve().parents[3] / "docs" / "bruce-counters.md"


def rows(section: str) -> list[tuple[str, str]]:
    text = DOC.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"^\| `(\w+)` \| (.*) \|$", text[start : end if end > 0 else None], re.M)


def test_served_names_and_meanings() -> None:
    assert rows("Served") == [(name, entry.meaning) for name, entry in SERVED.items()]


def test_names_not_served_and_why() -> None:
    assert rows("Not served") == list(ABSENT.items())
    assert not set(SERVED) & set(ABSENT)


def test_every_name_bruces_scripts_read_is_served() -> None:
    from bruce.proxy.nagios import READ_COUNTERS

    assert set(READ_COUNTERS) <= set(SERVED)
