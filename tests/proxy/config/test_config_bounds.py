"""Config files cost memory and time in proportion to their size whatever they hold: Bruce's XML is checked element by
element as it is read (nothing nests deeper than Bruce's own elements), TOML nesting and dotted keys are bounded
before ``tomllib`` reads them, and a generated sweep over damaged files (cut, bit-flipped, deeply nested, huge
tokens, bad encodings) ends every one in a :class:`Config` or a one-line :class:`ConfigError` naming the file."""

from __future__ import annotations

import re
import tomllib
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from config_files import COMBINED_CONF, PER_TOPIC_CONF
from hypothesis import given, settings
from hypothesis import strategies as st
from xml_samples import VALID_XML, line_of, variant

from bruce.proxy.config import Config, ConfigError, load_config_file, load_toml, load_xml, to_toml
from bruce.proxy.config.toml_config import MAX_KEY_PARTS, MAX_NESTING

HEAD = '<?xml version="1.0" encoding="US-ASCII"?>\n'
MIB = 1024 * 1024
Loader = Callable[..., Config]


def outcome(load: Loader, data: bytes | str, source: str = "f") -> str:
    """``"loaded"`` or the error's text (any other exception fails the test)."""
    try:
        load(data, source=source)
    except ConfigError as error:
        return str(error)
    return "loaded"


def traced(load: Loader, data: bytes | str) -> tuple[str, int]:
    """The outcome and the peak of the memory allocated while loading (tracemalloc)."""
    tracemalloc.start()
    try:
        return outcome(load, data), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- XML: depth and size ----------------------------------------------------------------------------------------------


def nested(levels: int, opening: str = "", tag: str = "a") -> str:
    closing = "".join(f"</{t}>" for t in reversed(re.findall(r"<(\w+)", opening)))
    return HEAD + "<bruceConfig>" + opening + f"<{tag}>" * levels + f"</{tag}>" * levels + closing + "</bruceConfig>"


DEEPEST = '<batching><namedConfigs><config name="c"><time value="1">'  # Bruce's deepest element


@pytest.mark.parametrize("levels", [10_000, 40_000, 1_450_000], ids=["10k", "40k", "10MB"])
def test_deep_xml_is_refused_at_its_first_element_in_little_memory(levels: int) -> None:
    data = nested(levels).encode()
    error, peak = traced(load_xml, data)
    assert error == (
        "f, line 2: bruceConfig: unexpected element <a>; expected <batching>, <compression>, <topicRateLimiting>, "
        "<initialBrokers>, <kafka>"
    )
    assert peak < 1 * MIB + len(data), f"{peak / MIB:.1f} MiB for {len(data) / MIB:.1f} MiB"
    data = nested(levels, DEEPEST, "time").encode()
    error, peak = traced(load_xml, data)
    assert error == (
        'f, line 2: batching/namedConfigs/config[name="c"]/time: unexpected element <time>: this element must be empty'
    )
    assert peak < 1 * MIB + len(data), f"{peak / MIB:.1f} MiB for {len(data) / MIB:.1f} MiB"


def topics(count: int) -> str:
    listed = "".join(f'\n      <topic name="topic-{i}" action="disable" />' for i in range(count))
    return variant('<topic name="t1" action="perTopic" config="fast" />', listed.strip())


def test_xml_memory_grows_in_proportion_to_the_file() -> None:
    (small, small_peak), (large, large_peak) = traced(load_xml, topics(2_000)), traced(load_xml, topics(8_000))
    assert small == large == "loaded"
    assert large_peak < 5 * small_peak  # 4 times the topics cost about 4 times the memory (not 16)


def test_many_unnamed_siblings_are_numbered_as_they_come() -> None:
    """Brokers are numbered in error paths (``broker[n]``): counted as they come, not by looking back at each."""
    many = "\n".join('    <broker host="b" />' for _ in range(20_000))
    text = variant('    <broker host="b1" />\n    <broker host="b2" port="9093" />', many + '\n    <broker port="x"/>')
    line = line_of('<broker port="x"/>', text)
    assert (
        outcome(load_xml, text)
        == f"f, line {line}: initialBrokers/broker[20001]/@host: is missing: this setting is required"
    )


# -- TOML: nesting and dotted keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x = " + "[" * 200_000 + "]" * 200_000, "arrays and inline tables nest deeper than 32 levels"),
        ("x = " + "{a=" * 100_000 + "1" + "}" * 100_000, "arrays and inline tables nest deeper than 32 levels"),
        (".".join(["a"] * 16_000) + " = 1", "a dotted key has more than 32 parts"),
        (".".join(["a"] * 500_000) + " = 1", "a dotted key has more than 32 parts"),
        ("[" + ".".join(['"a.b"'] * 40) + "]", "a dotted key has more than 32 parts"),
    ],
    ids=["arrays-200k", "inline-tables-100k", "dotted-16k", "dotted-500k", "dotted-header"],
)
def test_deep_toml_is_refused_before_tomllib_reads_it(text: str, problem: str) -> None:
    error, peak = traced(load_toml, "# a comment\n" + text)
    assert error == f"f, line 2: {problem}: more than bruce reads (a limit of bruce, not of TOML)"
    assert peak < 1 * MIB


