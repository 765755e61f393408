"""A source file (a source named ``….py``, ``….ts``, ``….go``) is code throughout: cut in whole lines
into parts, every line delivered byte for byte, and the lines left out counted as ``[CODE_LINES: n]``."""
import re

import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter

LIMITER = '''\
"""Token-bucket rate limiting for the public gateway."""
from __future__ import annotations

import threading
import time

DEFAULT_RATE = 120        # requests per minute
DEFAULT_BURST = 20


class RateLimiter:
    """Per-key token bucket.

    Not safe across processes: each worker has its own buckets, so the
    effective limit is rate * workers.
    """

    def __init__(self, rate: int = DEFAULT_RATE, burst: int = DEFAULT_BURST) -> None:
        self.rate = rate / 60.0
        self.burst = burst
        self._buckets: dict[str, list[float]] = {}   
        self._lock = threading.Lock()

    def allow(self, key: str, cost: float = 1.0) -> bool:
        """Return True if the request may pass, False if it must be rejected (HTTP 429).

        A cost above the burst size is never allowed, whatever the bucket holds.
        """
        if cost > self.burst:
            return False
        now = time.monotonic()
        with self._lock:
            tokens, updated = self._buckets.get(key, [float(self.burst), now])
            tokens = min(self.burst, tokens + (now - updated) * self.rate)
            if tokens < cost:
                return False
            self._buckets[key] = [tokens - cost, now]
            return True

    def _evict(self, now: float) -> None:
        # drop buckets idle for more than 10 minutes; they would be full anyway
        stale = [k for k, b in self._buckets.items() if now - b[1] > 600]
        for k in stale:
            del self._buckets[k]


def parse_limit(spec: str) -> tuple[int, int]:
    """Parse '120/min;burst=20' into (120, 20). Only per-minute limits are supported."""
    rate_part, _, burst_part = spec.partition(";")
    n, _, unit = rate_part.partition("/")
    # TODO: per-second limits
    burst = int(burst_part.split("=", 1)[1]) if burst_part else DEFAULT_BURST
    return int(n), burst
'''


def _follows(out: str, source: str) -> None:
    """Every line of *out* is the next line of *source* (blank lines aside) or a mark counting exactly the
    lines of *source* left out there."""
    lines = source.rstrip("\n").split("\n")
    k = 0
    for line in out.split("\n"):
        mark = re.fullmatch(r"\[CODE_LINES: (\d+)\]", line)
        if mark:
            k += int(mark.group(1))
            continue
        while k < len(lines) and lines[k] != line and not lines[k].strip():
            k += 1
        assert k < len(lines) and lines[k] == line, (line, out)
        k += 1
    assert k == len(lines) or not any(x.strip() for x in lines[k:]), out


@pytest.mark.parametrize("name", ["limiter.py", "src/Limiter.TS", "/srv/app/limiter.go"])
def test_a_source_file_is_cut_in_whole_lines_and_delivered_line_for_line(name):
    # QA: a .py file was cut as prose: its docstrings left open, the comment "# drop buckets idle …;
    # they would be full anyway" cut at its ";", no [CODE_LINES: n] for the lines left out
    c = Compressor.from_ontology("general")
    query = "what does allow() return when cost exceeds burst"
    source = Source(id="s1", origin=name, text=LIMITER) if name.startswith("/") else Source(id=name, text=LIMITER)
    for budget in (40, 80, 160, 320, 2000):
        r = c.compress([source], query=query, budget=budget, annotate=False, timings=False)
        assert {s.kind for s in r.document.segments} == {"code"}, r.document.segments
        _follows(r.text, LIMITER)
        if budget < 320:
            assert "[CODE_LINES: " in r.text, r.text
        if budget >= 160:
            assert "        if cost > self.burst:\n            return False" in r.text, r.text
    assert r.text == LIMITER.rstrip("\n")  # all of it: as it is, trailing spaces, "# TODO" line and all
    segs = Segmenter()(Document.from_sources([source]), Plan(domain="t")).segments
    comment = "        # drop buckets idle for more than 10 minutes; they would be full anyway"
    assert any(comment + "\n" in s.text for s in segs), segs  # with the line below it, never cut at its ";"
    assert all(s.text.startswith(line) for s in segs for line in [s.text.split("\n")[0]])
    assert all(LIMITER.count(s.text.split("\n")[0] + "\n") for s in segs)  # whole lines


def test_a_text_not_named_as_code_is_read_as_before():
    segs = Segmenter()(Document.from_sources([Source(id="notes.txt", text=LIMITER)]), Plan(domain="t")).segments
    assert {s.kind for s in segs} != {"code"}


@pytest.mark.parametrize("annotate", [False, True])
def test_a_source_files_output_compressed_again_stays_as_it_is(annotate):
    # QA: compressed again (the output saved as a .py file), the "[source 1/1] … | fact" header line was
    # read as a line of code, the last part was left out and its [CODE_LINES: n] changed (166 tokens at
    # budget 169); a mark kept as a line counted 1, so at a smaller budget the marks miscounted the lines
    c = Compressor.from_ontology("general")
    query = "what does allow() return when cost exceeds burst"
    for budget in (60, 100, 130, 169, 220, 300):
        first = c.compress([Source(id="limiter.py", text=LIMITER)], query=query, budget=budget, annotate=annotate,
                           timings=False)
        again = c.compress([Source(id="limiter.py", text=first.text)], query=query, budget=budget,
                           annotate=annotate, timings=False)
        if annotate and first.text.startswith("[source "):  # its header line anew (the relevance is the new
            # run's), the body as it was; without it (the part ranked first fit only without it), as it was
            assert again.text.count("[source ") == 1 and again.text.startswith("[source 1/1] limiter.py"), again.text
            assert again.text.split("\n", 1)[1] == first.text.split("\n", 1)[1], (budget, first.text, again.text)
            noise = next(s for s in again.record["stages"] if s["stage"] == "rules")["data"]["sources"]
            assert noise["limiter.py"]["noise"]["odcf_headers"] == 1, noise  # recorded, not cut silently
        else:
            assert again.text == first.text, (budget, first.text, again.text)
    wide = c.compress([Source(id="limiter.py", text=LIMITER)], query=query, budget=220, annotate=False,
                      timings=False).text
    for budget in (60, 100, 130):  # a smaller budget the second time: its marks count the file's lines
        again = c.compress([Source(id="limiter.py", text=wide)], query=query, budget=budget, annotate=False,
                           timings=False).text
        _follows(again, LIMITER)  # "[CODE_LINES: 33]" over allow(), not the 12 lines of the output above it
        assert "[CODE_LINES: " in again and again != wide, again
        if budget >= 100:
            assert "        if cost > self.burst:\n            return False" in again, again
