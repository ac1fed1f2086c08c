"""Resident memory of this process: current, peak (high-water mark), and a sampler.

The peak is the kernel's VmHWM (/proc/self/status), or `ru_maxrss` where /proc is missing;
it never goes down, so a bench that wants the peak of one phase samples the current RSS in a
thread (`RssSampler`) instead.
"""

from __future__ import annotations

import resource
import sys
import threading
from pathlib import Path
from types import TracebackType


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_bytes() -> int:
    """The process's peak resident set size so far."""
    kb = _status_kb("VmHWM")
    if kb is not None:
        return kb * 1024
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(ru if sys.platform == "darwin" else ru * 1024)  # bytes on macOS, KiB on Linux


def rss_bytes() -> int:
    """The process's resident set size now (the peak where /proc is missing)."""
    kb = _status_kb("VmRSS")
    return kb * 1024 if kb is not None else peak_rss_bytes()


class RssSampler:
    """Samples the RSS every `interval_s` in a daemon thread; `.peak` and `.start` in bytes."""

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self.start = self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hatkit-rss", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, rss_bytes())

    @property
    def growth(self) -> int:
        """Peak minus the RSS when sampling started."""
        return self.peak - self.start

    def __enter__(self) -> RssSampler:
        self.start = self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())
