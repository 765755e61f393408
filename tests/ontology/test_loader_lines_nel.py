"""Line numbers count only "\\n", even where YAML also breaks lines (NEL, LS, PS inside a string)."""
from __future__ import annotations

from pathlib import Path

import pytest

from odcf.errors import OntologyError
from odcf.ontology.loader import load_ontology


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