def test_toml_limits_are_exact() -> None:
    assert "unknown setting" in outcome(load_toml, "x = " + "[" * MAX_NESTING + "]" * MAX_NESTING)
    assert "nest deeper" in outcome(load_toml, "x = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1))
    assert "unknown setting" in outcome(load_toml, " . ".join(["a"] * MAX_KEY_PARTS) + " = 1")
    assert "more than 32 parts" in outcome(load_toml, " . ".join(["a"] * (MAX_KEY_PARTS + 1)) + " = 1")


def test_numbers_are_bounded_but_not_names_that_look_like_them() -> None:
    assert "unknown setting" in outcome(load_toml, "x = " + "9" * 100)
    assert "a number is longer than 100 characters" in outcome(load_toml, "x = " + "9" * 101)
    assert "a number is longer than 100 characters" in outcome(load_toml, "x = 0x" + "f" * 99)
    topic = "0123456789abcdef" * 8  # a digest as a topic name, written as a bare key
    config = load_xml(variant('<topic name="t1" config="plain" />', f'<topic name="{topic}" config="plain" />'))
    text = to_toml(config)
    assert f"\n{topic} = " in text and load_toml(text) == config


# Strings full of what the scan counts, in each of TOML's four spellings; keys quoted or bare; values nested.
TRICKY = st.text(st.sampled_from("ab.[]{}\"'\\#=,\n\t \u00e9"), max_size=12)


def _basic(text: str) -> str:
    return '"' + "".join({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}.get(c, c) for c in text) + '"'


def _string(text: str, style: int) -> str:
    if style == 1 and "'" not in text and "\n" not in text:
        return f"'{text}'"
    if style == 2 and not text.startswith("\n"):
        return '"""' + text.replace("\\", "\\\\").replace('"', '\\"') + '"""'
    if style == 3 and "'''" not in text and not text.startswith("\n") and not text.endswith("''"):
        return f"'''{text}'''"
    return _basic(text)


@st.composite
def toml_values(draw: st.DrawFn, depth: int = 0) -> tuple[object, str]:
    """A value and its TOML spelling, nested at most MAX_NESTING deep."""
    kind = draw(st.integers(0, 4 if depth < MAX_NESTING else 2))
    if kind == 0:
        number = draw(st.integers(-(10**6), 10**6))
        return number, str(number)
    if kind == 1:
        return 1.5, "1.5"
    if kind == 2:
        text = draw(TRICKY)
        return text, _string(text, draw(st.integers(0, 3)))
    items = draw(st.lists(toml_values(depth + 1), max_size=3))
    if kind == 3:
        return [v for v, _ in items], "[" + ", ".join(t for _, t in items) + "]"
    keys = draw(st.lists(TRICKY, min_size=len(items), max_size=len(items), unique=True))
    table = {k: v for k, (v, _) in zip(keys, items, strict=True)}
    return table, "{" + ", ".join(f"{_basic(k)} = {t}" for k, (_, t) in zip(keys, items, strict=True)) + "}"


@settings(max_examples=300, deadline=None)
@given(toml_values(), st.lists(TRICKY, min_size=1, max_size=MAX_KEY_PARTS), st.data())
def test_valid_toml_within_the_limits_is_never_refused(value: tuple[object, str], parts: list[str], data) -> None:
    key = " . ".join(
        p if p.isalnum() and p.isascii() else _string(p, data.draw(st.sampled_from([0, 1]))) for p in parts
    )
    text = f"# {parts[0]!r} [[[ ...\nx = {value[1]}\n{key} = 1.5\n"
    raw = tomllib.loads(text)
    assert raw["x"] == value[0]
    assert "unknown setting" in outcome(load_toml, text)  # the scan let it through; the settings check answered


# -- the sweep: damaged files end in a Config or a one-line ConfigError -------------------------------------------


def _bases() -> Iterator[tuple[str, Loader, bytes]]:
    for name, xml in (("sample", VALID_XML.encode()), ("combined", COMBINED_CONF.read_bytes())):
        yield f"{name}.xml", load_xml, xml
        yield f"{name}.toml", load_toml, to_toml(load_xml(xml)).encode()
    yield "per_topic.xml", load_xml, PER_TOPIC_CONF.read_bytes()


BASES = list(_bases())


def _cuts(data: bytes) -> Iterator[bytes]:
    """Cut at every line end and in the middle of every line."""
    start = 0
    for end in [i for i, byte in enumerate(data) if byte == ord("\n")]:
        yield data[: (start + end) // 2]
        yield data[:end]
        start = end + 1


def _flips(data: bytes) -> Iterator[bytes]:
    """One bit flipped in each byte (bit ``i % 8`` of byte ``i``)."""
    for i in range(len(data)):
        yield data[:i] + bytes([data[i] ^ (1 << (i % 8))]) + data[i + 1 :]


HUGE = 100_000


def _huge_xml(data: str) -> Iterator[str]:
    big = "x" * HUGE

    def at(old: str, new: str) -> str:
        return variant(old, new, data)

    yield at("<batching>", f"<{big}>")
    yield at("<batching>", f"<batching {big}='1'>")
    yield at(' name="', f' name="{big}')
    yield at(' host="', f' host="{big}')
    yield at(' value="', f' value="{"9" * HUGE}')
    yield at(' value="', f' value="{"0" * HUGE}')
    yield at("<batching>", f"<batching>{big}")
    yield at("<batching>", f"<batching><![CDATA[{big}]]>")
    yield at("<batching>", f"<!-- {big} --><batching>")
    yield at("<batching>", f"<?pi {big}?><batching>")
    yield at("<batching>", " " * HUGE + "<batching>")
    yield at("<batching>", "<batching>" + "\n" * HUGE)
    yield at(' name="', ' name="a&#10;b')


def _huge_toml(data: str) -> Iterator[str]:
    big = "x" * HUGE
    yield big + " = 1\n" + data
    yield f'"{big}" = 1\n' + data
    yield f"{'a.' * 31}{big} = 1\n" + data
    yield f"x = '{big}'\n" + data
    yield f'x = """{big}\n{big}"""\n' + data
    yield f"# {big}\n" + data
    escapes = "\\\\" * (HUGE // 2)  # backslashes, escaped: a pattern that backtracks keeps state for each
    yield f'x = "{escapes}"\n' + data
    yield f'x = """{escapes}"""\n' + data
    yield "\n" * HUGE + data
    for number in ("9" * HUGE, "1." + "9" * HUGE, "0x" + "f" * HUGE, "1e" + "9" * HUGE, "1_" * HUGE + "1"):
        yield f"x = {number}\n" + data
    yield "x = [" + "1," * (HUGE // 10) + "]\n" + data
    yield data.replace("[batching]", f'[batching]\nmessage_max_bytes = "{"9" * HUGE}"', 1)
    yield data.replace("[batching]", f'[batching.named_configs."{big}"]\ntime = 1\n[batching]', 1)
    yield data.replace("[batching]", '[batching.named_configs."a\\nb"]\ntime = 0\n[batching]', 1)


ENCODINGS: list[Callable[[str], bytes]] = [
    lambda text: text.encode("utf-16"),
    lambda text: b"\xef\xbb\xbf" + text.encode(),
    lambda text: text.replace("b1", "b\u00e9").encode("latin-1"),
    lambda text: text.replace("b1", "b\u00e9").encode("utf-8"),
    lambda text: text.encode()[:200] + b"\x00" + text.encode()[200:],
    lambda text: text.encode()[:200] + b"\xed\xa0\x80" + text.encode()[200:],  # a surrogate, not UTF-8
    lambda text: text.encode()[:200] + b"\xff\xfe" + text.encode()[200:],
    lambda text: text.replace("\n", "\r").encode(),
]


def _damaged(name: str, data: bytes) -> Iterator[bytes]:
    yield from _cuts(data)
    yield from _flips(data)
    text = data.decode()
    for make in (_huge_xml, _huge_toml):
        if (make is _huge_xml) == name.endswith(".xml"):
            yield from (huge.encode() for huge in make(text))
    yield from (encode(text) for encode in ENCODINGS)
    deep = nested(100_000) if name.endswith(".xml") else "x = " + "[" * 100_000
    yield deep.encode()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "load", "data"), BASES, ids=[b[0] for b in BASES])
def test_every_damaged_file_ends_in_a_config_or_one_line(name: str, load: Loader, data: bytes) -> None:
    assert outcome(load, data) == "loaded"
    seen = 0
    for damaged in _damaged(name, data):
        result, peak = traced(load, damaged) if len(damaged) > HUGE else (outcome(load, damaged), 0)
        one_line = result.startswith("f") and "\n" not in result and len(result) < 600
        assert result == "loaded" or one_line, f"{result[:300]}… ({len(result)} characters)"
        assert peak < 1 * MIB + 8 * len(damaged), f"{peak / MIB:.0f} MiB for {len(damaged) / MIB:.1f} MiB"
        seen += 1
    assert seen > len(data)


def test_a_damaged_file_is_named_by_its_path(tmp_path: Path) -> None:
    """Through the daemon's own reader (suffix or content decides the format), with the path in the one line."""
    for suffix, data in ((".xml", nested(40_000).encode()), (".toml", b"x = " + b"[" * 100_000), ("", b"\xff\xfe<")):
        path = tmp_path / f"bruce{suffix}"
        path.write_bytes(data)
        with pytest.raises(ConfigError) as caught:
            load_config_file(path)
        assert str(caught.value).startswith(f"{path}") and "\n" not in str(caught.value)
