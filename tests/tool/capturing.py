"""Loopback captures for bruce-wire's tests: tcpdump writes what the clients and tansu exchange on ``lo``.

``Capture(path, ports)`` starts tcpdump on the loopback interface for one TCP port (the broker's), waits until it is
listening, and on ``stop()`` lets it write everything out. Its kernel buffer is 64 MiB: loopback segments are
64 KiB and a fast producer fills the default 2 MiB, which would drop packets. Root (or CAP_NET_RAW) is needed, as in CI.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path


class Capture:
    """tcpdump on loopback, writing ``path`` (pcap) with everything to and from ``ports``."""

    def __init__(self, path: Path, ports: list[int], *, udp_ports: tuple[int, ...] = ()) -> None:
        tcpdump = shutil.which("tcpdump")
        assert tcpdump, "tcpdump is needed (scripts/bootstrap.sh test installs it)"
        self.path = path
        terms = [f"tcp port {p}" for p in ports] + [f"udp port {p}" for p in udp_ports]
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
        """Stop once the file has stopped growing (tcpdump may still be reading the kernel's buffer on a loaded
        machine), at most 10 s from now."""
        deadline = time.monotonic() + 10
        size, stable_since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = self.path.stat().st_size if self.path.exists() else 0
            if now != size:
                size, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since >= 0.7:
                break
            time.sleep(0.1)
        self.process.terminate()
        self.process.wait(timeout=10)
        return self.path
