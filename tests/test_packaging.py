"""Packaging: every source folder installs under `bruce.`, nothing installs as a generic top-level name; the sdist and
the wheel build (``python -m build``, the wheel from the sdist), and the wheel installed into a clean venv runs
``bruce --version``, ``to_bruce --help`` and delivers one message through its own embedded broker (read back by
confluent-kafka), as docs/operations.md#installing tells users to do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.daemon.harness import BruceProcess, consume_topic, wait_for

from bruce.proxy.config.version import package_version

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["wire", "producer", "client", "proxy", "spark", "tool"]
BUILD_TIMEOUT_S = 120
INSTALL_TIMEOUT_S = 300


def _declared() -> tuple[list[str], dict[str, str]]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return setuptools["packages"], setuptools["package-dir"]


def test_every_package_folder_is_declared() -> None:
    packages, package_dir = _declared()
    folders = {
        str(init.parent.relative_to(ROOT))
        for layer in LAYERS
        for init in (ROOT / layer).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    expected = {f"bruce.{folder.replace('/', '.')}": folder for folder in folders}
    assert sorted(packages) == sorted(expected)
    assert package_dir == expected


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of this checkout (sdist, then the wheel from the sdist), without network isolation: the
    build backend is the dev extra's setuptools."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (out / "build.log").write_text(done.stdout + done.stderr)
    return out


def test_the_build_configuration_draws_no_warning(dist: Path) -> None:
    """setuptools warns of configuration it finds questionable (experimental or deprecated keys) in capitals; the
    C extensions are declared in setup.py, which setuptools supports without one."""
    warnings = [line for line in (dist / "build.log").read_text().splitlines() if "WARNING" in line or "!!" in line]
    assert warnings == []


def test_wheel_and_sdist_build_and_install_only_under_bruce(dist: Path) -> None:
    version = package_version()
    (wheel,) = dist.glob("bruce_kafka-*.whl")
    # the name docs/operations.md gives: a wheel for this Python and platform, as it carries the C encoders
    assert wheel.name.startswith(f"bruce_kafka-{version}-cp3") and wheel.name.endswith(".whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("proxy/spool", "wire"):
        assert any(n.startswith(f"bruce/{package}/_speedups.") and n.endswith(".so") for n in names), package
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"bruce"}
    for layer in LAYERS:
        assert f"bruce/{layer}/__init__.py" in names
    (sdist,) = dist.glob("bruce_kafka-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert f"bruce_kafka-{version}/pyproject.toml" in members and f"bruce_kafka-{version}/README.md" in members
    for package in ("proxy/spool", "wire"):  # the sdist builds the C encoders too
        assert f"bruce_kafka-{version}/{package}/_speedups.c" in members


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A clean venv (no access to this environment's packages) with the wheel and its ``embedded`` and ``tools`` extras;
    its bin."""
    where = tmp_path_factory.mktemp("clean-venv")
    venv.create(where, with_pip=True, symlinks=True)
    (wheel,) = dist.glob("bruce_kafka-*.whl")
    done = subprocess.run(
        [
            str(where / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            f"{wheel}[embedded,tools]",
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
        cwd=where,
    )
    assert done.returncode == 0, f"installing the wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    yield where / "bin"


def _clean_env(tmp: Path) -> dict[str, str]:
    """This environment less anything that would let the venv see this checkout or this environment's packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    for name in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        (tmp / name).mkdir(mode=0o700)
        env[name] = str(tmp / name)
    return env


@pytest.mark.e2e
def test_the_installed_wheel_runs_and_delivers(installed: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)

    def run(*words: str) -> str:
        done = subprocess.run(
            [str(installed / words[0]), *words[1:]], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
        )
        assert done.returncode == 0, f"{' '.join(words)} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    where = run("python", "-c", "import bruce.proxy; print(bruce.proxy.__file__)")
    assert where.startswith(str(installed.parent)), f"bruce imported from outside the clean venv: {where}"
    encoder = run("python", "-c", "from bruce.proxy.spool import format; print(format._encode_burst_c)")
    assert "built-in function encode_burst" in encoder, f"the wheel's spool runs without its C encoder: {encoder}"
    encoders = run("python", "-c", "from bruce.wire import speedups as s; print(s.record_batch_records, s.message_set)")
    assert encoders.count("built-in function") == 2, f"the wheel's wire runs without its C encoders: {encoders}"
    assert package_version() in run("bruce", "--version")
    assert "--socket_path" in run("to_bruce", "--help")
    capture = ROOT / "fuzz" / "corpus" / "capture" / "metadata.pcap"
    decoded = subprocess.run(  # its answer is malformed on purpose: exit status 1, the request decoded
        [str(installed / "bruce-wire"), "pcap", str(capture)], capture_output=True, text=True, timeout=60, env=env
    )
    assert decoded.returncode == 1 and "request Metadata v1 correlation 7" in decoded.stdout, decoded.stderr

    log_path = tmp_path / "bruce.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(installed / "bruce"), "--status_port", "0"],  # no broker: its embedded one, as ./run.sh
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp_path,
        )
    bruce = BruceProcess(process, log_path)
    try:
        bruce.wait_serving()
        wait_for(lambda: "stop with Ctrl-C" in bruce.log, what="the announcement")
        broker = re.search(r"an embedded broker \(tansu\) runs on (\S+)", bruce.log).group(1)  # type: ignore[union-attr]
        sent = run("to_bruce", "--topic", "installed", "--value", "from-the-wheel")
        assert "1 message sent" in sent, sent
        reads = consume_topic(broker, "installed", 4, 1, timeout=60)  # created on first use, with 4 partitions
        assert [r.value for r in reads] == [b"from-the-wheel"]
        bruce.signal(signal.SIGTERM)
        assert bruce.wait(60) == 0
        assert "stopped: 1 received, 1 delivered, 0 discarded, 0 in flight" in bruce.log, bruce.log[-3000:]
    finally:
        bruce.kill()
