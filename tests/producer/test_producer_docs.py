"""docs/producer.md's error-action table says what the code does, for every code."""

from __future__ import annotations

import re
from pathlib import Path

from bruce.producer.acks import classify
from bruce.wire import errorcodes

DOC = Path(__file__).resolve().parents[2] / "docs" / "producer.md"


def test_error_action_table_matches_classify_for_every_code() -> None:
    rows = re.findall(r"^\| (-?\d+) \| (\w+) \| (\w+) \| (\w+) \|", DOC.read_text(), re.M)
    table = {int(code): (name, legacy, modern) for code, name, legacy, modern in rows}
    assert set(table) == set(errorcodes.BY_CODE) - {0}
    for code, (name, legacy, modern) in table.items():
        assert name == errorcodes.BY_CODE[code].name
        assert legacy == classify(code, legacy=True).action.value, code
        assert modern == classify(code, legacy=False).action.value, code
