"""What several benchmarks measure the same way (Linux): CPU seconds of this process and of others, a process's
children, and the kernel's queue length for UNIX datagram sockets. Imported by the scripts next to it
(``python bench/<script>.py`` puts this folder on the path)."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path


def own_cpu_s() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _proc_times_s(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of process ``pid`` so far (from /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    return sum(_proc_times_s(pid))


def proc_sys_s(pid: int) -> float:
    """System (kernel) CPU seconds of process ``pid`` so far."""
    return _proc_times_s(pid)[1]


def child_pids(pid: int) -> list[int]:
    """The PIDs of process ``pid``'s children (of all its threads)."""
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


def max_dgram_qlen() -> int:
    """``net.unix.max_dgram_qlen``: the kernel queues one more datagram than this per UNIX datagram socket."""
    return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text())


def machine() -> dict[str, object]:
    """What the figures were measured on: CPU model and count, Python version, kernel (for the JSON outputs)."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor() or "unknown CPU",
    )
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }
