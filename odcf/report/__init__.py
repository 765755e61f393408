"""See what compression did: the health report, the HTML report and terminal tables.

>>> from odcf.report import analyze, render_html
>>> report = analyze(sources, plan, role="writer")                          # doctest: +SKIP
>>> page = render_html(report.result.document, report.result.record, health=report.to_dict())  # doctest: +SKIP

Nothing heavy loads on import; ``rich`` loads only when a table is printed.
"""
from __future__ import annotations

from typing import Any

_LAZY = {
    "analyze": ("odcf.report.analyze", "analyze"),
    "HealthReport": ("odcf.report.analyze", "HealthReport"),
    "render_html": ("odcf.report.html", "render_html"),
    "print_report": ("odcf.report.terminal", "print_report"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'odcf.report' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
