"""The progress line of long loops (training epochs, seeds, reference pieces): 'name  12/100  loss=0.53
elapsed 5s  ETA 1m03s' on stderr, silent with --quiet.  On a terminal at most about two lines a second,
the last step included; where stderr is not a terminal (a log file, a pipe, CI) quiet: one line a minute
(HEARTBEAT) for work that runs that long, so that a log shows it alive, and the last step only where such a
line was written.
"""
from __future__ import annotations

import sys
import time

#: seconds between two progress lines where stderr is not a terminal
HEARTBEAT = 60.0


def is_tty(stream=None) -> bool:
    """Whether `stream` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):       # (a closed or foreign stream)
        return False


class Progress:
    """Progress for long loops: 'name  12/100  loss=0.53  ETA 1m03s' on stderr, at most ~2 lines/s on a
    terminal, one a minute elsewhere (`min_interval` given: that interval wherever it goes)."""

    def __init__(self, total: int, name: str = "", enabled: bool = True, min_interval: float | None = None):
        self.total, self.name, self.enabled = int(total), name, enabled
        self.tty = is_tty()
        self.min_interval = (0.5 if self.tty else HEARTBEAT) if min_interval is None else min_interval
        self._shown = False
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
        if not self.enabled:
            return
        last = self.i >= self.total
        if self.tty or self.min_interval < HEARTBEAT:      # a terminal, or an interval asked for
            if not last and now - self._last < self.min_interval:
                return
        elif (not self._shown) if last else (now - (self._last or self.t0) < self.min_interval):
            return                                          # off a terminal: a heartbeat, and the end after one
        self._last, self._shown = now, True
        el = now - self.t0
        eta = el / max(self.i - self._done_before, 1) * (self.total - self.i)
        s = "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in stats.items())
        print(f"  {self.name} {self.i}/{self.total}  {s}  elapsed {format_duration(el)}  ETA {format_duration(eta)}",
              file=sys.stderr, flush=True)


def format_duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
