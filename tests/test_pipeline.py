import pytest

from odcf.document import Document, Source, TraceEvent
from odcf.errors import StageError
from odcf.pipeline import Pipeline, resolve_stage_options
from odcf.plan.model import Plan
from odcf.stages.base import Stage
from odcf.stages.protect import Protector
from odcf.stages.segment import Segmenter


class NeedsScores(Stage):
    name = "needs"
    requires = frozenset({"scores"})

    def __call__(self, doc, plan):
        return doc


class Vandal(Stage):
    """A lossy stage that breaks every protected span: the guard must undo it."""

    name = "vandal"
    requires = frozenset({"protected"})
    lossy = True

    def __call__(self, doc, plan):
        segs = tuple(s.replace(text=s.text.replace("$", "USD "), status="compressed") for s in doc.segments)
        return doc.with_event(TraceEvent(stage=self.name), segments=segs)


def test_contracts_checked_before_running():
    with pytest.raises(StageError, match="'needs' requires scores"):
        Pipeline([Segmenter(), NeedsScores()])


def test_guard_restores_segments_whose_protected_span_was_altered(plan):
    doc = Document.from_sources([Source(id="a", text="The cap is $5,000. Nothing else here.")])
    out = Pipeline([Segmenter(), Protector(), Vandal()]).run(doc, plan)
    first, second = out.segments
    assert first.text == "The cap is $5,000." and first.status == "verbatim"
    assert any(r.startswith("guard: vandal altered protected span '$5,000'") for r in first.reasons)
    assert second.status == "compressed"  # nothing protected there: the stage's change stands
    guard = [e for e in out.trace if e.stage == "guard"]
    assert guard and guard[0].data["restored"][0]["segment"] == "a#0"


def test_stage_switches_from_ontology_and_api():
    plan = Plan(domain="d", pipeline={"fold": False, "rank": {"query_weight": 3.0}})
    opts = resolve_stage_options(plan)
    assert opts["fold"] is None and opts["rank"] == {"query_weight": 3.0}
    opts = resolve_stage_options(plan, {"fold": True, "rank": False})
    assert opts["fold"] == {} and opts["rank"] is None
    assert resolve_stage_options(plan, {"budget": False})["budget"] == {}  # essential stays on
    with pytest.raises(StageError, match="unknown stage"):
        resolve_stage_options(plan, {"nope": True})


def test_trace_has_one_timed_event_per_stage(plan):
    doc = Document.from_sources([Source(id="a", text="One. Two. Three.")], budget=100)
    p = Pipeline.from_plan(plan, {"rules": False, "fold": False})
    out = p.run(doc, plan)
    stages = [e.stage for e in out.trace]
    assert stages == [s.name for s in p.stages]
    assert all(e.ms is not None and e.tokens_in is not None for e in out.trace)


def test_a_budget_that_is_not_a_positive_integer_is_a_stage_error_before_any_stage_runs(plan):
    import numpy as np

    from odcf.compressor import Compressor

    comp = Compressor(plan, stages={"entities": True})
    for bad in ("100", 1.5, 0, -3, True):
        with pytest.raises(StageError, match="budget must be a positive integer"):
            comp.compress("The fee is 5%. Payment is due in 30 days.", budget=bad)
    assert comp.compress("The fee is 5%. Payment is due in 30 days.", budget=np.int64(200)).record["budget"] == 200
