"""Answers in Bruce C++'s shape for ``bruce-check``'s tests: ``/counters/json`` with ``[file, line]`` locations, the
names Bruce's scripts read and some only Bruce has; ``/discards/json`` as in the second example of Bruce's
status_monitoring.md."""

from __future__ import annotations

import json

from bruce.proxy.status.nagios_rules import READ_COUNTERS


def bruce_cpp_counters(now: int, pid: int = 14246, **values: int) -> str:
    """A /counters/json answer as Bruce C++ writes it: every name the scripts read plus some only Bruce has."""
    names = [*READ_COUNTERS, "SerializeMsg", "RouteSingleMsg", "ConnectorStartRun"]
    counters = [
        {"location": f"[bruce/x.cc, {i + 20}]", "name": n, "value": values.get(n, 0)} for i, n in enumerate(names)
    ]
    return json.dumps({"now": now, "since": 1, "pid": pid, "version": "1.0.6.70.ga324763", "counters": counters})


def bruce_cpp_discards(**report: object) -> str:
    """A /discards/json answer as Bruce C++ writes it (the second example of its status_monitoring.md)."""
    period = {
        "id": 0,
        "start_time": 1408661147,
        "malformed_msg_count": 0,
        "unsupported_api_key_msg_count": 0,
        "unsupported_version_msg_count": 0,
        "bad_topic_msg_count": 0,
        "recent_malformed": [],
        "unsupported_msg_version": [],
        "recent_bad_topic": [],
        "recent_too_long_msg": [],
        "rate_limit_discard": [],
        "discard_topic": [],
        "possible_duplicate_topic": [],
    }
    unfinished = period | report
    answer = {"now": 1408661249, "pid": 17706, "version": "1.0.6.70.ga324763", "interval": 600}
    return json.dumps(answer | {"unfinished_report": unfinished, "finished_report": period | {"id": 1}})
