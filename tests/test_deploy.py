"""deploy/: the systemd unit passes ``systemd-analyze verify`` without a single warning (and says what the daemon
needs: Type=notify, its directories, a dedicated user, hardening, a stop timeout above the shutdown delay); the
Prometheus rules pass ``promtool check rules`` and their unit tests (``promtool test rules``). The tools come from
Debian's systemd and prometheus packages (scripts/bootstrap.sh installs them for the tests)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_files import RULE_TESTS, RULES, UNIT, rule_metrics, unit_settings

from bruce.proxy.status.prometheus import counter_name, metric_name


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: scripts/bootstrap.sh test installs it (TEST_APT)"
    return found


def verify(unit: Path) -> str:
    """``systemd-analyze verify`` of ``unit``: everything it printed (any output is a warning or an error)."""
    done = subprocess.run([tool("systemd-analyze"), "verify", str(unit)], capture_output=True, text=True, timeout=60)
    return (done.stdout + done.stderr).strip() + ("" if done.returncode == 0 else f"\n(exit {done.returncode})")


def installed_copy(tmp_path: Path, extra: str = "") -> Path:
    """The unit with ExecStart pointing at this venv's ``bruce`` (verify checks that the program exists)."""
    bruce = Path(sys.executable).with_name("bruce")
    assert bruce.is_file()
    text = UNIT.read_text().replace("/usr/local/bin/bruce", str(bruce)) + extra
    copy = tmp_path / "bruce.service"
    copy.write_text(text)
    return copy


def test_unit_verifies_without_warnings(tmp_path: Path) -> None:
    assert verify(installed_copy(tmp_path)) == ""


def test_verify_would_report_a_mistake(tmp_path: Path) -> None:
    assert "Unknown key" in verify(installed_copy(tmp_path, "\n[Service]\nNoSuchSetting=1\n"))
    assert "is not executable" in verify(UNIT)  # the unit as shipped names the installed program


def test_unit_says_what_the_daemon_needs() -> None:
    s = unit_settings()
    assert s["Type"] == ["notify"] and s["NotifyAccess"] == ["main"]
    assert s["User"] == ["bruce"] and s["RuntimeDirectory"] == ["bruce"] and s["StateDirectory"] == ["bruce"]
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectHome", "ProtectKernelTunables", "RestrictSUIDSGID"):
        assert s[key] == ["yes"], key
    assert s["ProtectSystem"] == ["strict"] and s["CapabilityBoundingSet"] == [""]
    (exec_start,) = s["ExecStart"]
    delay_ms = int(re.search(r"--shutdown_max_delay (\d+)", exec_start)[1])  # type: ignore[index]
    assert int(s["TimeoutStopSec"][0]) > delay_ms / 1000
    assert "--receive_socket_name /run/bruce/" in exec_start and "--spool_dir /var/lib/bruce/" in exec_start
    assert "--daemon" not in exec_start  # systemd supervises the process it started
    help_text = subprocess.run(
        [str(Path(sys.executable).with_name("bruce")), "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    for option in re.findall(r"(--\w+)", exec_start):
        assert f"  {option} " in help_text or f"  {option}\n" in help_text, option


def test_rules_check_and_pass_their_unit_tests() -> None:
    promtool = tool("promtool")
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "SUCCESS: 11 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", RULE_TESTS.name], cwd=RULE_TESTS.parent, capture_output=True, text=True, timeout=120
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_rule_tests_cover_every_alert() -> None:
    alerts = set(re.findall(r"^\s+- alert: (\w+)$", RULES.read_text(), re.M))
    tested = set(re.findall(r"alertname: (\w+)$", RULE_TESTS.read_text(), re.M))
    assert alerts == tested and len(alerts) == 11


@pytest.mark.parametrize(
    ("metric", "name"),
    [
        ("bruce_discard_total", counter_name("Discard")),
        ("bruce_metadata_broker_fail_total", counter_name("MetadataBrokerFail")),
        ("bruce_msg_buffer_used_bytes", metric_name("MsgBufferUsedBytes")),
        ("bruce_spool_oldest_ms", metric_name("SpoolOldestMs")),
    ],
)
def test_rule_metric_names_are_the_pages_names(metric: str, name: str) -> None:
    assert metric == name and metric in rule_metrics()
