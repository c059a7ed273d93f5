"""Fuzz the message-set decoder (magic 0/1, every codec).

Invariant: for any bytes, ``decode_message_set`` returns records or raises MalformedInput, never anything else, and
its compressed wrappers together never expand past its budget (1 MiB here).
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports(include=["bruce.wire"]):
    from bruce.wire.compression import DecompressionBudget
    from bruce.wire.errors import MalformedInput
    from bruce.wire.messageset import decode_message_set

BUDGET = 1 << 20


def test_one_input(data: bytes) -> None:
    budget = DecompressionBudget(BUDGET)
    with contextlib.suppress(MalformedInput):
        decode_message_set(data, max_decompressed_size=budget)
    if not 0 <= budget.remaining <= BUDGET:
        raise AssertionError(f"decompression budget left at {budget.remaining}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
