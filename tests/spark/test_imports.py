"""bruce.spark's modules import each other one way only: no cycle among the imports made when a module loads, and no
sibling module imported inside a function (the way a cycle hides). Imports under ``if TYPE_CHECKING:`` are for type
hints only and do not count. And loading bruce.spark does not end a process that pyspark takes for a doctest run."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SPARK = Path(__file__).resolve().parents[2] / "spark"


def _siblings(node: ast.ImportFrom) -> list[str]:
    if node.level != 1:
        return []
    return [node.module.split(".")[0]] if node.module else [a.name for a in node.names]


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module → the sibling modules it imports when loaded; and every sibling import made inside a function."""
    graph: dict[str, set[str]] = {}
    local: list[str] = []
    for path in sorted(SPARK.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        edges = graph.setdefault(path.stem, set())
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and _siblings(inner):
                    if isinstance(node, ast.ImportFrom):
                        edges.update(_siblings(inner))
                    else:
                        local.append(f"{path.name}:{inner.lineno} {ast.unparse(inner)}")
    return graph, local


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle (its modules, the first repeated at the end), or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return []


def test_no_import_cycle_and_no_hidden_sibling_import() -> None:
    graph, local = _graph()
    assert {"task", "delivery", "direct", "daemon"} <= set(graph)
    assert local == []
    assert _cycle(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_the_save_mode_wrapper_installs_in_a_process_without_a_main_file() -> None:
    """``python -c`` (and pytest-xdist's workers): importing Spark Connect's writer exits such a process (status 0)
    when Connect's client dependencies are missing; installing the Append default must not end it."""
    code = "from bruce.spark.save_mode import default_to_append; default_to_append(); print('installed')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "installed", done.stderr[-2000:]
