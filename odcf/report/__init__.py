"""See what compression did: the health report, the HTML report and terminal tables.

>>> from odcf.report import analyze, render_html
>>> report = analyze(sources, plan, role="writer")                          # doctest: +SKIP
>>> page = render_html(report.result.document, report.result.record, health=report.to_dict())  # doctest: +SKIP

Nothing heavy loads on import; ``rich`` loads only when a table is printed.
"""
from __future__ import annotations

from odcf._lazy import lazy_dir, lazy_getattr

_LAZY = {
    "analyze": ("odcf.report.analyze", "analyze"),
    "HealthReport": ("odcf.report.analyze", "HealthReport"),
    "render_html": ("odcf.report.html", "render_html"),
    "print_report": ("odcf.report.terminal", "print_report"),
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
__dir__ = lazy_dir(_LAZY, globals())
