"""A package's face whose names load on first use, listed once: the ``TYPE_CHECKING`` imports of its ``__init__``.

Rules:
- The list is the block ``if TYPE_CHECKING:`` of the package's ``__init__.py``, written as re-exports
  (``from .datagram import parse_datagram as parse_datagram``; ``from . import plog as plog``: the ``as`` with the same
  name is what tells type checkers the name is exported; a name another module spells differently is given its
  exported spelling there). Type checkers read those imports; :func:`lazy_face` reads the same
  lines (with :mod:`ast`, once, on the first name asked for) to know where each name lives. Nothing else lists them.
- ``__all__`` is that list (in its order), so a star import and :func:`dir` see the face as if it were eager.
- A name is imported from its module on first use and then kept in the package's namespace (no second lookup).
- Only such imports may stand in that block: anything else there is a :class:`TypeError` at the first use, so the list
  cannot drift from what the face serves.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable


def face_names(init_file: str | os.PathLike[str]) -> dict[str, tuple[str, str | None]]:
    """Each exported name → (its module relative to the package, its name there; None: the module itself), in the
    order of the ``TYPE_CHECKING`` block of ``init_file``."""
    import ast

    with open(init_file, encoding="utf-8") as file:
        tree = ast.parse(file.read(), str(init_file))
    names: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for imp in node.body:
            if not (isinstance(imp, ast.ImportFrom) and imp.level == 1):
                raise TypeError(f"{init_file}: only 'from .module import name as name' may stand under TYPE_CHECKING")
            for alias in imp.names:
                if alias.asname != alias.name:
                    raise TypeError(
                        f"{init_file}: {alias.name} must be re-exported ('import {alias.name} as {alias.name}')"
                    )
                if imp.module is None:  # from . import plog as plog: a submodule
                    names[alias.asname] = (alias.name, None)
                else:
                    names[alias.asname] = (imp.module, alias.name)
    return names


def lazy_face(package: str, init_file: str) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: serves its face's names (and ``__all__``) on first use."""
    table: dict[str, tuple[str, str | None]] = {}

    def __getattr__(name: str) -> object:
        if not table:
            table.update(face_names(init_file))
        namespace = sys.modules[package].__dict__
        if name == "__all__":
            value: object = list(table)
        else:
            try:
                module, attribute = table[name]
            except KeyError:
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
            loaded = importlib.import_module(f"{package}.{module}")
            if attribute is None:
                value = loaded
            elif hasattr(loaded, attribute):
                value = getattr(loaded, attribute)
            else:  # a submodule of a package (from .protocol import find_coordinator as find_coordinator)
                value = importlib.import_module(f"{package}.{module}.{attribute}")
        namespace[name] = value
        return value

    return __getattr__
