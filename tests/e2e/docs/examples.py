"""The code blocks of README.md and docs/*.md, as a Markdown reader sees them, and the markers that say which run.

Rules (the convention every page follows):
- A code block is a fenced block with a language: ```` ```sh ```` or ```` ```python ```` for code, ```` ```text ````
  (or toml, xml, json, yaml, ...) for anything else. An unlabelled fence or an indented code block is a problem: a
  reader cannot tell code from output, and the docs test could not tell which to run.
- A code block (sh, bash, shell, console, python, py, pycon) carries a marker, an HTML comment on the line directly
  above its fence: ``<!-- runnable -->`` (the docs test runs it) or ``<!-- not-runnable: why -->`` (the reason is
  required: it tells the reader what the example needs). A code block without one is a problem, so no new example
  escapes the test. Only sh, bash and python blocks can be runnable (console and pycon show prompts).
- A marker that is not directly above a code block is a problem too (it would silently mark nothing).
- Runnable examples are written for the setup ``./run.sh`` gives (the daemon's default socket, its embedded broker
  on ``127.0.0.1:9092``, status pages on ``127.0.0.1:9090``) and run as written, nothing replaced: a production path
  such as ``/var/run/bruce/bruce.socket`` belongs in prose or a not-runnable block (:data:`PRODUCTION_PATHS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[3]
CODE_LANGUAGES = {"sh", "bash", "shell", "console", "python", "py", "pycon"}
RUNNABLE_LANGUAGES = {"sh": "sh", "bash": "sh", "python": "python"}
PRODUCTION_PATHS = ("/var/run/", "/etc/bruce/", "/var/lib/bruce")  # a runnable example under ./run.sh reaches none
_MARKER = re.compile(r"^<!--\s*(?:(runnable)|(not-runnable)\s*(?::\s*(.*?))?)\s*-->\s*$")
_ANY_MARKER = re.compile(r"<!--\s*(?:runnable|not-runnable)\b")


@dataclass(frozen=True)
class Block:
    """One code block: where it is (``doc``, the 1-based ``line`` of its opening fence), its language and text."""

    doc: str
    line: int
    language: str
    code: str
    runnable: bool

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def kind(self) -> str:
        """``sh`` or ``python``: how the docs test runs it."""
        return RUNNABLE_LANGUAGES[self.language]


def doc_paths(root: Path = ROOT) -> list[Path]:
    """README.md and every page in docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def read_blocks(path: Path, root: Path = ROOT) -> tuple[list[Block], list[str]]:
    """The code blocks of one page (every fenced block with a code language) and its problems (see the rules)."""
    doc = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    blocks: list[Block] = []
    problems: list[str] = []
    markers: dict[int, tuple[str, str | None]] = {}  # line after the comment (0-based) -> (marker, reason)
    for token in tokens:
        if token.type == "html_block" and token.map and _ANY_MARKER.search(token.content):
            match = _MARKER.match(token.content.strip())
            if match is None:
                problems.append(
                    f"{doc}:{token.map[0] + 1}: malformed marker {token.content.strip()!r}: write "
                    "<!-- runnable --> or <!-- not-runnable: why --> alone on its line"
                )
            else:
                markers[token.map[1]] = (match.group(1) or match.group(2), match.group(3))
    used: set[int] = set()
    for token in tokens:
        if token.map is None:
            continue
        line = token.map[0] + 1
        if token.type == "code_block":
            problems.append(
                f"{doc}:{line}: an indented code block: use a fenced block with a language (```sh or ```python "
                "for code, with a <!-- runnable --> or <!-- not-runnable: why --> marker; ```text for output)"
            )
            continue
        if token.type != "fence":
            continue
        language = token.info.split()[0].lower() if token.info.strip() else ""
        marker = markers.get(token.map[0])
        if marker is not None:
            used.add(token.map[0])
        if not language:
            problems.append(
                f"{doc}:{line}: a fenced block without a language: label it (```sh or ```python for code, with a "
                "marker; ```text for output)"
            )
            continue
        if language not in CODE_LANGUAGES:
            if marker is not None:
                problems.append(f"{doc}:{line}: a {marker[0]} marker above a ```{language} block: only code is marked")
            continue
        if marker is None:
            problems.append(
                f"{doc}:{line}: a ```{language} example without a marker: put <!-- runnable --> (the docs test runs "
                "it) or <!-- not-runnable: why --> on the line directly above its fence"
            )
            continue
        kind, reason = marker
        if kind == "not-runnable" and not reason:
            problems.append(f"{doc}:{line}: <!-- not-runnable --> needs a reason: <!-- not-runnable: why -->")
            continue
        if kind == "runnable" and language not in RUNNABLE_LANGUAGES:
            problems.append(
                f"{doc}:{line}: a runnable ```{language} block: only sh, bash and python run (write the commands "
                "without prompts in a ```sh block)"
            )
            continue
        blocks.append(Block(doc, line, language, token.content, kind == "runnable"))
    for after in sorted(set(markers) - used):
        problems.append(f"{doc}:{after}: a marker that is not directly above a code block's fence")
    return blocks, problems


def runnable_blocks(root: Path = ROOT) -> list[Block]:
    """Every runnable block of every page, in page order."""
    return [b for path in doc_paths(root) for b in read_blocks(path, root)[0] if b.runnable]
