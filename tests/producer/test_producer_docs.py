"""docs/producer.md says what the code does: the error-action table for every code (all three paths), and every
setting's default."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from bruce.producer import ProducerConfig
from bruce.producer.acks import classify
from bruce.wire import errorcodes

DOC = Path(__file__).resolve().parents[2] / "docs" / "producer.md"


def test_error_action_table_matches_classify_for_every_code() -> None:
    rows = re.findall(r"^\| (-?\d+) \| (\w+) \| (\w+) \| (\w+) \| (\w+) \|", DOC.read_text(), re.M)
    table = {int(code): (name, legacy, modern, idempotent) for code, name, legacy, modern, idempotent in rows}
    assert set(table) == set(errorcodes.BY_CODE) - {0}
    for code, (name, legacy, modern, idempotent) in table.items():
        assert name == errorcodes.BY_CODE[code].name
        assert legacy == classify(code, legacy=True).action.value, code
        assert modern == classify(code, legacy=False).action.value, code
        assert idempotent == classify(code, legacy=False, idempotent=True).action.value, code


def _doc_value(text: str) -> object:
    text = text.strip().strip("`")
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("None"):
        return None
    if text.endswith(" MiB"):
        return int(text[:-4]) << 20
    if text.startswith(("(", '"')):
        return ast.literal_eval(text)
    return int(text) if text.lstrip("-").isdigit() else text


def test_configuration_table_lists_every_setting_with_its_default() -> None:
    section = DOC.read_text().split("## Configuration (`ProducerConfig`)", 1)[1].split("\n## ", 1)[0]
    documented: dict[str, object] = {}
    for names, defaults in re.findall(r"^\| (`\w+`(?:, `\w+`)*) \| ([^|]+) \|", section, re.M):
        fields = re.findall(r"`(\w+)`", names)
        values = [defaults] if len(fields) == 1 else defaults.split(", ")
        documented.update(zip(fields, map(_doc_value, values), strict=True))
    defaults = {f.name: f.default for f in dataclasses.fields(ProducerConfig)}
    defaults["security"] = defaults["security"].security_protocol  # a SecurityConfig, shown by its protocol
    assert documented == defaults
