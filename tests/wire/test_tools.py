"""The wire benchmarks and fuzz harnesses keep working: each bench runs in --quick mode and prints its figures (no
timing is asserted); the fuzz runner finds every harness and fails the run on a broken invariant; each harness holds
its invariant over its seeds and mutations of them; the seed corpora are what ``fuzz/make_seeds.py`` writes, and
every seed is valid input."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bruce.wire.columns import decode_columns
from bruce.wire.datagram import parse_datagram
from bruce.wire.messageset import decode_message_set
from bruce.wire.protocol.base import decode_request, decode_response
from bruce.wire.recordbatch import decode_record_batches

from .builders import PURE

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "fuzz"
HARNESSES = sorted(p.stem.removeprefix("fuzz_") for p in FUZZ.glob("fuzz_*.py"))

BENCHES = {
    "wire_bench.py": (
        ["datagram parse+validate", "message set build", "message set columns", "CRC-32 (zlib)", "CRC-32C (crcmod"],
        "GB/s",
        4 if PURE else 5,  # the C CRC-32's row when the extension is built
    ),
    "recordbatch_bench.py": (
        [
            "bruce fast builder",
            "bruce column builder",
            "bruce columns (C records)",
            "bruce columns (C when built)",
            "aiokafka (C)",
            "lz4",
        ],
        "ns/record",
        17,
    ),
}


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bench", list(BENCHES))
def test_bench_quick_run_prints_its_figures(bench: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / bench), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines, unit, count = BENCHES[bench]
    for line in lines:
        assert line in done.stdout
    assert done.stdout.count(unit) == count


BROKEN = """
import sys
import atheris

def test_one_input(data: bytes) -> None:
    if data[:1] == b"x":
        raise ValueError("invariant broken")

atheris.Setup(sys.argv, test_one_input)
atheris.Fuzz()
"""


def test_a_broken_invariant_fails_the_fuzz_run(tmp_path: Path) -> None:
    (tmp_path / "fuzz_broken.py").write_text(BROKEN)
    (tmp_path / "corpus" / "broken").mkdir(parents=True)
    (tmp_path / "corpus" / "broken" / "seed").write_bytes(b"x")  # the seed itself breaks it
    (tmp_path / "tmp").mkdir()
    command = [sys.executable, str(FUZZ / "run_all.py"), "--total-seconds", "3", "--harness-dir", str(tmp_path)]
    done = subprocess.run(
        [*command, "--crash-dir", str(tmp_path / "crashes")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
    )
    assert done.returncode == 1
    assert "broken: FAILED" in done.stdout and "invariant broken" in done.stdout
    assert f"crashing inputs kept in {tmp_path / 'crashes'}" in done.stderr
    assert ["-crash-" in p.name for p in (tmp_path / "crashes").iterdir()] == [True]
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing left behind in the temporary directory


def test_every_parser_has_a_harness() -> None:
    assert {"datagram", "messageset", "recordbatch", "columns", "response", "plog"} <= set(HARNESSES)


@pytest.mark.parametrize("name", HARNESSES)
def test_harness_holds_over_its_seeds_and_their_mutations(name: str) -> None:
    harness = _load(FUZZ / f"fuzz_{name}.py")
    seeds = sorted((FUZZ / "corpus" / name).iterdir())
    assert seeds, f"fuzz/corpus/{name} has no seeds"
    rng = random.Random(0x123)
    for seed in seeds:
        data = seed.read_bytes()
        harness.test_one_input(data)
        for _ in range(25):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            harness.test_one_input(bytes(mutated[: rng.randint(0, len(mutated))]))
            harness.test_one_input(bytes(mutated))


def _parse_response_seed(seed: bytes) -> object:
    if seed[0] == 0xFF:
        return decode_request(seed[1:])
    return decode_response(seed[0], seed[1], seed[2:])


VALID = {
    "datagram": parse_datagram,
    "messageset": decode_message_set,
    "recordbatch": decode_record_batches,
    "columns": lambda data: decode_columns(data).count,
    "response": _parse_response_seed,
}


def test_seed_corpora_are_current_and_valid() -> None:
    make_seeds = _load(FUZZ / "make_seeds.py")
    written = {
        "datagram": make_seeds.datagrams(),
        "messageset": make_seeds.message_sets(),
        "recordbatch": make_seeds.record_batches(),
        "columns": make_seeds.logs(),
        "response": make_seeds.responses_and_requests(),
    }
    for name, seeds in written.items():
        files = sorted((FUZZ / "corpus" / name).iterdir(), key=lambda p: int(p.name.removeprefix("seed-")))
        stored = [p.read_bytes() for p in files]  # in seed order (seed-100 after seed-99)
        assert stored == seeds, f"fuzz/corpus/{name} is stale: run fuzz/make_seeds.py"
        for seed in seeds:
            assert VALID[name](seed), f"{name} seed {seed.hex()} does not decode to anything"
