"""odcf — ontology-driven context compression for LLM agents.

The public face is lazy: importing :mod:`odcf` loads neither onnxruntime, spaCy,
torch nor ray. Heavy pieces load when a pipeline warms up.

>>> import odcf
>>> c = odcf.Compressor.from_ontology("general")          # doctest: +SKIP
>>> r = c.compress(["Liability is capped at 5% of the fees."], budget=50)  # doctest: +SKIP
>>> r.text, r.tokens_out                                  # doctest: +SKIP
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from odcf._lazy import lazy_dir, lazy_getattr

__version__ = "0.1.0"

_LAZY = {
    "Compressor": ("odcf.compressor", "Compressor"),
    "CompressionResult": ("odcf.compressor", "CompressionResult"),
    "load_ontology": ("odcf.ontology.loader", "load_ontology"),
    "compile_plan": ("odcf.plan.compiler", "compile_plan"),
    "Document": ("odcf.document", "Document"),
    "Source": ("odcf.document", "Source"),
    "Segment": ("odcf.document", "Segment"),
    "Plan": ("odcf.plan.model", "Plan"),
    # the errors odcf raises on purpose, for a caller to catch by name (odcf.errors holds them all)
    "OdcfError": ("odcf.errors", "OdcfError"),
    "OntologyError": ("odcf.errors", "OntologyError"),
    "PlanError": ("odcf.errors", "PlanError"),
    "InvalidPlanError": ("odcf.errors", "InvalidPlanError"),
    "StageError": ("odcf.errors", "StageError"),
    "BudgetError": ("odcf.errors", "BudgetError"),
    "ExportParityError": ("odcf.errors", "ExportParityError"),
    "InputError": ("odcf.errors", "InputError"),
    "SourceError": ("odcf.errors", "SourceError"),
    "HandoffError": ("odcf.handoff.errors", "HandoffError"),
}

__all__ = sorted(_LAZY) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from odcf.compressor import CompressionResult, Compressor
    from odcf.document import Document, Segment, Source
    from odcf.errors import (
        BudgetError,
        ExportParityError,
        InputError,
        InvalidPlanError,
        OdcfError,
        OntologyError,
        PlanError,
        SourceError,
        StageError,
    )
    from odcf.handoff.errors import HandoffError
    from odcf.ontology.loader import load_ontology
    from odcf.plan.compiler import compile_plan
    from odcf.plan.model import Plan


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = lazy_dir(_LAZY, globals())
