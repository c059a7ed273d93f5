"""The packages import one way only, read from the source (AST): wire <- producer <- proxy <- spark; client <- wire
(the client library and ``to_bruce`` need nothing of the producer or the daemon); tool (``bruce-wire``) sits on top
of wire, producer and proxy, and no package imports it.

- A package imports only the packages below it (``ALLOWED``); wire imports nothing of ours.
- A package uses another through its public face only: ``from bruce.producer import Counters``, names its
  ``__init__`` exports (``__all__``), never ``bruce.producer.counters`` (checked in proxy, client and spark; tests and
  benchmarks may reach inside).
- No import circle among the modules of ``CYCLE_CHECKED``: every import counts, inside a function or under
  ``TYPE_CHECKING`` too, so a circle cannot be hidden by moving one of its imports.
- Inside proxy, the subsystems (every subpackage but ``daemon``) never import ``bruce.proxy.daemon``: the daemon is the
  composition root that wires them together, never a dependency of one.
- Inside proxy and producer, floors (``PROXY_FLOORS``; ``PRODUCER_GROUND``, ``PRODUCER_FLOORS``, ``PRODUCER_ROOF``):
  a floor imports only lower ones, through their faces.
- No hook is set on an object after its construction (``late_patches``), and no public class name is defined twice.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bruce.wire.face import face_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["wire", "producer", "client", "proxy", "spark", "tool"]
ALLOWED = {
    "wire": {"wire"},
    "producer": {"wire", "producer"},
    "client": {"wire", "client"},
    "proxy": {"wire", "producer", "client", "proxy"},
    "spark": {"wire", "producer", "client", "proxy", "spark"},
    "tool": {"wire", "producer", "proxy", "tool"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    """``proxy/messages/budget.py`` -> ``bruce.proxy.messages.budget``; a package's ``__init__.py`` is the package."""
    parts = path.relative_to(root).with_suffix("").parts
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


def test_no_package_imports_the_tool() -> None:
    assert all("tool" not in allowed for package, allowed in ALLOWED.items() if package != "tool")


def test_proxy_top_level_holds_only_subpackages() -> None:
    modules = sorted(p.name for p in (ROOT / "proxy").glob("*.py"))
    assert modules == ["__init__.py"]


FACE_CHECKED = ["client", "producer", "proxy", "spark", "tool"]


