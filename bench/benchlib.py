"""Helpers the benchmark scripts share."""

import contextlib
import fcntl
import subprocess
import sys
import time


def run_or_exit(words):
    """Runs `words`; a failure ends the benchmark with its stderr."""
    result = subprocess.run(words, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(words), result.stderr[-2000:]))
    return result


@contextlib.contextmanager
def held(lock):
    """The file's flock for the duration (nothing without a file)."""
    if not lock:
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def best_seconds_per_step(step, steps, repeat):
    """The best of `repeat` timed runs of `steps` calls step(i), per step."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        best = min(best, time.perf_counter() - start)
    return best / steps
