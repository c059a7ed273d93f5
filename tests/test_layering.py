"""The layers import one way only: wire <- producer <- proxy <- spark. wire imports nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["wire", "producer", "proxy", "spark"]


def _imports(path: Path) -> set[str]:
    """The bruce layers a module imports (absolute `bruce.x` or relative imports that climb out of its folder)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(("bruce", *path.relative_to(ROOT).parent.parts)).split(".")
    found = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names = [".".join([*base, node.module] if node.module else base)]
            elif node.module:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "bruce" and len(parts) > 1:
                found.add(parts[1])
            elif parts[0] in LAYERS:
                found.add(f"top-level {parts[0]}")
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_lower_layers(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"layer {layer} has no modules"
    bad = {str(f.relative_to(ROOT)): sorted(_imports(f) - allowed) for f in files}
    assert {f: b for f, b in bad.items() if b} == {}
