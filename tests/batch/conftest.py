"""Fixtures for batch tests (helpers in :mod:`tests.batch.helpers`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import ONTOLOGY


@pytest.fixture
def ontology(tmp_path: Path) -> str:
    path = tmp_path / "batch_test.yaml"
    path.write_text(ONTOLOGY, encoding="utf-8")
    return str(path)
