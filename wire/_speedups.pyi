"""bruce.wire's record encoders in C (``_speedups.c``)."""

from collections.abc import Sequence

def record_batch_records(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | bytearray | None],
    timestamps: Sequence[int],
    empty_as_null: bool,
    /,
) -> tuple[bytes, int, int]: ...
def message_set(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamps: Sequence[int] | None,
    magic: int,
    empty_as_null: bool,
    base_offset: int,
    /,
) -> bytes: ...
def crc32(data: bytes | bytearray | memoryview, value: int = 0, /) -> int: ...
