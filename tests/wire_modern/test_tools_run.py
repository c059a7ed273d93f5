"""The benchmark and the fuzz harnesses keep working: the bench runs in --quick mode and prints its figures; each
harness's entry point runs over its seed corpus and over random inputs without failing its invariant."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = ["recordbatch", "fetch_response", "list_offsets_response"]


def test_recordbatch_bench_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "recordbatch_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    for line in ("bruce fast builder", "aiokafka (C)", "bruce fast decoder", "crc32c (hardware)", "lz4"):
        assert line in out
    assert out.count("ns/record") == 12 and out.count("MB/s") >= 3


def _harness(name: str):
    path = ROOT / "fuzz" / f"fuzz_{name}.py"
    spec = importlib.util.spec_from_file_location(f"fuzz_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", HARNESSES)
def test_fuzz_harness_over_corpus_and_random_inputs(name: str) -> None:
    harness = _harness(name)
    seeds = sorted((ROOT / "fuzz" / "corpus" / name).iterdir())
    assert seeds, f"fuzz/corpus/{name} has no seeds"
    rng = random.Random(0x123)
    for seed in seeds:
        data = seed.read_bytes()
        harness.test_one_input(data)
        for _ in range(60):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            harness.test_one_input(bytes(mutated[: rng.randint(0, len(mutated))]))
            harness.test_one_input(bytes(mutated))
