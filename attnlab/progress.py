"""The progress line of long loops (training epochs, seeds): 'name  12/100  loss=0.53  elapsed 5s  ETA
1m03s' on stderr, at most about two lines a second, silent with --quiet.
"""
from __future__ import annotations

import sys
import time



class Progress:
    """Progress for long loops: 'name  12/100  loss=0.53  ETA 1m03s' on stderr, at most ~2 lines/s."""

    def __init__(self, total: int, name: str = "", enabled: bool = True, min_interval: float = 0.5):
        self.total, self.name, self.enabled = int(total), name, enabled
        self.min_interval = min_interval
        self.t0 = time.perf_counter()
        self._last = 0.0
        self.i = 0
        self._done_before: int | None = None   # steps finished before this tracker started (a resumed run)

    def resume_at(self, i: int) -> None:
        """Mark the first `i` steps as finished before this tracker started (a resumed loop), printing nothing."""
        self.i = self._done_before = int(i)

    def update(self, i: int | None = None, **stats) -> None:
        self.i = self.i + 1 if i is None else i
        if self._done_before is None:
            # Without resume_at, the first update marks one step finished since t0; a resumed loop starts
            # past step 0, and its rate is taken over the steps run here only.
            self._done_before = max(self.i - 1, 0)
        now = time.perf_counter()
        if not self.enabled or (now - self._last < self.min_interval and self.i < self.total):
            return
        self._last = now
        el = now - self.t0
        eta = el / max(self.i - self._done_before, 1) * (self.total - self.i)
        s = "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items())
        print(f"  {self.name} {self.i}/{self.total}  {s}  elapsed {format_duration(el)}  ETA {format_duration(eta)}",
              file=sys.stderr, flush=True)


def format_duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
