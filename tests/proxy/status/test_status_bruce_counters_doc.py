"""docs/bruce-counters.md lists exactly the catalogue: every served name (in the pages' order, with its meaning) and
every name marked not served (with the reason), none twice; and the catalogue holds every counter name Bruce's
sources define (the union over its releases), so a dropped name fails."""

from __future__ import annotations

import re
from pathlib import Path

from bruce.producer.counters import Counters
from bruce.proxy.status.bruce_counters import ABSENT, SERVED, bruce_counters

DOC = Path(__file__).resolve().parents[3] / "docs" / "bruce-counters.md"

# Counter names defined in Bruce's sources, over all its releases: 162 served + 114 not served.
BRUCE_NAMES = 276


def rows(section: str) -> list[tuple[str, str]]:
    text = DOC.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"^\| `(\w+)` \| (.*) \|$", text[start : end if end > 0 else None], re.M)


def test_served_names_and_meanings() -> None:
    assert rows("Served") == [(name, entry.meaning) for name, entry in SERVED.items()]


def test_names_not_served_and_why() -> None:
    assert rows("Not served") == list(ABSENT.items())
    assert not set(SERVED) & set(ABSENT)


def test_every_name_bruces_scripts_read_is_served() -> None:
    from bruce.proxy.status.nagios_rules import READ_COUNTERS

    assert set(READ_COUNTERS) <= set(SERVED)


# The socket errors summed by check_bruce_counters.py of Bruce's release with a send and a receive thread per broker
# (its Nagios script of that release: a name it does not find is UNKNOWN), and by its latest release.
SPLIT_RELEASE_SOCKET_ERRORS = (
    "ConnectFailOnTryGetMetadata",
    "MetadataResponseRead1LostTcpConnection",
    "MetadataResponseRead1TimedOut",
    "MetadataResponseRead2LostTcpConnection",
    "MetadataResponseRead2TimedOut",
    "MetadataResponseRead2UnexpectedEnd",
    "ReadMetadataResponse2Fail",
    "ReceiverSocketBrokerClose",
    "ReceiverSocketError",
    "ReceiverSocketTimeout",
    "SenderConnectFail",
    "SenderSocketError",
    "SenderSocketTimeout",
    "SendMetadataRequestFail",
    "SendMetadataRequestLostTcpConnection",
    "SendMetadataRequestTimedOut",
)


def test_the_split_thread_releases_script_finds_its_names_and_sums_each_failure_once() -> None:
    """That release's script reads each side of a lost connection and of a timeout and adds them: both sides are
    served, and its sum equals the latest release's (each failure once, not twice)."""
    from bruce.proxy.status.nagios_rules import SOCKET_ERROR_COUNTERS

    assert set(SPLIT_RELEASE_SOCKET_ERRORS) <= set(SERVED)
    daemon = Counters()
    for name, n in (
        ("ConnectFailOnTryGetMetadata", 1),
        ("ConnectorConnectFail", 2),
        ("ConnectorSocketError", 3),
        ("ConnectorSocketBrokerClose", 4),
        ("ConnectorSocketTimeout", 5),
        ("ConnectorRequestTimeout", 6),
    ):
        daemon.inc(name, n)
    served = dict(bruce_counters([("bruce.producer", daemon)]))
    assert sum(served[n] for n in SPLIT_RELEASE_SOCKET_ERRORS) == sum(served[n] for n in SOCKET_ERROR_COUNTERS) == 21
    assert (served["ReceiverSocketError"], served["SenderSocketError"]) == (3, 0)
    assert (served["ReceiverSocketTimeout"], served["SenderSocketTimeout"]) == (11, 0)


def test_catalogue_holds_every_bruce_name() -> None:
    assert (len(SERVED), len(ABSENT)) == (162, 114)
    assert len(SERVED) + len(ABSENT) == BRUCE_NAMES
    text = DOC.read_text()
    assert f"{BRUCE_NAMES} in all: {len(SERVED)} served, {len(ABSENT)} not served" in text


def test_renamed_names_serve_the_same_value() -> None:
    """An old name Bruce renamed is served with exactly the terms of the name it became."""
    for old, new in {
        "InputThreadDiscardMsgMalformed": "InputAgentDiscardMsgMalformed",
        "SenderConnectFail": "ConnectorConnectFail",
        "ReceiveThreadGotDiscardAck": "ConnectorGotDiscardAck",
        "UnixDgInputAgentGotOkMsg": "InputThreadGotOkMsg",
    }.items():
        assert SERVED[old].terms == SERVED[new].terms != ()
