"""The token stage's syntactic closure: a kept word keeps its head up to the root, a kept preposition its object.

QA s32 (token stage on, shipped model): "… up 11% year over year and above the top end of our guidance range of $1.17
billion …" read "… up 11% year guidance range of $1.17 billion …", "estimated between EUR 65,000 and EUR 80,000"
read "estimated EUR 65,000 and EUR 80,000", "per housing set" read "per housing", "an HbA1c value outside the
permitted range" read "value outside", "Units with serial numbers above …" read "Units serial numbers above …".
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odcf.document import Document, Segment, Source
from odcf.plan.model import Plan
from odcf.training.metrics import closed, select_global, select_global_tokens

TINY = str(Path(__file__).resolve().parents[1] / "fixtures" / "tiny_token_classifier")


class _Tok:
    """A spaCy token as the token stage reads one (a mini parse for tests without the parser)."""

    def __init__(self, doc: list[_Tok], i: int, idx: int, text: str, dep: str, head: int) -> None:
        self.doc, self.i, self.idx, self.text, self.dep_, self._head = doc, i, idx, text, dep, head
        self.lower_ = text.lower()
        self.is_punct = not any(c.isalnum() for c in text)

    @property
    def head(self) -> _Tok:
        return self.doc[self._head]

    @property
    def children(self) -> list[_Tok]:
        return [t for t in self.doc if t._head == self.i and t.i != self.i]


def mini_parse(text: str, arcs: list[tuple[str, int]]) -> list[_Tok]:
    """Tokens of *text* (its whitespace-separated words, a final "." split off) with (dep, head index) *arcs*."""
    doc: list[_Tok] = []
    pieces = [(m.start(), m.group(0)) for m in re.finditer(r"[^\s.]+|\.", text)]
    assert len(pieces) == len(arcs), [p for _, p in pieces]
    for i, ((idx, piece), (dep, head)) in enumerate(zip(pieces, arcs)):
        doc.append(_Tok(doc, i, idx, piece, dep, head))
    return doc


UNITS = "Units with serial numbers above 2409 were produced after the defect was corrected."
#: Units<nsubjpass with<prep serial<amod numbers<pobj above<prep 2409<pobj were<auxpass produced<ROOT
#: after<mark the<det defect<nsubjpass was<auxpass corrected<advcl .<punct
UNITS_ARCS = [("nsubjpass", 7), ("prep", 0), ("amod", 3), ("pobj", 1), ("prep", 3), ("pobj", 4), ("auxpass", 7),
              ("ROOT", 7), ("mark", 12), ("det", 10), ("nsubjpass", 12), ("auxpass", 12), ("advcl", 7), ("punct", 7)]


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def test_a_word_needs_its_head_and_a_preposition_its_object() -> None:
    from odcf.stages.compress import syntax_needs

    needs = syntax_needs(_words(UNITS), mini_parse(UNITS, UNITS_ARCS))
    w = UNITS.split()
    named = {w[i]: sorted(w[j] for j in js) for i, js in enumerate(needs)}
    assert named["numbers"] == ["with"]                   # its head; "serial" it does not need
    assert named["with"] == ["Units", "numbers"]          # its head, and its object
    assert named["2409"] == ["above"]
    assert named["produced"] == ["Units"]                 # the root needs its subject; "corrected." (a full stop) not
    assert named["corrected."] == ["defect", "produced"]  # its subject and its head
    # followed on, "2409" keeps the chain up to the root, and no more
    keep = closed(np.array([x == "2409" for x in w]), needs)
    assert [x for x, k in zip(w, keep) if k] == ["Units", "with", "numbers", "above", "2409", "produced"]


def test_a_conjunct_needs_the_and_or_or_that_joins_it() -> None:
    from odcf.stages.compress import syntax_needs

    text = "Costs are estimated between EUR 65,000 and EUR 80,000."
    arcs = [("nsubjpass", 2), ("auxpass", 2), ("ROOT", 2), ("prep", 2), ("pobj", 3), ("nummod", 4), ("cc", 4),
            ("conj", 4), ("nummod", 7), ("punct", 2)]
    needs = syntax_needs(_words(text), mini_parse(text, arcs))
    w = text.split()
    keep = closed(np.array([x.startswith("80,000") for x in w]), needs)
    assert [x for x, k in zip(w, keep) if k] == ["Costs", "estimated", "between", "EUR", "and", "EUR", "80,000."]


def test_under_a_token_limit_a_word_comes_with_what_it_needs_and_the_limit_holds() -> None:
    p = [np.array([0.2, 0.1, 0.9, 0.3])]
    c = [np.array([1, 3, 1, 1])]
    needs = [[(), (), (1,), ()]]                   # word 2 needs word 1 (3 tokens): 4 together
    assert select_global_tokens(p, c, limit=3, cost_exponent=0).tolist() == [True, False, True, True]
    assert select_global_tokens(p, c, limit=3, cost_exponent=0, needs=needs).tolist() == [True, False, False, True]
    assert select_global_tokens(p, c, limit=4, cost_exponent=0, needs=needs).tolist() == [False, True, True, False]
    # a forced word's closure is forced (and charged)
    forced = [np.array([False, False, True, False])]
    assert select_global_tokens(p, c, limit=4, cost_exponent=0, needs=needs, forced=forced).tolist() == [
        False, True, True, False]
    # rate mode: the same rule on word counts
    assert select_global(p, rate=0.5, needs=needs).tolist() == [False, True, True, False]
    assert select_global(p, rate=0.25, needs=needs).tolist() == [False, False, False, True]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.integers(1, 4), st.integers(-1, 11)), min_size=1, max_size=12),
       st.integers(0, 30))
def test_the_choice_is_closed_and_within_the_limit(rows, limit) -> None:
    n = len(rows)
    probs = [np.array([r[0] for r in rows])]
    costs = [np.array([r[1] for r in rows])]
    needs = [[(r[2],) if 0 <= r[2] < n and r[2] != i else () for i, r in enumerate(rows)]]
    keep = select_global_tokens(probs, costs, limit=limit, needs=needs)
    assert int(costs[0][keep].sum()) <= limit
    assert (closed(keep, needs[0]) == keep).all()
    kept = select_global(probs, rate=0.5, needs=needs)
    assert kept.sum() <= round(0.5 * n) and (closed(kept, needs[0]) == kept).all()


def _stage(**kw):
    from odcf.stages.compress import TokenCompressor

    s = TokenCompressor(model_path=TINY, threads=1, skeleton=True, **kw)
    s.warm_up()
    return s


@pytest.fixture
def mini_parser(monkeypatch):
    """The stage's parser replaced by :data:`UNITS_ARCS` for :data:`UNITS` (no spaCy model needed)."""
    from odcf.backends import ner

    def pipe(texts, **_):
        for text in texts:
            assert text == UNITS
            yield mini_parse(text, UNITS_ARCS)
    monkeypatch.setattr(ner, "pipe", pipe)


