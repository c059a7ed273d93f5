"""Bruce's value syntax (sizes with k, keywords, booleans) read exactly, and the loaders' promise under arbitrary
input: a valid :class:`Config` or a :class:`ConfigError`, never any other exception."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from xml_samples import VALID_XML

from bruce.proxy.config import Config, ConfigError, load_toml, load_xml, to_toml
from bruce.proxy.config.build import MAX_NUMBER, parse_bool, parse_number

WHITESPACE = st.text(" \t\n\r", max_size=3)


@given(st.integers(0, MAX_NUMBER // 1024), WHITESPACE, WHITESPACE, WHITESPACE, st.sampled_from("kK"))
def test_k_multiplies_by_1024(number: int, before: str, middle: str, after: str, k: str) -> None:
    assert parse_number(f"{before}{number}{middle}{k}{after}", allow_k=True) == number * 1024


@given(st.integers(0, MAX_NUMBER), WHITESPACE, WHITESPACE, st.booleans())
def test_plain_numbers_read_as_written(number: int, before: str, after: str, plus: bool) -> None:
    text = f"{before}{'+' if plus else ''}{number}{after}"
    assert parse_number(text, allow_k=False) == number
    assert parse_number(text, allow_k=True, keyword="disable") == number
    assert parse_number(number, allow_k=False) == number  # TOML integer


@given(st.integers(0, 10**6), st.sampled_from("kK"))
def test_k_is_refused_where_bruce_refuses_it(number: int, k: str) -> None:
    with pytest.raises(ConfigError, match="the k suffix"):
        parse_number(f"{number}{k}", allow_k=False, keyword="disable")


@given(st.sampled_from(["disable", "DISABLE", " Disable ", "disablE\t"]))
def test_keywords_ignore_case_and_space(text: str) -> None:
    assert parse_number(text, allow_k=True, keyword="disable") is None
    with pytest.raises(ConfigError):
        parse_number(text, allow_k=True, keyword="unlimited")


SIZE = re.compile(r"\s*\+?([0-9]+)\s*([kK]?)\s*")


@settings(max_examples=500)
@given(st.lists(st.sampled_from([*"0123456789kK+- \t.xe", "\u0663", "\u0661", "disable"]), max_size=12).map("".join))
@example("k")
@example(" +k ")
@example("1 2")
@example("\u0663")  # a digit, but not an ASCII one
@example("\u0661\u0662k")
def test_size_strings_match_bruces_grammar(text: str) -> None:
    """Bruce: trim, optional k (then trim), then an unsigned decimal; anything else is an error."""
    match = SIZE.fullmatch(text)
    expected = None if match is None else int(match.group(1)) * (1024 if match.group(2) else 1)
    if expected is not None and expected > MAX_NUMBER:
        expected = None
    try:
        got = parse_number(text, allow_k=True)
    except ConfigError:
        got = None
    assert got == expected


def test_non_numbers_are_refused_with_what_is_accepted() -> None:
    with pytest.raises(ConfigError, match=r'^"1\.5" is not valid here: expected a whole number or "disable"$'):
        parse_number("1.5", allow_k=False, keyword="disable")
    with pytest.raises(ConfigError, match=r"^1\.5 is not valid here"):
        parse_number(1.5, allow_k=True)
    with pytest.raises(ConfigError, match=r"^true is not valid here"):
        parse_number(True, allow_k=True)
    with pytest.raises(ConfigError, match="too large"):
        parse_number(str(MAX_NUMBER + 1), allow_k=False)


@pytest.mark.parametrize(("raw", "expected"), [("true", True), (" FALSE ", False), ("True", True), (False, False)])
def test_booleans(raw: object, expected: bool) -> None:
    assert parse_bool(raw) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "", 1, None])
def test_non_booleans(raw: object) -> None:
    with pytest.raises(ConfigError, match='expected "true" or "false"'):
        parse_bool(raw)


# -- the loaders never fail any other way ---------------------------------------------------------------------------


def _config_or_config_error(load, data) -> None:
    try:
        assert isinstance(load(data), Config)
    except ConfigError as error:
        assert str(error)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_as_xml(data: bytes) -> None:
    _config_or_config_error(load_xml, data)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_bruce_xml(data: st.DataObject) -> None:
    text = VALID_XML.encode()
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        text = text[:at] + data.draw(st.binary(max_size=3)) + text[at + data.draw(st.integers(0, 3)) :]
    _config_or_config_error(load_xml, text)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_toml(data: st.DataObject) -> None:
    text = to_toml(load_xml(VALID_XML))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        text = text[:at] + data.draw(st.text(max_size=3)) + text[at + data.draw(st.integers(0, 3)) :]
    _config_or_config_error(load_toml, text)
