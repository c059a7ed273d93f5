"""deploy/: the systemd unit passes ``systemd-analyze verify`` without a single warning, run as an operator would
(``systemd-analyze verify deploy/systemd/*``) on a host where ``bruce`` is installed where the unit runs it; the unit
says what the daemon needs (Type=notify, its directories, a dedicated user, hardening, a stop timeout above the
shutdown delay) and puts the input socket at Bruce's path, the one docs/operations.md and docs/migrating-from-bruce.md
name; the sysusers file creates that user (``systemd-sysusers --dry-run``); the Prometheus rules pass ``promtool check
rules`` and their unit tests (``promtool test rules``). The tools come from Debian's systemd, util-linux and
prometheus packages (scripts/bootstrap.sh installs them for the tests)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_files import DEPLOY, RULE_TESTS, RULES, SYSUSERS, UNIT, rule_metrics, unit_settings

from bruce.proxy.status.prometheus import counter_name, metric_name

ROOT = DEPLOY.parent
BRUCES_SOCKET = "/var/run/bruce/bruce.socket"  # Bruce's packaging's path: where its clients send


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: scripts/bootstrap.sh test installs it (TEST_APT)"
    return found


def verify(arguments: str, *, installed: bool = True) -> str:
    """``systemd-analyze verify ARGUMENTS`` (a shell word list: globs expand) from the repository's root, in a mount
    namespace of its own (``unshare``) where /usr/local/bin is an empty tmpfs, holding (``installed``) ``bruce``, a
    link to this environment's: as on a host where bruce is installed where the unit runs it (verify checks that the
    program exists and is executable). All it printed: any output is a warning or an error."""
    bruce = Path(sys.executable).with_name("bruce")
    assert bruce.is_file()
    command = "mount -t tmpfs bruce /usr/local/bin"
    if installed:
        command += f" && ln -s {bruce} /usr/local/bin/bruce"
    command += f" && exec {tool('systemd-analyze')} verify {arguments}"
    done = subprocess.run(
        [tool("unshare"), "--user", "--map-root-user", "--mount", "sh", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return (done.stdout + done.stderr).strip() + ("" if done.returncode == 0 else f"\n(exit {done.returncode})")


def test_the_deploy_directory_verifies_without_warnings() -> None:
    assert sorted(p.name for p in (DEPLOY / "systemd").iterdir()) == ["bruce.service"]  # what the glob verifies
    assert verify("deploy/systemd/*") == ""


def test_verify_would_report_a_mistake(tmp_path: Path) -> None:
    wrong = tmp_path / "bruce.service"
    wrong.write_text(UNIT.read_text() + "\n[Service]\nNoSuchSetting=1\n")
    assert "Unknown key 'NoSuchSetting'" in verify(str(wrong))
    # the unit runs the installed program, and verify checks it is there
    assert "Command /usr/local/bin/bruce is not executable" in verify("deploy/systemd/*", installed=False)


def test_sysusers_file_creates_the_user_and_group(tmp_path: Path) -> None:
    done = subprocess.run(
        [tool("systemd-sysusers"), "--dry-run", f"--root={tmp_path}", str(SYSUSERS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("Would write ")]
    assert done.returncode == 0, said
    assert len(said) == 2, said  # nothing else: a warning would be a third line
    assert re.fullmatch(r"Creating group 'bruce' with GID \d+\.", said[0]), said
    assert re.fullmatch(r"Creating user 'bruce' \(bruce-kafka daemon\) with UID \d+ and GID \d+\.", said[1]), said
    s = unit_settings()
    assert s["User"] == ["bruce"] and s["Group"] == ["bruce"]


def test_the_socket_is_at_bruces_path_and_the_docs_say_so() -> None:
    """Clients written for Bruce send to its packaging's path; the unit, its comments, the sysusers file and the two
    pages that tell an operator how to run the unit all name that one path (and no other socket under /run)."""
    s = unit_settings()
    (exec_start,) = s["ExecStart"]
    assert f"--receive_socket_name {BRUCES_SOCKET} " in exec_start
    # /var/run is /run on every systemd host: the socket's directory is the unit's RuntimeDirectory
    assert f"/var/run/{s['RuntimeDirectory'][0]}" == str(Path(BRUCES_SOCKET).parent)
    assert "--receive_socket_mode 0660" in exec_start and s["RuntimeDirectoryMode"] == ["0750"]
    for path in (UNIT, SYSUSERS, ROOT / "docs" / "operations.md", ROOT / "docs" / "migrating-from-bruce.md"):
        text = path.read_text()
        assert BRUCES_SOCKET in text, path
        others = set(re.findall(r"(?:/var)?/run/[\w/.-]*\.sock\w*", text)) - {BRUCES_SOCKET}
        assert not others, f"{path.name} names another socket: {others}"


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
    assert "--spool_dir /var/lib/bruce/" in exec_start
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
