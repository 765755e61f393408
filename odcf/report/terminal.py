"""Readable terminal tables of a :class:`~odcf.report.analyze.HealthReport`, drawn with ``rich``.

>>> from odcf.report.terminal import print_report
>>> print_report(report)                  # doctest: +SKIP
"""
from __future__ import annotations

from typing import IO, Any

from odcf.report.analyze import HealthReport


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def render_tables(report: HealthReport, *, low_rows: int = 8) -> list[Any]:
    """The report as a list of ``rich`` renderables (tables), in reading order."""
    from rich.table import Table

    tables: list[Any] = []
    head = Table(title=f"odcf health — {report.domain} ({report.unit})", show_header=False)
    head.add_column("what")
    head.add_column("value", justify="right")
    head.add_row("tokens in", str(report.tokens_total))
    head.add_row("tokens delivered", f"{report.tokens_out}" + (f" / budget {report.budget}" if report.budget else "")
                 + (f" ({report.body_tokens} in source bodies)" if report.tokens_out > report.body_tokens else ""))
    head.add_row("role", str(report.role or "default"))
    head.add_row("entity count from", report.entity_source)
    tables.append(head)

    t = Table(title="Tokens per source")
    for col in ("source", "kind", "layer", "tokens", "share", "after rules", "delivered"):
        t.add_column(col, justify="left" if col in ("source", "kind", "layer") else "right")
    for s in report.sources:
        t.add_row(s.origin or s.id, s.kind, s.layer, str(s.tokens), _pct(s.share), str(s.tokens_after_rules),
                  str(s.tokens_out))
    tables.append(t)

    t = Table(title="Tokens per layer")
    for col in ("layer", "sources", "tokens", "share", "delivered"):
        t.add_column(col, justify="left" if col == "layer" else "right")
    for layer in report.layers:
        t.add_row(layer.layer, str(layer.sources), str(layer.tokens), _pct(layer.share), str(layer.tokens_out))
    tables.append(t)

    t = Table(title=f"Low-density regions (< {report.low_density_threshold:g} entities per 100 tokens)")
    for col in ("source", "from", "to", "segments", "tokens", "entities"):
        t.add_column(col, justify="right" if col in ("segments", "tokens", "entities") else "left")
    for r in report.low_density[:low_rows]:
        t.add_row(r.source, r.first, r.last, str(r.segments), str(r.tokens), str(r.entities))
    if len(report.low_density) > low_rows:
        t.caption = f"{len(report.low_density) - low_rows} more regions in --json"
    tables.append(t)

    t = Table(title="Repeated line prefixes")
    for col in ("source", "prefix", "lines", "tokens"):
        t.add_column(col, justify="right" if col in ("lines", "tokens") else "left")
    for p in report.prefixes:
        t.add_row(p.source, repr(p.prefix), str(p.lines), str(p.tokens))
    tables.append(t)

    t = Table(title="Boilerplate lines")
    for col in ("line", "times", "sources", "tokens"):
        t.add_column(col, justify="right" if col in ("times", "tokens") else "left")
    for b in report.boilerplate:
        t.add_row(b.line[:60], str(b.occurrences), str(len(b.sources)), str(b.tokens))
    tables.append(t)

    t = Table(title="Noise")
    for col in ("source", "kind", "count", "tokens saved", "examples"):
        t.add_column(col, justify="right" if col in ("count", "tokens saved") else "left")
    for n in report.noise:
        t.add_row(n.source, n.kind, str(n.count), str(n.tokens), ", ".join(repr(e) for e in n.examples))
    tables.append(t)

    t = Table(title="What each stage saves")
    for col in ("stage", "tokens in", "tokens out", "saved", "of input"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    for s in report.stages:
        t.add_row(s.stage, str(s.tokens_in), str(s.tokens_out), str(s.saved), _pct(s.share))
    tables.append(t)
    return tables


def print_report(report: HealthReport, file: IO[str] | None = None, *, width: int | None = None) -> None:
    """Print the tables to *file* (stdout by default)."""
    from rich.console import Console

    console = Console(file=file, width=width)
    for table in render_tables(report):
        console.print(table)
