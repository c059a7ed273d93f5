"""``bruce-check``: Nagios checks of a Bruce daemon (this one or Bruce C++), judged by the rules of Bruce's monitoring
scripts (``nagios_rules``), with their command lines.

Rules:
- Nagios plugin rules on every path: exactly one line on stdout — ``BRUCE COUNTERS|DISCARDS <STATE> - <text>``, then
  performance data after ``|`` — and the exit status 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. Whatever keeps the
  check from judging is UNKNOWN with a short reason: no daemon, a refused connection, an HTTP status other than 200,
  an answer that is not JSON of the right shape, a bad state file, bad arguments; and a guard around everything turns
  any other exception into UNKNOWN (never a traceback).
- ``-t`` is a deadline for the whole check: name lookup, connection, headers and body (``nagios_http``).
- Bruce's command lines work unchanged: ``counters`` takes ``check_bruce_counters.py``'s options (``-d`` work
  directory, ``-s`` Nagios server, ``-u`` Nagios user, ``-H`` history, ``-i``, ``-w``/``-c``/``-W``/``-C``, ``-b``,
  ``-p``), ``discards`` takes ``check_bruce_discards.py``'s (``-w`` work directory, ``-s``, ``-u``, ``-a``, ``-g``,
  ``-i`` ignored-topics file, ``-b``, ``-p``). Not provided: Bruce's manual mode (``-m``), the discard database
  (``-D``, ``-P``, ``-d``, ``-T``, ``-c``), its test file and ``-v``; options accepted only for Bruce's command lines
  (``-H``, ``-a``, the discards check's ``-w``, ``-s``, ``-u``) change nothing.
- ``counters`` keeps the reports it needs (those of the last ``-i`` seconds and the newest older one, at most
  :data:`MAX_REPORTS`) in a JSON state file: :data:`STATE_NAME` in ``DIR/SERVER`` for ``-d DIR -s SERVER`` (a
  relative ``DIR`` is under the home directory of the Nagios user ``-u``, and what is missing below that home is
  created, as Bruce's script does; an absolute ``DIR`` must exist, ``SERVER`` is created in it), or the file
  ``--state_file`` names (its directory must exist). Nothing else is ever created.
- Bounded: one request, answers over :data:`MAX_BODY` and state or topic files over :data:`MAX_STATE` refused.
  Standard library only; nothing of the daemon.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pwd
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .nagios_http import FetchError, http_get
from .nagios_rules import (
    UNKNOWN,
    CheckError,
    CheckResult,
    is_int,
    judge_counters,
    judge_discards,
    parse_counters,
    status_line,
)

MAX_BODY = 16 * 1024 * 1024
MAX_STATE = 16 * 1024 * 1024
MAX_REPORTS = 1000
MAX_TIMEOUT = 3600.0
STATE_NAME = "bruce-check-counters.json"
"""The state file's name in Bruce's work directory (beside the counter files Bruce's script left, never read)."""


class BadArguments(Exception):
    """Bad arguments (UNKNOWN)."""


def fetch_json(args: argparse.Namespace, path: str) -> dict[str, Any]:
    """``path`` from the daemon as a JSON object, within ``-t`` seconds; UNKNOWN when it cannot be had."""
    where = f"http://{args.host_for_url}:{args.bruce_status_port}{path}"
    try:
        body = http_get(args.bruce_host, args.bruce_status_port, path, timeout=args.timeout, limit=MAX_BODY)
    except FetchError as e:
        raise CheckError(f"cannot read {where}: {e}") from None
    try:
        data = json.loads(body)
    except RecursionError:
        raise CheckError(f"{where} is not JSON bruce-check reads: nested too deep") from None
    except ValueError as e:
        raise CheckError(f"{where} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise CheckError(f"{where} is not a JSON object")
    return data


def state_path(args: argparse.Namespace) -> Path:
    """Where the counters check keeps its reports (module rules); the work directory is made as Bruce's script
    makes it."""
    if args.state_file is not None:
        path = Path(args.state_file)
        if not path.parent.is_dir():
            raise CheckError(f"the directory of the state file {path} does not exist")
        return path
    work = Path(args.work_dir)
    if work.is_absolute():
        if not work.is_dir():
            raise CheckError(f"the work directory {work} (-d) does not exist")
    else:
        try:
            home = Path(pwd.getpwnam(args.nagios_user).pw_dir)
        except KeyError:
            raise CheckError(f"no user {args.nagios_user} (-u) to keep the work directory {work} in") from None
        if not home.is_dir():
            raise CheckError(f"the home directory {home} of {args.nagios_user} (-u) does not exist")
        work = home / work
    server: Path = work / args.nagios_server
    try:
        server.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CheckError(f"cannot make the work directory {server}: {e.strerror or e}") from e
    return server / STATE_NAME


def load_state(path: Path) -> list[dict[str, Any]]:
    """The reports kept by earlier runs, oldest first (none when the file does not exist yet), each checked."""
    bad = f"state file {path} (delete it to start again)"
    try:
        with path.open("rb") as f:
            text = f.read(MAX_STATE + 1)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise CheckError(f"state file {path}: {e.strerror or e}") from e
    if len(text) > MAX_STATE:
        raise CheckError(f"{bad}: larger than {MAX_STATE} bytes")
    try:
        reports = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckError(f"{bad}: not JSON") from None
    if not isinstance(reports, list):
        raise CheckError(f"{bad}: not a list of reports")
    for number, report in enumerate(reports, 1):
        if not (isinstance(report, dict) and is_int(report.get("now")) and is_int(report.get("pid"))):
            raise CheckError(f"{bad}: report {number} lacks its integer 'now' and 'pid'")
        counters = report.get("counters")
        if not isinstance(counters, dict) or not all(is_int(v) for v in counters.values()):
            raise CheckError(f"{bad}: report {number} lacks its 'counters' (names and integers)")
    return reports


def save_state(path: Path, reports: list[dict[str, Any]]) -> None:
    """Write the reports atomically (a temporary file renamed over the old one)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    except OSError as e:
        raise CheckError(f"state file {path}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(reports, f)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise CheckError(f"state file {path}: {e.strerror or e}") from e


def _keep(reports: list[dict[str, Any]], now: int, interval: int) -> list[dict[str, Any]]:
    """The reports of the last ``interval`` seconds and the newest older one (what the next run can need)."""
    older = [r for r in reports if r["now"] <= now - interval]
    return (older[-1:] + [r for r in reports if r["now"] > now - interval])[-MAX_REPORTS:]


def check_counters(args: argparse.Namespace) -> CheckResult:
    state = state_path(args)
    now, pid, counters = parse_counters(fetch_json(args, "/counters/json"))
    previous = load_state(state)
    verdict = judge_counters(now, pid, counters, previous, args)
    kept = [r for r in previous if r.get("now") != now]
    save_state(state, _keep([*kept, {"now": now, "pid": pid, "counters": counters}], now, args.interval))
    return verdict


def ignored_topics(args: argparse.Namespace) -> set[str]:
    """The topics whose discards are not a problem: ``--ignore_topic`` and the lines of ``-i FILE``."""
    topics = set(args.ignore_topic)
    if args.ignore_topics_file is not None:
        try:
            with open(args.ignore_topics_file, "rb") as f:
                text = f.read(MAX_STATE + 1)
        except OSError as e:
            raise CheckError(f"the ignored topics file {args.ignore_topics_file} (-i): {e.strerror or e}") from e
        if len(text) > MAX_STATE:
            raise CheckError(f"the ignored topics file {args.ignore_topics_file} is over {MAX_STATE} bytes")
        topics.update(text.decode("utf-8", "replace").splitlines())
    return topics


def check_discards(args: argparse.Namespace) -> CheckResult:
    ignored = ignored_topics(args)
    return judge_discards(fetch_json(args, "/discards/json"), ignored, args.ignore_bad_topics)


# -- the command line --------------------------------------------------------------------------------------------


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1 to 65535)")
    return value


def seconds(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds over 0 and at most {MAX_TIMEOUT:g}")
    return value


def _host(text: str) -> str:
    """A host name or address; an IPv6 address may be written in brackets (``[::1]``)."""
    host = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if not host or any(c in "[]/@ " or not c.isprintable() for c in host):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host name or address")
    return host


def _name(text: str) -> str:
    """One path component (the Nagios server's name)."""
    if not text or text in (".", "..") or "/" in text or "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a name (the Nagios server's, as in Bruce's scripts)")
    return text


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors raise :class:`BadArguments` (main prints them as one UNKNOWN line)."""

    def error(self, message: str) -> NoReturn:
        raise BadArguments(f"{message} (see {self.prog} --help)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bruce-check", description="Nagios checks of a Bruce daemon's status pages.")
    sub = p.add_subparsers(dest="check", metavar="{counters,discards}", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("-b", "--bruce_host", type=_host, default="127.0.0.1", help="status host (127.0.0.1)")
    common.add_argument("-p", "--bruce_status_port", type=port, default=9090, help="status port (9090)")
    common.add_argument(
        "-t", "--timeout", type=seconds, default=10.0, help="seconds for the whole check, at most 3600 (10)"
    )
    common.add_argument("-s", "--nagios_server", metavar="SERVER", type=_name, help="Bruce's: the Nagios server's name")
    common.add_argument("-u", "--nagios_user", metavar="USER", default="nrpe", help="Bruce's: the Nagios user (nrpe)")
    c = sub.add_parser("counters", parents=[common], help="judge /counters/json against the previous report")
    c.add_argument(
        "-d", "--work_dir", metavar="DIR", help="Bruce's: the work directory; the state is kept in DIR/SERVER"
    )
    c.add_argument("--state_file", metavar="FILE", help="the state file (instead of -d and -s)")
    c.add_argument("-w", "--socket_error_warn_threshold", type=count, required=True)
    c.add_argument("-c", "--socket_error_critical_threshold", type=count, required=True)
    c.add_argument("-W", "--msg_count_warn_threshold", type=count, required=True)
    c.add_argument("-C", "--msg_count_critical_threshold", type=count, required=True)
    c.add_argument("-i", "--interval", type=count, default=1200, help="seconds in which metadata must refresh (1200)")
    c.add_argument("-H", "--history", type=count, help="Bruce's: accepted; the state keeps what -i needs")
    d = sub.add_parser("discards", parents=[common], help="judge /discards/json")
    d.add_argument("-w", "--work_dir", metavar="DIR", help="Bruce's: accepted; the discards check keeps no files")
    d.add_argument("-a", "--max_report_age", type=count, help="Bruce's: accepted (it concerns its database)")
    d.add_argument("-g", "--ignore_bad_topics", action="store_true", help="bad-topic discards are not a problem")
    d.add_argument(
        "-i", "--ignore_topics_file", metavar="FILE", help="a file of topics whose discards are ignored, one a line"
    )
    d.add_argument(
        "--ignore_topic", metavar="TOPIC", action="append", default=[], help="a topic whose discards are ignored"
    )
    return p


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    args = parser().parse_args(argv)
    args.host_for_url = f"[{args.bruce_host}]" if ":" in args.bruce_host else args.bruce_host
    if args.check == "counters":
        if args.state_file is None and (args.work_dir is None or args.nagios_server is None):
            given = "-s without -d" if args.nagios_server else "-d without -s" if args.work_dir else "no state"
            raise BadArguments(
                f"{given}: give -d DIR -s SERVER (Bruce's work directory and Nagios server: the state is kept in "
                "DIR/SERVER) or --state_file FILE"
            )
        if args.state_file is not None and args.work_dir is not None:
            raise BadArguments("give -d DIR -s SERVER or --state_file FILE, not both")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one check; print its status line; return the Nagios exit code. Nothing escapes as a traceback."""
    words = list(sys.argv[1:] if argv is None else argv)
    what = next((w.upper() for w in words if w in ("counters", "discards")), "CHECK")
    try:
        args = _arguments(words)
        verdict = check_counters(args) if args.check == "counters" else check_discards(args)
    except BadArguments as e:
        print(status_line(what, UNKNOWN, f"usage: {e}"))
        return UNKNOWN
    except CheckError as e:
        print(status_line(what, UNKNOWN, str(e)))
        return UNKNOWN
    except Exception as e:  # the guard: whatever went wrong, Nagios gets one line and UNKNOWN
        print(status_line(what, UNKNOWN, f"bruce-check failed: {type(e).__name__}: {e}"))
        return UNKNOWN
    print(verdict.line(what, "no problems" if args.check == "counters" else "no discards"))
    return verdict.state


if __name__ == "__main__":
    sys.exit(main())
