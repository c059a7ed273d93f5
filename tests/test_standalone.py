"""The repository stands alone: no tracked file reads or cites anything beside the clone, every
``docs/<name>.md#<anchor>`` cited from code, tests or docs names a heading that exists, and so does every link between
the pages."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Split so that this file does not match itself.
FORBIDDEN = [
    "../" + "shared",
    "shared/" + "reference",
    "bruce-" + "behaviour",
    "DESIGN" + ".md",
    "DESIGN " + "principle",
]
CITATION = re.compile(r"docs/([\w-]+\.md)#([\w-]+)((?:,\s*#[\w-]+)*)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def tracked_text_files() -> list[Path]:
    names = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    )
    files = []
    for name in filter(None, names):
        path = ROOT / name
        if path.is_file() and b"\0" not in path.read_bytes()[:8192]:
            files.append(path)
    assert len(files) > 100, "git ls-files found too few files: is this a git checkout?"
    return files


def slug(heading: str) -> str:
    """The anchor GitHub (and most Markdown renderers) give a heading."""
    text = re.sub(r"`|\*\*|\*|\[([^]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    found: set[str] = set()
    fenced = False
    for line in doc.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.add(slug(match.group(1)))
    return found


def test_every_link_between_the_pages_lands_on_a_heading() -> None:
    """``[text](page.md#anchor)`` and ``[text](#anchor)`` in README.md and docs/*.md."""
    link = re.compile(r"\]\(((?:docs/)?[\w-]+\.md)?#([\w-]+)\)")
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in link.finditer(line):
                target = page.parent / match.group(1) if match.group(1) else page
                if not target.is_file() or match.group(2) not in anchors(target):
                    broken.append(f"{page.relative_to(ROOT)}:{number}: {match.group(0)}")
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)


def test_no_tracked_file_mentions_anything_beside_the_clone() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in tracked_text_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if any(word in line for word in FORBIDDEN)
    ]
    assert not hits, "files outside the repository are cited:\n" + "\n".join(hits)


def test_every_cited_docs_anchor_exists() -> None:
    cited: dict[tuple[str, str], str] = {}
    for path in tracked_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in CITATION.finditer(line):
                doc, first, more = match.groups()
                for anchor in [first, *re.findall(r"#([\w-]+)", more)]:
                    cited.setdefault((doc, anchor), f"{path.relative_to(ROOT)}:{number}")
    assert ("bruce-compatibility.md", "batching") in cited, "the module headers should cite the compatibility doc"
    missing = [
        f"{where}: docs/{doc}#{anchor}"
        for (doc, anchor), where in sorted(cited.items())
        if not (ROOT / "docs" / doc).is_file() or anchor not in anchors(ROOT / "docs" / doc)
    ]
    assert not missing, "cited anchors that do not exist:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("P7 Shutdown order", "p7-shutdown-order"),
        ("Talking to Kafka 4.x", "talking-to-kafka-4x"),
        ("The `to_bruce` command", "the-to_bruce-command"),
        ("Error ACKs", "error-acks"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_test_configs_live_in_the_repository() -> None:
    from config_files import COMBINED_CONF, PER_TOPIC_CONF

    for path in (COMBINED_CONF, PER_TOPIC_CONF):
        assert path.is_relative_to(ROOT / "tests" / "data") and path.is_file()
