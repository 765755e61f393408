"""The examples in the docstrings of the ontology and plan modules run as written."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "odcf.ontology", "odcf.ontology.schema", "odcf.ontology.loader",
    "odcf.plan", "odcf.plan.compiler", "odcf.plan.protection", "odcf.plan.presets",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
