"""Task ontologies: load, validate (every problem at once, as ``FILE:LINE: key.path: message``)
and list the bundled ones.

>>> from odcf.ontology import load_ontology, list_bundled
>>> "general" in dict(list_bundled())
True
>>> load_ontology("general").domain
'general'
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from odcf._lazy import lazy_dir, lazy_getattr

_LAZY = {
    "Ontology": "odcf.ontology.schema",
    "load_ontology": "odcf.ontology.loader",
    "loads_ontology": "odcf.ontology.loader",
    "resolve_ontology": "odcf.ontology.loader",
    "list_bundled": "odcf.ontology.loader",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from odcf.ontology.loader import list_bundled, load_ontology, loads_ontology, resolve_ontology
    from odcf.ontology.schema import Ontology


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = lazy_dir(_LAZY, globals())
