"""The docs test's reading of a page: which blocks run, and every way a code block can escape it being refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from .examples import read_blocks

PAGE = """# A page

<!-- runnable -->
```sh
to_bruce --topic t --value v
```

<!-- not-runnable: needs a real cluster -->
```python
connect("kafka1:9092")
```

```text
output is not code: no marker needed
```

- a list item

  <!-- runnable -->
  ```python
  print("inside a list")
  ```
"""


def _read(tmp_path: Path, text: str) -> tuple[list, list[str]]:
    page = tmp_path / "page.md"
    page.write_text(text)
    return read_blocks(page, tmp_path)


def test_marked_blocks_are_read_with_their_lines(tmp_path: Path) -> None:
    blocks, problems = _read(tmp_path, PAGE)
    assert problems == []
    assert [(b.where, b.kind if b.runnable else None, b.code) for b in blocks] == [
        ("page.md:4", "sh", "to_bruce --topic t --value v\n"),
        ("page.md:9", None, 'connect("kafka1:9092")\n'),
        ("page.md:20", "python", 'print("inside a list")\n'),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("```sh\nls\n```\n", "page.md:1: a ```sh example without a marker: put <!-- runnable -->"),
        ("```python\nx = 1\n```\n", "page.md:1: a ```python example without a marker"),
        ("```\nls\n```\n", "page.md:1: a fenced block without a language"),
        ("text\n\n    ls -l\n", "page.md:3: an indented code block: use a fenced block"),
        ("<!-- runnable -->\n\n```sh\nls\n```\n", "page.md:3: a ```sh example without a marker"),
        ("<!-- runnable -->\n\n```sh\nls\n```\n", "page.md:1: a marker that is not directly above"),
        ("<!-- not-runnable -->\n```sh\nls\n```\n", "page.md:2: <!-- not-runnable --> needs a reason"),
        ("<!-- runnable -->\n```console\n$ ls\n```\n", "page.md:2: a runnable ```console block"),
        ("<!-- runnable -->\n```toml\na = 1\n```\n", "page.md:2: a runnable marker above a ```toml block"),
        ("<!-- runable -->\n```sh\nls\n```\n", "page.md:2: a ```sh example without a marker"),
        ("<!-- runnable: yes -->\n```sh\nls\n```\n", "page.md:1: malformed marker"),
    ],
)
def test_a_block_that_would_escape_the_docs_test_is_a_problem(tmp_path: Path, text: str, problem: str) -> None:
    _, problems = _read(tmp_path, text)
    assert any(p.startswith(problem) for p in problems), problems
