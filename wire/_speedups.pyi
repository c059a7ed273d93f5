"""bruce.wire's record encoders and columnar decoder in C (``_speedups.c``, ``_columns.c``)."""

from collections.abc import Callable, Sequence

_Column = tuple[object, object, object, int, bool, int]  # a binary column: validity, offsets, data, first, wide, count
_Headers = tuple[object, object, int, _Column, _Column]  # validity, list offsets, first, names, values

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
def record_columns(
    data: bytes,
    decompress: Callable[[int, memoryview, bool], bytes],
    crc32c: Callable[[memoryview], int],
    /,
) -> tuple[
    int,
    bytes,
    bytes,
    bytes,
    tuple[int, int, bytes | None, bytes, bytes],
    tuple[int, int, bytes | None, bytes, bytes],
    bytes,
    tuple[int, int, bytes | None, bytes, bytes],
    tuple[int, int, bytes | None, bytes, bytes],
    tuple[int, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes],
]: ...
def column_records(
    values: _Column,
    keys: _Column | None,
    headers: _Headers | None,
    timestamps: object,
    count: int,
    start: int,
    stop: int,
    room: int,
    /,
) -> tuple[bytearray, int, int]: ...
def column_sizes(
    values: _Column,
    keys: _Column | None,
    headers: _Headers | None,
    timestamps: object,
    count: int,
    /,
) -> tuple[bytes, int, int | None, int | None]: ...
def murmur2_column(column: _Column, /) -> bytes: ...
