"""The Kafka error-code table: complete, consistent, and in agreement with an independent client's table."""

from __future__ import annotations

import inspect
import re

import kafka.errors as kafka_errors
import pytest

from bruce.wire.errorcodes import BY_CODE, BY_NAME, NONE, ErrorCode, lookup


def test_table_is_contiguous_up_to_current_kafka() -> None:
    assert sorted(BY_CODE) == list(range(-1, 134))
    assert all(BY_CODE[code].code == code for code in BY_CODE)


def test_names_are_unique_upper_snake() -> None:
    assert len(BY_NAME) == len(BY_CODE)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", name) for name in BY_NAME)


@pytest.mark.parametrize(
    ("code", "name", "retriable", "invalid_metadata"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False, False),
        (0, "NONE", False, False),
        (2, "CORRUPT_MESSAGE", True, False),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True, True),
        (5, "LEADER_NOT_AVAILABLE", True, True),
        (6, "NOT_LEADER_OR_FOLLOWER", True, True),
        (7, "REQUEST_TIMED_OUT", True, False),
        (10, "MESSAGE_TOO_LARGE", False, False),
        (17, "INVALID_TOPIC_EXCEPTION", False, False),
        (35, "UNSUPPORTED_VERSION", False, False),
        (56, "KAFKA_STORAGE_ERROR", True, True),
        (74, "FENCED_LEADER_EPOCH", True, True),
        (90, "PRODUCER_FENCED", False, False),
        (100, "UNKNOWN_TOPIC_ID", True, True),
        (120, "TRANSACTION_ABORTABLE", False, False),
        (129, "REBOOTSTRAP_REQUIRED", False, False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True, False),
    ],
)
def test_known_entries(code: int, name: str, retriable: bool, invalid_metadata: bool) -> None:
    assert lookup(code) == ErrorCode(code, name, retriable, invalid_metadata)
    assert BY_NAME[name].code == code


def test_invalid_metadata_codes_are_retriable() -> None:
    assert all(e.retriable for e in BY_CODE.values() if e.invalid_metadata)


def test_unknown_code_gets_an_undocumented_entry() -> None:
    entry = lookup(4242)
    assert entry == ErrorCode(4242, "UNDOCUMENTED", retriable=False, invalid_metadata=False)
    assert str(entry) == "UNDOCUMENTED(4242)"
    assert NONE.ok and not lookup(6).ok


def _kafka_python_table() -> dict[int, type]:
    return {
        cls.errno: cls
        for _, cls in inspect.getmembers(kafka_errors, inspect.isclass)
        if issubclass(cls, kafka_errors.BrokerResponseError) and getattr(cls, "errno", None) is not None
    }


def test_agrees_with_kafka_python_on_names_and_stale_metadata() -> None:
    theirs = _kafka_python_table()
    renamed = {-1, 0, 6, 10, 17, 39}  # kafka-python keeps older names (UNKNOWN, NO_ERROR, NOT_LEADER_FOR_PARTITION...)
    assert len(theirs) > 100
    for code, cls in theirs.items():
        ours = lookup(code)
        if code not in renamed:
            assert ours.name == cls.message, code
        assert ours.invalid_metadata == cls.invalid_metadata, code
