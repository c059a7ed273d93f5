"""The front page's spool panel (``--spool_dir``): what the durable spool holds on disk and what its start replayed.

Rules:
- Shown only when the spool's gauges are there (the daemon runs with a spool); empty text otherwise.
- Reads only the spool's gauges and counters (``/metrics``; the spool's set is ``bruce.proxy.spool``); every
  value goes through the page's ``value`` function (provenance attributes, escaping: see
  :mod:`bruce.proxy.status.dashboard`). The oldest age is ``derived:spool_oldest_s`` (``SpoolOldestMs`` in seconds).
- Of the records replayed at start, the batch journal settled some as delivered (not sent again); the others it
  could not vouch for are possible duplicates (each may have been delivered before the crash that left it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["spool_panel"]


def spool_panel(gauges: Mapping[str, float], counter: Callable[[str], int], value: Callable[..., str]) -> str:
    """The panel's HTML section, or "" without a spool. ``counter(name)`` reads a counter, ``value(src, v, fmt)``
    renders one value."""
    if "SpoolBytes" not in gauges:
        return ""

    def g(name: str, fmt: str = "int") -> str:
        return value(f"gauge:{name}", int(gauges.get(name, 0)), fmt)

    def c(name: str) -> str:
        return value(f"counters:{name}", counter(name))

    files = "segment file" if int(gauges.get("SpoolSegments", 0)) == 1 else "segment files"
    oldest = value("derived:spool_oldest_s", gauges.get("SpoolOldestMs", 0) / 1000, "dur")
    replayed = counter("SpoolReplayed")
    duplicates = (
        f"{c('SpoolReplayed')} replayed at start: {c('SpoolSettled')} settled as delivered by the batch journal (not "
        f"sent again), {c('SpoolReplayedPossibleDuplicate')} possible duplicates (they may have been delivered before "
        "the crash that left them)"
        if replayed
        else f"nothing replayed at start ({c('SpoolReplayed')})"
    )
    return f"""    <section class="spool">
      <h2>Spool</h2>
      <table>
        <tbody>
          <tr><th scope="row">on disk</th><td>{g("SpoolBytes", "bytes")} in {g("SpoolSegments")} {files}</td></tr>
          <tr><th scope="row">held</th><td>{g("SpoolPending")} messages not yet delivered, {g("SpoolHeldOnDisk")}
            of them on disk only; the oldest segment holding one is {oldest} old</td></tr>
          <tr><th scope="row">at start</th><td>{duplicates}; {c("SpoolSkippedDone")} skipped as delivered before,
            {c("SpoolCorrupt")} lost to damage</td></tr>
        </tbody>
      </table>
    </section>"""
