"""Fixtures for the report tests: a small ontology file and the stage switches this build supports."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ONTOLOGY_YAML = r"""odcf: 1
domain: report_test
description: Review contracts for liability and termination.
language: en
task:
  goal: Find liability caps and termination notice.
concepts:
  - name: liability
    keywords: [liability, cap, damages]
  - name: termination
    keywords: [terminate, termination, notice]
protect:
  anchors:
    - name: money
      pattern: '\$\s?\d[\d,]*(?:\.\d+)?'
    - name: clause
      pattern: '(?:Section|Clause)\s*\d+(?:\.\d+)*'
  terms: [gross negligence, force majeure]
  connectives: [not, unless, despite]
roles:
  writer:
    budget: 60
    required: [instruction]
    optional: [fact]
    forbidden: [reasoning]
"""


def missing_stage_switches() -> dict[str, bool]:
    """Default-on stages whose module is absent from this build, switched off (the rest run as configured)."""
    return {name: False for name in ("rules", "fold")
            if importlib.util.find_spec(f"odcf.stages.{name}") is None}


@pytest.fixture
def stage_switches() -> dict[str, bool]:
    return missing_stage_switches()


@pytest.fixture
def ontology_file(tmp_path: Path) -> Path:
    path = tmp_path / "report_test.yaml"
    path.write_text(ONTOLOGY_YAML, encoding="utf-8")
    return path


SHARED_DATA = Path(os.environ.get("ODCF_DATA", Path(__file__).resolve().parents[2].parent / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data (or $ODCF_DATA); skips the test when the data is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path
