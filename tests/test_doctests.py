"""Every ``>>>`` example in the package either runs and prints what it says, or is marked SKIP.

A whole ``pytest --doctest-modules odcf`` once started a full training run (``odcf.training.finetune``'s
module example had no SKIP on its ``train(...)`` line) and failed on examples that name objects they never
build; this walks every module that holds an example so that cannot come back unnoticed.
"""
from __future__ import annotations

import doctest
import importlib
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "odcf"
# Modules that import the training extra (torch, transformers, datasets) at import time.
NEEDS = {"odcf.training.finetune": "torch", "odcf.training.export": "torch"}


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>>" not in path.read_text(encoding="utf-8"):
            continue
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


MODULES = _modules_with_examples()


def test_the_walk_finds_the_modules_with_examples():
    assert "odcf.textutil" in MODULES and "odcf.stages.compress" in MODULES and "odcf.batch.worker" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_run(name, tmp_path, monkeypatch):
    # From an empty folder: an example that builds data or trains (paths like "../shared/data",
    # "runs/compressor") fails at once instead of writing into the checkout.
    monkeypatch.chdir(tmp_path)
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (run doctest.testmod on it)"