@pytest.mark.parametrize("mode", [{"rate": 0.2}, {"threshold": 0.99}])
def test_the_stage_keeps_a_kept_phrase_with_the_words_it_hangs_from(mini_parser, mode) -> None:
    seg = Segment(id="a#0", source_id="a", index=0, text=UNITS, original=UNITS, score=0.5)
    out = _stage(**mode)(Document(sources=(Source(id="a", text="-"),), segments=(seg,)), Plan(domain="test"))
    (s,) = out.segments
    # "2409" is kept (a number) with what it measures, "numbers above": it hangs from "with", which hangs from
    # "Units", the subject; before, this read "Units numbers above 2409 were produced."
    assert s.status == "compressed" and s.text.startswith("Units with") and "numbers above 2409" in s.text, s.text
    assert out.trace[-1].data["skeleton"]["needed_words"] >= 1


def test_without_a_parse_the_choice_is_as_before(monkeypatch) -> None:
    from odcf.backends import ner

    def no_parser(texts, **_):
        raise OSError("no spaCy model")
    monkeypatch.setattr(ner, "pipe", no_parser)
    seg = Segment(id="a#0", source_id="a", index=0, text=UNITS, original=UNITS, score=0.5)
    doc = Document(sources=(Source(id="a", text="-"),), segments=(seg,))
    with_off = _stage(rate=0.2)(doc, Plan(domain="test"))
    from odcf.stages.compress import TokenCompressor

    bare = TokenCompressor(model_path=TINY, threads=1, skeleton=False, rate=0.2)
    bare.warm_up()
    assert with_off.segments[0].text == bare(doc, Plan(domain="test")).segments[0].text
    assert "unavailable" in with_off.trace[-1].data["skeleton"]


