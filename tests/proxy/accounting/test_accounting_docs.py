"""docs/discards.md names every discard reason and every counter the accounting modules keep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bruce.producer.reasons import DiscardReason
from bruce.proxy.accounting import discard_log, discards, msg_debug

DOC = (Path(__file__).resolve().parents[3] / "docs" / "discards.md").read_text()


@pytest.mark.parametrize("reason", list(DiscardReason), ids=lambda r: r.value)
def test_every_reason_has_a_row(reason: DiscardReason) -> None:
    assert f"\n| `{reason.value}` | " in DOC


def test_every_counter_is_documented() -> None:
    names = set()
    for module in (discards, discard_log, msg_debug):
        source = Path(module.__file__ or "").read_text()
        names |= set(re.findall(r'inc\(\s*"(\w+)"', source)) | set(re.findall(r'"(DiscardLog\w+)"', source))
    assert len(names) >= 10
    missing = sorted(name for name in names if f"`{name}" not in DOC)
    assert missing == []
