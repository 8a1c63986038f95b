"""Wall time and peak memory of one command, measured the same way for homalign and its peers.

``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` is the maximum over every child a process has
waited for, so each command runs under its own intermediate Python, which reports the wall time
and the peak resident set of that command's largest process (process start-up included).
"""

from __future__ import annotations

import subprocess
import sys

_PROBE = ("import resource, subprocess, sys, time; t = time.perf_counter();"
          " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
          " print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)"
          ".ru_maxrss / 1024)")


def run_measured(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` (its stdout discarded); return (wall seconds, peak RSS in MiB)."""
    r = subprocess.run([sys.executable, "-c", _PROBE, *argv], check=True, capture_output=True,
                       text=True)
    seconds, rss = map(float, r.stdout.split()[-2:])
    return seconds, rss
