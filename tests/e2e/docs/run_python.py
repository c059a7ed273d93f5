"""Run the python examples of one page in order, in one namespace (as a reader pasting them into one interpreter).

    python run_python.py BLOCKS.json

BLOCKS.json: ``{"doc": "docs/x.md", "blocks": [{"line": 12, "code": "..."}, ...]}``, the code as written.
Each block is compiled with the page as its file name and its own line numbers, so a traceback points into the page.
The first block that raises stops the run: its traceback, then ``FAILED <doc>:<line>``, and exit status 1.
"""

from __future__ import annotations

import json
import sys
import traceback


def main(path: str) -> int:
    with open(path, encoding="utf-8") as file:
        page = json.load(file)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in page["blocks"]:
        code = "\n" * block["line"] + block["code"]  # the fence is on `line`: the code starts on the next one
        try:
            exec(compile(code, page["doc"], "exec"), namespace)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED {page['doc']}:{block['line']}", file=sys.stderr, flush=True)
            return 1
        print(f"ok {page['doc']}:{block['line']}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
