"""Loopback captures for bruce-wire's tests: tcpdump writes what the clients and tansu exchange on ``lo``.

``Capture(path, ports)`` starts tcpdump on the loopback interface for one TCP port (the broker's), waits until it is
listening, and on ``stop()`` lets it write everything out: it sends one UDP datagram with a unique mark to the first
port (nobody listens there; the filter takes it) and stops tcpdump once the mark is in the file — tcpdump writes
packets in order (``-U``), so everything before the mark is written then. Its kernel buffer is 64 MiB: loopback
segments are 64 KiB and a fast producer fills the default 2 MiB, which would drop packets; a drop fails the capture.
Root (or CAP_NET_RAW) is needed, as in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path


class Capture:
    """tcpdump on loopback, writing ``path`` (pcap) with everything to and from ``ports``."""

    def __init__(self, path: Path, ports: list[int], *, udp_ports: tuple[int, ...] = ()) -> None:
        tcpdump = shutil.which("tcpdump")
        assert tcpdump, "tcpdump is needed (scripts/bootstrap.sh test installs it)"
        self.path = path
        self.mark_port = ports[0]
        terms = [f"tcp port {p}" for p in ports] + [f"udp port {p}" for p in (*udp_ports, self.mark_port)]
        self.log = path.with_suffix(".tcpdump.log")
        self.process = subprocess.Popen(
            [tcpdump, "-i", "lo", "-U", "-s", "0", "-B", "65536", "-w", str(path), " or ".join(terms)],
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("wb"),
        )
        deadline = time.monotonic() + 10
        while b"listening on" not in self.log.read_bytes():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "tcpdump did not start listening"
            time.sleep(0.05)

    def stop(self) -> Path:
        """Stop once the end mark is in the file (at most 20 s from now), then check that the kernel dropped nothing."""
        mark = b"bruce-wire-capture-end-" + os.urandom(8).hex().encode()
        deadline = time.monotonic() + 20
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(mark, ("127.0.0.1", self.mark_port))
        while mark not in _tail(self.path):
            assert time.monotonic() < deadline, "tcpdump did not write the end mark within 20 s"
            assert self.process.poll() is None, self.log.read_text()
            time.sleep(0.05)
        self.process.terminate()
        self.process.wait(timeout=10)
        summary = self.log.read_text()
        assert re.search(r"^0 packets dropped by kernel$", summary, re.MULTILINE), summary
        return self.path


def _tail(path: Path, size: int = 1 << 20) -> bytes:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read()