def _exports(package: str, root: Path = ROOT) -> set[str]:
    """The names of ``package/__init__.py``'s face (read from the source): its ``__all__``, or for a face that loads
    on first use, its ``TYPE_CHECKING`` re-exports (:func:`bruce.wire.face.face_names`)."""
    init = root / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(init.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return set(ast.literal_eval(node.value))
    eager = {a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names if a.asname == a.name}
    return set(face_names(init)) | eager  # names re-exported at import (X as X) and those loaded on first use


def _face_problems(path: Path, own: str) -> list[str]:
    problems = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
            problems += [f"import {m}" for m in modules if _package_of(m) not in (None, own) and m.count(".") > 1]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            other = _package_of(node.module)
            if other in (None, own):
                continue
            if node.module != f"bruce.{other}":
                problems.append(f"from {node.module} import ...")
            else:
                exported = _exports(other)
                problems += [f"{node.module}.{a.name} (not exported)" for a in node.names if a.name not in exported]
    return problems


@pytest.mark.parametrize("package", FACE_CHECKED)
def test_other_packages_are_used_through_their_public_face(package: str) -> None:
    bad = {}
    for f in sorted((ROOT / package).rglob("*.py")):
        problems = _face_problems(f, package)
        if problems:
            bad[str(f.relative_to(ROOT))] = problems
    assert bad == {}


@pytest.mark.parametrize("package", ["wire", "proxy", "proxy.intake"])
def test_lazy_faces_serve_their_one_list(package: str) -> None:
    """A lazy face (wire's: so that the client does not build every schema) is listed once, as ``TYPE_CHECKING``
    re-exports: each name resolves to the object its module defines, and ``__all__`` is that list."""
    import importlib

    face = importlib.import_module(f"bruce.{package}")
    names = face_names(ROOT / package.replace(".", "/") / "__init__.py")
    assert names and face.__all__ == list(names)
    for name, (module, attribute) in names.items():
        loaded = importlib.import_module(f"bruce.{package}.{module}")
        if attribute is not None and hasattr(loaded, attribute):
            loaded = getattr(loaded, attribute)
        elif attribute is not None:  # a submodule
            loaded = importlib.import_module(f"{loaded.__name__}.{attribute}")
        assert getattr(face, name) is loaded, name


def test_a_lazy_face_refuses_anything_but_re_exports(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import b as b\n")
    assert face_names(init) == {"b": ("a", "b")}
    init.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import b as c\n")
    with pytest.raises(TypeError, match="re-exported"):
        face_names(init)


CYCLE_CHECKED = ["client", "producer", "proxy", "spark", "tool", "wire"]


def import_graph(packages: list[str], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports, anywhere in it. ``from X import a`` is an edge to ``X.a`` when
    that is a module, else to ``X``; a package is its ``__init__``."""
    files = {module_name(f, root): f for p in packages for f in sorted((root / p).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                for a in node.names:
                    edges.add(f"{source}.{a.name}" if f"{source}.{a.name}" in files else source)
        graph[name] = {e for e in edges if e in files and e != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycles() -> None:
    assert import_cycles(import_graph(CYCLE_CHECKED)) == []


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import B\n")
    (package / "b.py").write_text("class B:\n    def f(self):\n        from . import a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import B\n")
    graph = import_graph(["pkg"], tmp_path)
    assert graph["bruce.pkg.c"] == {"bruce.pkg.a"}
    assert import_cycles(graph) == [["bruce.pkg.a", "bruce.pkg.b"]]


def plant(root: Path, files: dict[str, str]) -> None:
    """Write a planted tree under ``root``: each relative path with its text."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


# -- the floors of bruce.proxy (docs/architecture.md#the-floors-of-bruceproxy) -----------------------------------------

PROXY_FLOORS = ["config", "spool", "messages", "accounting", "routing", "intake", "plog", "status", "daemon"]
"""proxy's subpackages, lowest first: a subpackage imports only lower floors, and only through their faces."""


def _proxy_floor_problems(root: Path = ROOT) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    for f in sorted((root / "proxy").rglob("*.py")):
        parts = f.relative_to(root).parts
        if len(parts) < 3:
            continue
        own = parts[1]
        name = module_name(f, root)
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        problems = []
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                problems += [f"import {a.name}" for a in node.names if a.name.startswith("bruce.proxy.")]
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(node, package)
            sub = source.split(".")
            if sub[:2] != ["bruce", "proxy"] or len(sub) < 3 or sub[2] == own:
                continue
            other = sub[2]
            if PROXY_FLOORS.index(other) > PROXY_FLOORS.index(own):
                problems.append(f"{source}: {other} is a higher floor than {own}")
            elif len(sub) > 3:
                problems.append(f"from {source} import ...: through the face of {other}")
            else:
                exported = _exports(f"proxy/{other}", root)
                problems += [f"{source}.{a.name} (not exported)" for a in node.names if a.name not in exported]
        if problems:
            bad[str(f.relative_to(root))] = problems
    return bad


def test_proxy_floors_are_every_subpackage() -> None:
    assert sorted(PROXY_FLOORS) == sorted(d.name for d in (ROOT / "proxy").iterdir() if (d / "__init__.py").exists())


def test_a_proxy_floor_imports_only_lower_floors_through_their_faces() -> None:
    assert _proxy_floor_problems() == {}


def test_the_proxy_floor_check_sees_each_violation(tmp_path: Path) -> None:
    """A floor importing a higher one, reaching past a lower floor's face, or taking a name that face does not export;
    a plain ``import`` of a proxy module."""
    files = {
        "proxy/config/__init__.py": "from .load import Config\n__all__ = ['Config']\n",
        "proxy/config/load.py": "from ..routing import Router\n",  # a higher floor
        "proxy/routing/__init__.py": "from .router import Router\n__all__ = ['Router']\n",
        "proxy/routing/router.py": (
            "from ..config.load import Config\n"  # past the face
            "from ..config import Hidden\n"  # not exported
            "import bruce.proxy.config\n"
            "from . import helpers\nfrom ..config import Config\n"  # fine: its own floor, a lower face
        ),
    }
    plant(tmp_path, files)
    assert _proxy_floor_problems(tmp_path) == {
        "proxy/config/load.py": ["bruce.proxy.routing: routing is a higher floor than config"],
        "proxy/routing/router.py": [
            "from bruce.proxy.config.load import ...: through the face of config",
            "bruce.proxy.config.Hidden (not exported)",
            "import bruce.proxy.config",
        ],
    }


# -- the floors of bruce.producer (docs/architecture.md#the-floors-of-bruceproducer) -----------------------------------

PRODUCER_GROUND = ["acks", "aio", "counters", "errors", "message", "reasons"]
"""producer's top-level modules under every wing (the vocabulary): they import only each other."""
PRODUCER_FLOORS = ["config", "transport", "metadata", "queues", "idempotence", "dispatch", "transactions"]
"""producer's wings (subpackages), lowest first: a wing imports the ground, its own modules, and lower wings through
their faces only."""
PRODUCER_ROOF = ["bulk", "columns", "handle", "queueing", "views", "producer"]
"""producer's top-level modules above every wing (``producer`` is the composition root): they use the wings through
their faces; no wing or ground module imports them."""


def _source(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _producer_floor_problems(root: Path = ROOT) -> dict[str, list[str]]:
    """Every import inside bruce.producer against its floors: the ground imports only the ground; a wing the ground,
    itself and lower wings through their faces; the roof (and the package's face) anything but a wing's inside."""
    bad: dict[str, list[str]] = {}
    for f in sorted((root / "producer").rglob("*.py")):
        parts = f.relative_to(root / "producer").parts
        name = module_name(f, root)
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        own = parts[0] if len(parts) > 1 else None  # the wing, or None for a top-level module
        top = None if own else f.stem
        problems = []
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                problems += [f"import {a.name}" for a in node.names if a.name.startswith("bruce.producer.")]
                continue
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(node, package)
            sub = source.split(".")
            if sub[:2] != ["bruce", "producer"]:
                continue
            if len(sub) == 2:  # the package's face imports every wing
                if top != "__init__":
                    problems.append(f"from {source} import ...: the package's face, above every wing")
                continue
            target = sub[2]
            if own is not None and target == own:
                continue  # inside its own wing
            if target in PRODUCER_GROUND:
                continue  # the vocabulary: every floor may use it
            if top in PRODUCER_GROUND:
                problems.append(f"{source}: the ground imports only the ground")
            elif target in PRODUCER_ROOF:
                if own is not None:
                    problems.append(f"{source}: {target} is above every wing")
            elif own is not None and PRODUCER_FLOORS.index(target) > PRODUCER_FLOORS.index(own):
                problems.append(f"{source}: {target} is a higher floor than {own}")
            elif len(sub) > 3:
                problems.append(f"from {source} import ...: through the face of {target}")
            else:
                exported = _exports(f"producer/{target}", root)
                problems += [f"{source}.{a.name} (not exported)" for a in node.names if a.name not in exported]
        if problems:
            bad[str(f.relative_to(root))] = problems
    return bad


def test_producer_floors_name_every_wing_and_module() -> None:
    producer = ROOT / "producer"
    assert sorted(PRODUCER_FLOORS) == sorted(d.name for d in producer.iterdir() if (d / "__init__.py").exists())
    modules = sorted(p.stem for p in producer.glob("*.py") if p.name != "__init__.py")
    assert sorted(PRODUCER_GROUND + PRODUCER_ROOF) == modules


def test_a_producer_floor_imports_only_lower_floors_through_their_faces() -> None:
    assert _producer_floor_problems() == {}


def test_the_producer_floor_check_sees_each_violation(tmp_path: Path) -> None:
    """A ground module importing a wing, a wing importing a higher wing or the roof, reaching into a lower wing, or
    taking a name its face does not export; the roof reaching into a wing."""
    files = {
        "producer/__init__.py": "from .producer import P\n",
        "producer/errors.py": "from .config import C\n",  # the ground imports a wing
        "producer/producer.py": "from .dispatch.dispatcher import D\nfrom .dispatch import D\n",
        "producer/config/__init__.py": "from .table import C\n__all__ = ['C']\n",
        "producer/config/table.py": "from ..errors import E\nfrom ..dispatch import D\n",  # a higher wing
        "producer/dispatch/__init__.py": "from .dispatcher import D\n__all__ = ['D']\n",
        "producer/dispatch/dispatcher.py": (
            "from ..config.table import C\n"  # into a lower wing's module
            "from ..config import T\n"  # not exported
            "from ..producer import P\n"  # the roof
            "from .. import errors\n"  # the package's face
            "from . import D2\nfrom ..config import C\n"  # fine: its own wing, a lower face
        ),
    }
    plant(tmp_path, files)
    assert _producer_floor_problems(tmp_path) == {
        "producer/errors.py": ["bruce.producer.config: the ground imports only the ground"],
        "producer/producer.py": ["from bruce.producer.dispatch.dispatcher import ...: through the face of dispatch"],
        "producer/config/table.py": ["bruce.producer.dispatch: dispatch is a higher floor than config"],
        "producer/dispatch/dispatcher.py": [
            "from bruce.producer.config.table import ...: through the face of config",
            "bruce.producer.config.T (not exported)",
            "bruce.producer.producer: producer is above every wing",
            "from bruce.producer import ...: the package's face, above every wing",
        ],
    }


# -- wiring: collaborators are given at construction (docs/architecture.md#wiring) -------------------------------------

HOOK = re.compile(r"^(on_[a-z_]+|sink|send|settle|hooks?|route|route_many|submit|pack|discard|callback)$")
WIRED = ["producer", "proxy"]


def late_patches(path: Path, root: Path = ROOT) -> set[tuple[str, str]]:
    """Assignments that hand a hook or sink to another object after it was built (``x.on_full = ...``,
    ``self.part.sink = ...``), or that replace one of the class's own methods on an instance (``self.send = ...``)."""
    found = set()
    tree = ast.parse(path.read_text(), str(path))
    where = str(path.relative_to(root))
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] + [tree]:
        body = cls.body if isinstance(cls, ast.ClassDef) else []
        methods = {n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        for node in ast.walk(cls):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets if isinstance(node, ast.Assign | ast.AnnAssign) else []:
                if not isinstance(target, ast.Attribute):
                    continue
                text = ast.unparse(target)
                on_self = isinstance(target.value, ast.Name) and target.value.id == "self"
                if (not on_self and HOOK.match(target.attr)) or (on_self and target.attr in methods - {"__init__"}):
                    found.add((where, text))
    return found


def test_no_hook_is_patched_onto_an_object_after_its_construction() -> None:
    assert set().union(*(late_patches(f) for p in WIRED for f in sorted((ROOT / p).rglob("*.py")))) == set()


def test_the_wiring_check_sees_a_late_patch(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "class A:\n"
        "    def __init__(self, b):\n"
        "        self.on_x = b.on_x\n"  # its own hook, given at construction: fine
        "        b.on_full = self.f\n"  # patched onto another object
        "        self.b = b\n"
        "        self.b.sink = self\n"
        "        self.f = len\n"  # its own method replaced
        "    def f(self): pass\n"
    )
    assert late_patches(module, tmp_path) == {("m.py", "b.on_full"), ("m.py", "self.b.sink"), ("m.py", "self.f")}


# -- one name, one class -----------------------------------------------------------------------------------------------


def classes_defined_twice(packages: list[str], root: Path = ROOT) -> dict[str, list[str]]:
    """Public class names defined in more than one place across ``packages``, with the files defining them."""
    where: dict[str, list[str]] = {}
    for package in packages:
        for f in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text(), str(f))):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    where.setdefault(node.name, []).append(str(f.relative_to(root)))
    return {name: files for name, files in where.items() if len(files) > 1}


def test_no_public_class_name_is_defined_twice() -> None:
    assert classes_defined_twice(PACKAGES) == {}


def test_the_class_name_check_sees_a_name_defined_twice(tmp_path: Path) -> None:
    both = "class Message: ...\nclass _Local: ...\n"  # a private name may repeat; a public one may not
    plant(tmp_path, {"wire/a.py": both, "proxy/b.py": both})
    assert classes_defined_twice(["wire", "proxy"], tmp_path) == {"Message": ["wire/a.py", "proxy/b.py"]}
