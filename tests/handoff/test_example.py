"""The four-agent example of the README runs, and each handoff keeps its promises."""
from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "handoff" / "pipeline.py"


def test_four_agent_example(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("handoff_example", EXAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = {row["role"]: row for row in mod.run(tmp_path)}
    for role in ("researcher", "planner", "writer", "reviewer"):
        assert rows[role]["tokens_out"] <= rows[role]["budget"]
        assert (tmp_path / f"{list(rows).index(role) + 1}-{role}.record.json").is_file()
    assert "r-draft" in rows["planner"]["dropped"]                      # the researcher's draft is forbidden
    assert rows["planner"]["searched_none_found"] == ["open_questions"]
    assert rows["reviewer"]["not_searched"] == ["machine_observations"]
    assert "machine_observations" in rows["reviewer (strict)"]["error"]
    writer = (tmp_path / "3-writer.txt").read_text(encoding="utf-8")
    # the draft is cut to the room left; its constraint sentence (and the citation in it) is kept
    assert "[reasoning truncated: sentences" in writer and "evidence: item policy-eta]" in writer
    assert "(source 2, rows 1-2), not from the triage note" in writer
    planner = (tmp_path / "2-planner.txt").read_text(encoding="utf-8")
    assert "Option B is clearly better" not in planner
