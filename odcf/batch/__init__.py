"""Batch jobs: compress every record of a JSON Lines / Parquet corpus, locally or on Ray.

>>> from odcf.batch import BatchConfig, run_batch
>>> s = run_batch("in.jsonl", "out.jsonl", BatchConfig(ontology="general"), workers=2)  # doctest: +SKIP
>>> print("\\n".join(s.lines()))                                                        # doctest: +SKIP

Modules: :mod:`~odcf.batch.io` (reading and atomic writing), :mod:`~odcf.batch.records`
(record validation), :mod:`~odcf.batch.items` (work items, part rows), :mod:`~odcf.batch.worker`
(the per-process compressor), :mod:`~odcf.batch.local` and :mod:`~odcf.batch.ray` (engines),
:mod:`~odcf.batch.parts` (crash safety, resume, assembly), :mod:`~odcf.batch.job` (the driver).
Nothing heavy is imported until a job runs.
"""
from __future__ import annotations

from odcf._lazy import lazy_dir, lazy_getattr

_LAZY = {
    "run_batch": ("odcf.batch.job", "run_batch"),
    "BatchConfig": ("odcf.batch.worker", "BatchConfig"),
    "BatchSummary": ("odcf.batch.summary", "BatchSummary"),
    "BatchIntegrityError": ("odcf.batch.parts", "BatchIntegrityError"),
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = lazy_dir(_LAZY, globals())
