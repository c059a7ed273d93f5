"""The packages import one way only, read from the source (AST): wire <- producer <- proxy <- spark; client <- wire
(the client library and ``to_bruce`` need nothing of the producer or the daemon).

- A package imports only the packages below it (``ALLOWED``); wire imports nothing of ours.
- Inside proxy, the subsystems (every subpackage but ``daemon``) never import ``bruce.proxy.daemon``: the daemon is the
  composition root that wires them together, never a dependency of one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["wire", "producer", "client", "proxy", "spark"]
ALLOWED = {
    "wire": {"wire"},
    "producer": {"wire", "producer"},
    "client": {"wire", "client"},
    "proxy": {"wire", "producer", "client", "proxy"},
    "spark": {"wire", "producer", "client", "proxy", "spark"},
}


def module_name(path: Path) -> str:
    """``proxy/intake/budget.py`` -> ``bruce.proxy.intake.budget``; a package's ``__init__.py`` is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("bruce", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def imported(path: Path) -> set[str]:
    """The dotted names a module imports, anywhere in it (function-local imports too): for ``from X import a`` both
    ``X`` and ``X.a`` (``a`` may be a submodule), relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            found.add(source)
            found.update(f"{source}.{a.name}" for a in node.names)
    return found


def _package_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "bruce" and len(parts) > 1 else None


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_lower_packages(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"package {package} has no modules"
    bad = {}
    for f in files:
        names = imported(f)
        wrong = {n for n in names if _package_of(n) and _package_of(n) not in ALLOWED[package]}
        wrong |= {f"top-level {n}" for n in names if n.split(".")[0] in PACKAGES}  # not installed under that name
        if wrong:
            bad[str(f.relative_to(ROOT))] = sorted(wrong)
    assert bad == {}


def test_proxy_subsystems_never_import_the_daemon() -> None:
    subsystems = [d for d in sorted((ROOT / "proxy").iterdir()) if (d / "__init__.py").exists() and d.name != "daemon"]
    assert {d.name for d in subsystems} >= {"intake", "routing", "accounting", "config", "spool", "status", "plog"}
    bad = {}
    for folder in subsystems:
        for f in sorted(folder.rglob("*.py")):
            wrong = {n for n in imported(f) if n == "bruce.proxy.daemon" or n.startswith("bruce.proxy.daemon.")}
            if wrong:
                bad[str(f.relative_to(ROOT))] = sorted(wrong)
    assert bad == {}


def test_proxy_top_level_holds_only_subpackages() -> None:
    modules = sorted(p.name for p in (ROOT / "proxy").glob("*.py"))
    assert modules == ["__init__.py"]
