"""The typing rules of the package code (wire, producer, client, proxy, spark), read from the source.

- Every ``# type: ignore`` names its error codes and says why on the same line:
  ``# type: ignore[attr-defined]  # a daemon Message carries charge``. A bare one hides every error of its line, and
  one without a reason cannot be judged when the code around it changes.
- mypy (scripts/typecheck.sh, pyproject.toml's ``[tool.mypy]``) checks every package.
"""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["wire", "producer", "client", "proxy", "spark", "tool"]
IGNORE = re.compile(r"#\s*type:\s*ignore\b")
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[\w,\s-]+\]\s+#\s*\S")


def unexplained_ignores(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each ``# type: ignore`` comment that lacks error codes or a reason after it."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and IGNORE.search(token.string) and not EXPLAINED.search(token.string):
            found.append((token.start[0], token.string))
    return found


def test_the_check_tells_an_explained_ignore_from_the_others() -> None:
    source = (
        "a = b  # type: ignore[assignment]  # a reason\n"
        "c = d  # type: ignore[assignment]\n"
        "e = f  # type: ignore\n"
        "g = h  # type: ignore  # a reason, but no code\n"
        "i = j  # type: ignore[misc] #\n"
        'k = "# type: ignore"  # in a string: not a comment\n'
    )
    assert [line for line, _ in unexplained_ignores(source)] == [2, 3, 4, 5]


def test_every_type_ignore_in_the_packages_says_why() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {comment}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, comment in unexplained_ignores(path.read_text())
    ]
    assert not bad, "a type: ignore without [codes] and '  # why':\n" + "\n".join(bad)


def test_mypy_checks_every_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert sorted(config["packages"]) == sorted(f"bruce.{p}" for p in PACKAGES)
