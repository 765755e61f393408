"""Fixtures for the handoff tests: a small ontology written here (real-data loaders live in
handoff_data.py and skip when ../shared/data is absent)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ONTOLOGY = """\
odcf: 1
domain: handoff_test
description: Airline and restaurant agent handoffs (test fixture).
task:
  goal: Complete the customer's booking change exactly as requested.
concepts:
  - name: booking
    keywords: [reservation, flight, cabin, baggage, refund]
protect:
  anchors:
    - name: order_id
      pattern: '#W\\d{3,}'
    - name: money
      pattern: '\\$\\s?\\d[\\d,]*(?:\\.\\d+)?'
    - name: reservation_id
      pattern: '\\b[A-Z0-9]{6}\\b'
abbreviations:
  MOD: moderate
  5Y: 5 years
  GC: gift card
state:
  task_progress: {type: string, pattern: '^step_\\d+_of_\\d+$'}
  user_preferences: {type: array, items: {type: string}}
  payment: {type: string}
roles:
  executor:
    categories: [task, user_constraints, counterexamples, preconditions]
  writer:
    budget: 900
    optional: [reasoning, history, state]
"""


@pytest.fixture(scope="session")
def ontology_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("ont") / "handoff_test.yaml"
    p.write_text(ONTOLOGY, encoding="utf-8")
    return p


@pytest.fixture(scope="session")
def hplan(ontology_path: Path) -> Any:
    from odcf.plan.compiler import compile_file

    return compile_file(str(ontology_path))
