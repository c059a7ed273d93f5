"""The deployment files under deploy/ (the systemd unit and its sysusers file, the Prometheus rules) and what the
tests read from them."""

from __future__ import annotations

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
UNIT = DEPLOY / "systemd" / "bruce.service"
SYSUSERS = DEPLOY / "sysusers.d" / "bruce.conf"
RULES = DEPLOY / "prometheus" / "bruce-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "bruce-rules.test.yml"


def rule_metrics() -> set[str]:
    """Every ``bruce_*`` metric name the alert rules' expressions use."""
    exprs = re.findall(r"^\s+expr: (.*)$", RULES.read_text(), re.M)
    return {name for expr in exprs for name in re.findall(r"\bbruce_\w+", expr)}


def unit_settings() -> dict[str, list[str]]:
    """``Key: [values]`` of the unit file (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n\s*", " ", UNIT.read_text())
    settings: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings
