"""Every example in README.md and docs/*.md marked ``<!-- runnable -->`` runs as written, against tansu and a real
``bruce`` daemon; every other code block says why it does not run (the rules are in ``examples.py``).

How examples run: from the repository's root, with this environment's ``bin`` first on PATH (``bruce``, ``to_bruce``),
``$XDG_RUNTIME_DIR``, ``$XDG_STATE_HOME`` and ``$TMPDIR`` in a fresh directory, and one daemon started exactly as
``./run.sh`` starts it (no arguments): its embedded broker on 127.0.0.1:9092 (topics created on first use), its status
pages on 127.0.0.1:9090, its socket at the default path. So the examples run as written, nothing replaced. Ports 9092
and 9090 must be free for this module (the session's ``tansu`` and every other test broker take free ports, which are
never these): if something else holds one, the module fails at once and names it. A ``sh`` block runs alone in
``bash -e -o pipefail``; the ``python`` blocks of one page run in order in one interpreter (``run_python.py``), like a
reader pasting them. Each has a bounded time; a failure names the page and line, with the example's output. An example
must leave the repository as it found it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bruce.proxy.config.ports import KAFKA_PORT, port_is_free

from ..daemon.harness import BruceProcess, counters_json, start_bruce, wait_for
from .examples import PRODUCTION_PATHS, ROOT, Block, doc_paths, read_blocks, runnable_blocks

SH_TIMEOUT_S = 240  # a hang guard: the pipeline example starts a Spark job, minutes on a loaded 2-core machine
PYTHON_TIMEOUT_S = 120  # per page, plus PYTHON_BLOCK_TIMEOUT_S per block
PYTHON_BLOCK_TIMEOUT_S = 60
pytestmark = pytest.mark.e2e
RUN_PYTHON = Path(__file__).with_name("run_python.py")
BLOCKS = runnable_blocks()
SH = [b for b in BLOCKS if b.kind == "sh"]
PYTHON_PAGES = sorted({b.doc for b in BLOCKS if b.kind == "python"})
# Pages whose examples wait for a change that is not on this branch yet. Strict: once the change is in, the page
# passes, the XPASS fails the run, and its entry must go.
WAITING: dict[str, str] = {}  # doc → why its examples cannot pass yet (a strict xfail: fails once they pass)


@dataclass(frozen=True)
class Setup:
    """The environment the examples run with, and the daemon's log."""

    env: dict[str, str]
    daemon_log: Path
    daemon: BruceProcess


STATUS_PORT = 9090  # ./run.sh's status pages, as the examples name them
PORT_WAIT_S = 15  # for a daemon an earlier test stopped to let go of its ports


def _wait_until_free(port: int, what: str) -> None:
    try:
        wait_for(lambda: port_is_free(port), PORT_WAIT_S, f"127.0.0.1:{port} to be free")
    except AssertionError:
        pytest.fail(
            f"127.0.0.1:{port} is taken by another process: the docs examples name {what} there, as ./run.sh gives "
            f"it; stop what listens on it (ss -ltnp 'sport = :{port}') and run the docs test again"
        )


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    work = Path(tempfile.mkdtemp(prefix="bruce-docs-", dir="/tmp"))  # short: a socket path has at most 107 bytes
    try:
        env = dict(os.environ)
        for name, sub in (("XDG_RUNTIME_DIR", "run"), ("XDG_STATE_HOME", "state"), ("TMPDIR", "tmp")):
            (work / sub).mkdir(mode=0o700)
            env[name] = str(work / sub)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["SPARK_LOCAL_IP"] = "127.0.0.1"  # docs/spark.md: on a laptop or in CI, Spark must bind loopback
        _wait_until_free(KAFKA_PORT, "the embedded broker")
        _wait_until_free(STATUS_PORT, "the status pages")
        daemon = start_bruce(  # ./run.sh's command line: no arguments
            [], work / "bruce.log", env={k: env[k] for k in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "TMPDIR")}
        )
        try:
            status_url = daemon.wait_serving()
            assert status_url == f"http://127.0.0.1:{STATUS_PORT}", daemon.log
            wait_for(lambda: "stop with Ctrl-C" in daemon.log, what="the announcement")
            on_9092 = f"an embedded broker (tansu) runs on 127.0.0.1:{KAFKA_PORT} (Kafka's usual port)"
            if on_9092 not in daemon.log:
                pytest.fail(f"the daemon's broker is not on 127.0.0.1:{KAFKA_PORT} (taken meanwhile?):\n{daemon.log}")
            wait_for(lambda: counters_json(status_url).get("MetadataChanged", 0) >= 1, what="the first metadata")
            socket_path = str(work / "run" / "bruce.socket")  # the default path under $XDG_RUNTIME_DIR
            assert os.path.exists(socket_path), daemon.log
            yield Setup(env, work / "bruce.log", daemon)
        finally:
            daemon.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _repository_state() -> str:
    """What git sees as changed or new in the working tree (examples must not write into the repository)."""
    if not (ROOT / ".git").exists():
        return ""  # not a checkout (an unpacked source archive): nothing to compare
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


def _run(command: list[str], setup: Setup, timeout: float, what: str) -> str:
    """Run one example's command from the repository root; its output, or a failure naming ``what``."""
    before = _repository_state()
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=setup.env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        pytest.fail(f"{what}: did not finish within {timeout} s\n--- output ---\n{out[-4000:]}")
    output = done.stdout + done.stderr
    if done.returncode != 0:
        daemon = setup.daemon_log.read_text(errors="replace")[-2000:]
        pytest.fail(
            f"{what}: failed with exit status {done.returncode}\n--- output ---\n{output[-6000:]}\n"
            f"--- the daemon's log (tail) ---\n{daemon}"
        )
    after = _repository_state()
    assert after == before, f"{what}: the example changed the repository:\n{after}"
    return output


def test_every_code_block_is_marked_and_every_marker_marks_one() -> None:
    problems = [p for path in doc_paths() for p in read_blocks(path)[1]]
    assert not problems, "code blocks in the docs that the docs test cannot classify:\n" + "\n".join(problems)


def test_runnable_examples_name_no_production_path() -> None:
    """They run as written under ./run.sh: the client library and to_bruce find its socket without a path, so no
    example needs a production path that a reader (or this test) would have to replace."""
    named = [(b.where, p) for b in BLOCKS for p in PRODUCTION_PATHS if p in b.code]
    assert named == []


def test_the_first_hour_is_covered() -> None:
    """The examples a new user meets first are among the runnable ones (not quietly marked away)."""
    pages = {b.doc for b in BLOCKS}
    assert {"README.md", "docs/client.md", "docs/producer.md", "docs/spark.md", "docs/wire.md"} <= pages
    assert any("to_bruce" in b.code for b in SH if b.doc == "README.md")


@pytest.mark.parametrize("block", SH, ids=[b.where for b in SH])
def test_sh_example(block: Block, setup: Setup) -> None:
    _run(["bash", "-e", "-o", "pipefail", "-c", block.code], setup, SH_TIMEOUT_S, f"{block.where}: the ```sh example")


def _marks(doc: str) -> list[pytest.MarkDecorator]:
    marks = [pytest.mark.spark] if "spark" in doc else []
    if doc in WAITING:
        marks.append(pytest.mark.xfail(reason=WAITING[doc], strict=True))
    return marks


@pytest.mark.parametrize("doc", [pytest.param(d, marks=_marks(d)) for d in PYTHON_PAGES])
def test_python_examples(doc: str, setup: Setup, tmp_path: Path) -> None:
    blocks = [b for b in BLOCKS if b.kind == "python" and b.doc == doc]
    page = {"doc": doc, "blocks": [{"line": b.line, "code": b.code} for b in blocks]}
    script = tmp_path / "blocks.json"
    script.write_text(json.dumps(page))
    timeout = PYTHON_TIMEOUT_S + PYTHON_BLOCK_TIMEOUT_S * len(blocks)
    lines = ", ".join(str(b.line) for b in blocks)
    _run(
        [sys.executable, str(RUN_PYTHON), str(script)], setup, timeout, f"{doc}: the ```python examples (lines {lines})"
    )


# Last, as pytest runs a module's tests in order: it stops the daemon the examples used.
def test_the_daemon_delivered_what_the_examples_sent(setup: Setup) -> None:
    """Examples that send through the daemon exit 0 once it has their messages: its account at the end says whether
    they reached Kafka. The only discard they may cause is the malformed datagram docs/client.md sends on purpose."""
    setup.daemon.signal(signal.SIGTERM)  # an orderly stop: it delivers what it holds, then gives its account
    assert setup.daemon.wait(60) == 0
    log = setup.daemon.log
    stopped = re.search(r"stopped: (\d+) received, (\d+) delivered, (\d+) discarded, (\d+) in flight", log)
    assert stopped, log[-3000:]
    received, delivered, discarded, in_flight = map(int, stopped.groups())
    assert received > 0 and in_flight == 0, stopped.group(0)
    reasons = set(re.findall(r"discarded message: (\w+)", log))
    assert reasons <= {"MALFORMED"}, f"the examples' messages were discarded: {reasons}\n{log[-3000:]}"
    assert delivered == received - discarded
