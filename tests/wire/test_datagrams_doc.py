"""docs/datagrams.md is enough to write a client, and right: its worked examples are the bytes the builders write and
the parser reads, its overhead formulas are the parser's, and its Python client's datagrams parse."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bruce.wire.datagram import (
    OVERHEAD,
    Datagram,
    DatagramKind,
    build_any_partition,
    build_partition_key,
    parse_datagram,
)
from bruce.wire.errors import MalformedInput, UnsupportedVersion

DOC = (Path(__file__).resolve().parents[2] / "docs" / "datagrams.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", DOC, re.S)


def _hex_of(block: str) -> bytes:
    """The bytes of an annotated example: on each line, the two-digit hex tokens before the explanation."""
    out = bytearray()
    for line in block.splitlines():
        for token in line.split():
            if not re.fullmatch(r"[0-9a-f]{2}", token):
                break
            out.append(int(token, 16))
    return bytes(out)


def test_worked_examples_are_what_the_builders_write_and_the_parser_reads() -> None:
    any_partition, partition_key = (_hex_of(text) for lang, text in BLOCKS if lang == "text")
    assert any_partition == build_any_partition("topic", b"\x44\x44", b"key", timestamp=0x123)
    assert parse_datagram(any_partition) == Datagram(DatagramKind.ANY_PARTITION, b"topic", 0x123, b"key", b"DD")
    assert partition_key == build_partition_key("t", b"\x55\x55", partition_key=0x444, timestamp=0x123)
    assert parse_datagram(partition_key) == Datagram(DatagramKind.PARTITION_KEY, b"t", 0x123, b"", b"UU", 0x444)


def test_the_documented_mistakes_are_rejected_as_documented() -> None:
    example = build_any_partition("topic", b"\x44\x44", b"key", timestamp=0x123)
    with pytest.raises(MalformedInput) as wrong_size:
        parse_datagram(b"\x00\x00\x00\x24" + example[4:])  # Size 36
    assert type(wrong_size.value) is MalformedInput
    with pytest.raises(UnsupportedVersion) as wrong_version:
        parse_datagram(example[:6] + b"\x00\x01" + example[8:])  # ApiVersion 1
    assert (wrong_version.value.api_key, wrong_version.value.version) == (256, 1)


def test_size_formulas_match_the_overheads() -> None:
    for kind, formula in [
        (DatagramKind.ANY_PARTITION, "28 + T + K + V"),
        (DatagramKind.PARTITION_KEY, "32 + T + K + V"),
        (DatagramKind.OLD_V0, "18 + T + V"),
    ]:
        assert f"| 0 | 4 | Size | {formula} |" in DOC
        assert int(formula.split()[0]) == OVERHEAD[kind]


def test_the_python_client_writes_datagrams_the_daemon_accepts() -> None:
    (client,) = (text for lang, text in BLOCKS if lang == "python")
    definition = client[: client.index("sock = ")]  # the function, without sending anything
    namespace: dict = {}
    exec(definition, namespace)
    parsed = parse_datagram(namespace["any_partition"](b"my-topic", b"hello", b"k"))
    assert (parsed.kind, parsed.topic, parsed.key, parsed.value) == (
        DatagramKind.ANY_PARTITION,
        b"my-topic",
        b"k",
        b"hello",
    )
    assert parsed.timestamp > 1_600_000_000_000  # epoch milliseconds
