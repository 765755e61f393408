"""Line numbers count the line ends an editor counts ("\\n", "\\r\\n", a lone "\\r"), even where YAML
also breaks lines (NEL, LS, PS inside a string)."""
from __future__ import annotations

from pathlib import Path

import pytest

from odcf.errors import OntologyError
from odcf.ontology.loader import load_ontology, loads_ontology


def test_problem_lines_ignore_yaml_only_line_breaks(tmp_path: Path) -> None:
    # found by the property test: a NEL (U+0085) in a quoted value made every later line one too high
    text = "odcf: 1\ndomain: demo\nx: \"a\u0085b\u2028c\"\ntokenizer: [1]\nconcepts:\n"
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(OntologyError) as info:
        load_ontology(path)
    by_path = {p.path: p.line for p in info.value.problems}
    assert by_path["x"] == 3
    assert by_path["concepts"] == 5 == text.count("\n")


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_problem_lines_are_the_same_whatever_the_line_ends(end: str) -> None:
    # QA: a file with classic Mac line ends (CR only) had every problem at line 1; the CRLF copy was right
    lines = ["# a comment", "odcf: 1", "domain: demo", "concepts:", "  - name: a", "roles:", "  planner:",
             "    budget: 0", "    optional: [facts]", "state:", "  d: {type: strng}", ""]
    with pytest.raises(OntologyError) as info:
        loads_ontology(end.join(lines).encode("utf-8"), source="t.yaml")
    assert [(p.line, p.path) for p in info.value.problems] == [
        (8, "roles.planner.budget"), (9, "roles.planner.optional[0]"), (11, "state.d.type")]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_yaml_and_encoding_errors_count_lone_carriage_returns_too(end: str) -> None:
    for raw, line in ((end.join(["odcf: 1", "domain: demo", "concepts:", "\t- name: a", ""]).encode(), 4),
                      (end.join(["odcf: 1", "domain: demo", "concepts:", "  - name: caf"]).encode() + b"\xe9", 4)):
        with pytest.raises(OntologyError) as info:
            loads_ontology(raw, source="t.yaml")
        assert info.value.problems[0].line == line, str(info.value)
