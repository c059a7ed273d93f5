"""A CPU-time sampling profiler for every Python process started with this folder on ``PYTHONPATH`` and
``BRUCE_BENCH_PROFILE`` set to a directory.

``bench/proxy_bench.py --profile DIR`` starts the daemon this way, so its event loop's process and its intake reader
process (which inherits the environment) are both sampled from start to exit. Bench-only: nothing in the package
imports it.

How: ``ITIMER_PROF`` fires every ``BRUCE_BENCH_PROFILE_US`` µs (default 200; the kernel checks it once per tick, so in
practice at most once per tick, 4 ms with HZ=250) of the process's CPU time (user + system), so waiting (``epoll``, a
blocking ``recv``) is never sampled and time the process spends preempted by others is not either; each ``SIGPROF``
records the Python stack (file, function, line per frame). Python runs the handler at the next bytecode boundary, so
the time of a C call (``recv``, ``pickle.loads``, a socket write) is charged to the line that called it; time inside
the event loop's C code (uvloop) is charged to the first instruction of the next callback, which the summary
recognises (``bench/daemon_profile.py``), and a signal that came during a garbage collection is handled in the
collector's ``gc.callbacks`` call at its end (``_on_gc``), so collections show as such. Overhead: one handler run
(tens of µs) per sample, well under 1 % of the CPU.

On a normal exit each process writes ``DIR/<pid>.json``: its ``argv``, CPU seconds, the sampling interval, the
stacks with their sample counts, and the cyclic garbage collector's runs and CPU seconds per generation (timed with
``gc.callbacks``).
"""

import os

_DIR = os.environ.get("BRUCE_BENCH_PROFILE")
if _DIR:
    import atexit
    import gc
    import json
    import signal
    import sys
    import time

    _INTERVAL = int(os.environ.get("BRUCE_BENCH_PROFILE_US", "200")) / 1e6
    _stacks: dict = {}

    def _sample(signum, frame):
        stack = []
        first = True
        while frame is not None:
            code = frame.f_code
            # the innermost frame at its first instructions: the signal came before it started (in C code)
            start = first and frame.f_lasti <= 4
            stack.append((code.co_filename, code.co_name, frame.f_lineno, start))
            first = False
            frame = frame.f_back
        key = tuple(stack)
        _stacks[key] = _stacks.get(key, 0) + 1

    _gc = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}  # generation → [runs, CPU seconds]
    _gc_start = [0.0]

    def _on_gc(phase, info):
        if phase == "start":
            _gc_start[0] = time.thread_time()
        else:
            entry = _gc[info["generation"]]
            entry[0] += 1
            entry[1] += time.thread_time() - _gc_start[0]

    def _dump() -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        times = os.times()
        body = {
            "argv": sys.argv,
            "cpu_s": times.user + times.system,
            "interval_s": _INTERVAL,
            "stacks": [[list(map(list, k)), n] for k, n in _stacks.items()],
            "gc": _gc,
        }
        with open(os.path.join(_DIR, f"{os.getpid()}.json"), "w") as f:
            json.dump(body, f)

    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, _INTERVAL, _INTERVAL)
    gc.callbacks.append(_on_gc)
    atexit.register(_dump)
