"""Plans: the frozen, serializable result of compiling an ontology.

>>> from odcf.plan import compile_file
>>> plan = compile_file("general")
>>> plan.version.startswith("general@")
True

Names load lazily, so importing :mod:`odcf.plan.model` (as every stage does) does not import
the ontology loader.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from odcf._lazy import lazy_dir, lazy_getattr

_LAZY = {
    "Plan": "odcf.plan.model",
    "RoleContract": "odcf.plan.model",
    "RerankQuery": "odcf.plan.model",
    "ProtectionRules": "odcf.plan.model",
    "Anchor": "odcf.plan.model",
    "compile_plan": "odcf.plan.compiler",
    "compile_file": "odcf.plan.compiler",
    "ROLE_PRESETS": "odcf.plan.presets",
    "DEFAULT_CONNECTIVES": "odcf.plan.protection",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from odcf.plan.compiler import compile_file, compile_plan
    from odcf.plan.model import Anchor, Plan, ProtectionRules, RerankQuery, RoleContract
    from odcf.plan.presets import ROLE_PRESETS
    from odcf.plan.protection import DEFAULT_CONNECTIVES


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = lazy_dir(_LAZY, globals())
