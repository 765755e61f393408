"""Progress of a batch job: a live bar on a terminal, a log line now and then otherwise.

The bar shows records done, records/s, tokens saved and the ETA (the total is counted before the
job starts). When stderr is not a terminal nothing is drawn: progress goes to the log at INFO
level every ``log_every`` seconds (visible with ``odcf -v``).
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any

logger = logging.getLogger(__name__)


class Progress:
    """Counts records and tokens as parts finish.

    >>> p = Progress(total=10, enabled=False)
    >>> p.update(4, tokens_in=100, tokens_out=40)
    >>> p.done, p.tokens_saved
    (4, 60)
    >>> p.close()
    """

    def __init__(self, total: int, *, already: int = 0, enabled: bool | None = None,
                 log_every: float = 10.0) -> None:
        self.total = total
        self.done = already
        self.tokens_saved = 0
        self._start = time.perf_counter()
        self._first = already
        self._log_every = log_every
        self._last_log = self._start
        self._bar: Any = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            self._bar = _RichBar(total, already)

    @property
    def rate(self) -> float:
        elapsed = time.perf_counter() - self._start
        return (self.done - self._first) / elapsed if elapsed > 0 else 0.0

    def update(self, records: int, *, tokens_in: int = 0, tokens_out: int = 0) -> None:
        self.done += records
        self.tokens_saved += tokens_in - tokens_out
        if self._bar is not None:
            self._bar.update(self.done, self.tokens_saved)
            return
        now = time.perf_counter()
        if now - self._last_log >= self._log_every:
            self._last_log = now
            rate = self.rate
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            logger.info("%d/%d records, %.1f records/s, %d tokens saved, ETA %.0f s",
                        self.done, self.total, rate, self.tokens_saved, eta)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class _RichBar:
    def __init__(self, total: int, already: int) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn,
                                   TimeRemainingColumn)

        self._progress = RichProgress(
            TextColumn("odcf batch"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:.1f} rec/s"),
            TextColumn("{task.fields[saved]:,} tokens saved"),
            TextColumn("ETA"), TimeRemainingColumn(),
            console=Console(stderr=True), transient=False,
        )
        self._task = self._progress.add_task("batch", total=total, completed=already, rate=0.0, saved=0)
        self._start = time.perf_counter()
        self._first = already
        self._progress.start()

    def update(self, done: int, saved: int) -> None:
        elapsed = time.perf_counter() - self._start
        rate = (done - self._first) / elapsed if elapsed > 0 else 0.0
        self._progress.update(self._task, completed=done, rate=rate, saved=saved)

    def close(self) -> None:
        self._progress.stop()
