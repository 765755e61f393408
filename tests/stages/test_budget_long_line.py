"""A long line with no sentence break: the segmenter cuts it into many parts that go whole (each holds
"not" or "unless"), and the budget must not walk them part × part. Nothing here is timed: the walks
(:func:`odcf.stages.budget._chain`) are counted.

QA: one line of 60k words (420 KB), cut into 350 parts, ran over 300 s in the budget stage (24k words:
92 s); every part walked again the chains of all the others, in every call of ``to_add``.
"""
from __future__ import annotations

import random

import pytest

from odcf.compressor import Compressor
from odcf.stages import budget
from odcf.stages.budget import _Groups


@pytest.fixture
def walks(monkeypatch):
    """Count the chain walks of the budget stage."""
    count = [0]
    chain = budget._chain

    def counting(*args, **kwargs):
        count[0] += 1
        return chain(*args, **kwargs)

    monkeypatch.setattr(budget, "_chain", counting)
    return count


def _cut_sentence(n: int) -> _Groups:
    """The groups of one sentence cut into *n* parts, every one of them holding a marker (they go
    whole), the second one corrected by every later one (a figure repeated in each)."""
    ids = [f"s#{k}" for k in range(n)]
    tiers = {sid: (2, -0.5, k) for k, sid in enumerate(ids)}
    before = {sid: ids[0] for sid in ids[1:]}  # a later part goes only with the first
    whole = dict.fromkeys(ids, tuple(ids))
    return _Groups(before, tiers, whole=whole, corrected_by={ids[1]: tuple(ids[2:])})


@pytest.mark.parametrize("n", [10, 60, 240])
def test_taking_a_part_of_a_sentence_cut_into_n_parts_walks_each_part_once(walks, n):
    groups = _cut_sentence(n)
    for sid in ("s#0", "s#1", f"s#{n // 2}", f"s#{n - 1}"):
        walks[0] = 0
        got = groups.to_add(sid, set())
        assert got == [f"s#{k}" for k in range(n)]  # all of it, the first part first, in order
        assert walks[0] <= n + 1, (sid, walks[0])  # was n × n: every part walked all the parts again
    walks[0] = 0
    assert set(groups.to_add("s#3", {"s#0"})) == set(groups.whole["s#0"])  # with the first part kept
    assert walks[0] <= n + 1


def test_a_long_line_with_no_sentence_break_costs_no_more_walks_than_parts_squared(plan, walks):
    # each candidate the budget offers (fill, refill, the smallest segment's need) takes the whole
    # sentence: the walks grow with calls × parts, no faster (they grew with calls × parts², 1.7M
    # walks for the 70 parts of a 12k-word line)
    rng = random.Random(7)
    words = ["gamma", "invoice", "cap", "delta", "liability", "not", "unless", "alpha", "beta", "£1,500,000"]
    text = " ".join(rng.choice(words) if k % 9 else f"INV-{1000 + k}" for k in range(3000))
    r = Compressor(plan, stages={"rules": False, "fold": False}).compress(text, query="invoice INV-1450", budget=200)
    parts = [s for s in r.document.segments if s.meta.get("cut_parts")]
    n = len(r.document.segments)
    assert n >= 12 and len(parts) == n  # one sentence, cut into parts
    assert walks[0] <= 10 * n * n, (n, walks[0])  # the old walk: about 5 × n³
    # the parts go whole: none is delivered without the others, and the record says what they need
    first = next(s for s in parts if s.meta["cut_part"] == 0)
    assert r.text == "" or all(s.status != "dropped" for s in parts)
    if r.text == "":
        assert "the parts of a sentence that hold a marker go together" in first.reasons[-1]
