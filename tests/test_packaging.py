"""Packaging: every source folder installs under `bruce.`, nothing installs as a generic top-level name."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["wire", "producer", "proxy", "spark"]


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


def test_wheel_installs_only_under_bruce(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("bruce_kafka-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"bruce"}
    for layer in ("wire", "producer", "proxy"):
        assert f"bruce/{layer}/__init__.py" in names