# -- end to end: the shipped model, the real parser ------------------------------------------------------------------

_ECR = ("# ECR-2291: Gearbox housing bolt torque\n\n"
        "**Cost:** Piece price decreases by EUR 1.85 per housing set. Validation costs are estimated between "
        "EUR 65,000 and EUR 80,000. The supplier has confirmed tooling capacity for the new housing from week 14.\n\n"
        "**Recall:** Units with serial numbers above EK17-2409999 were produced after the defect was corrected and "
        "may be sold. Retailers should check the label on the base of each unit before it is returned to the shelf.\n")


def test_with_the_shipped_model_a_thinned_sentence_keeps_its_range_word_unit_and_preposition() -> None:
    from odcf.compressor import Compressor

    c = Compressor.from_ontology("general", stages={"compress": {"threads": 1}})
    r = c.compress([{"id": "ecr", "text": _ECR}], query="validation cost and serial numbers", budget=95,
                   timings=False)
    assert r.tokens_out <= 95
    listed = {g["id"]: g for s in r.record["sources"] for g in s["segments"]}
    assert any(g["status"] == "compressed" for g in listed.values()), r.text
    for bad in ("estimated EUR", "per housing.", "Units serial", "Units numbers"):
        assert bad not in r.text, (bad, r.text)
    if "65,000" in r.text:
        assert "between EUR 65,000 and EUR 80,000" in r.text, r.text
    if "1.85" in r.text:
        assert "per housing set" in r.text, r.text
    if "EK17-2409999" in r.text:
        assert "with serial numbers above EK17-2409999" in r.text or "with numbers above EK17-2409999" in r.text, r.text


def test_the_record_says_what_a_thinned_segment_lost_and_still_verifies_and_replays(tmp_path) -> None:
    from odcf.cli.main import main

    doc = tmp_path / "ecr.md"
    doc.write_text(_ECR, encoding="utf-8")
    rec, trace, out = tmp_path / "rec.json", tmp_path / "trace.jsonl", tmp_path / "out.txt"
    assert main(["compress", str(doc), "-O", "general", "-q", "validation cost and serial numbers", "-b", "95",
                 "--enable", "compress", "--no-timings", "--record", str(rec), "--trace", str(trace),
                 "--out", str(out)]) == 0
    record = json.loads(rec.read_text(encoding="utf-8"))
    thinned = [g for s in record["sources"] for g in s["segments"] if g["status"] == "compressed"]
    assert thinned, record
    original = _ECR
    for g in thinned:
        # "compress: kept K of N words (P%; budget, token limit L)": not the clamped "rate 0.20"
        assert re.match(r"compress: kept \d+ of \d+ words \(\d+%; budget, token limit \d+\)", g["reason"]), g["reason"]
        assert g["dropped_words"] and all(isinstance(d, str) and d in original for d in g["dropped_words"]), g
        k, n = map(int, re.match(r"compress: kept (\d+) of (\d+)", g["reason"]).groups())
        assert sum(len(d.split()) for d in g["dropped_words"]) == n - k, g
    for g in (g for s in record["sources"] for g in s["segments"] if g["status"] != "compressed"):
        assert "dropped_words" not in g
    assert main(["verify", str(rec), "--text", str(out)]) == 0
    assert main(["replay", str(trace)]) == 0
