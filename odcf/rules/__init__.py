"""Deterministic text rules used by the ``rules`` and ``fold`` stages.

Each module holds one rule and is a pure function over text, returning the new text and
a JSON-ready report of what it changed:

- :mod:`odcf.rules.html` — HTML page → semantic markdown-like text, chrome dropped.
- :mod:`odcf.rules.jsonmin` — JSON / JSON Lines minification (values unchanged).
- :mod:`odcf.rules.noise` — editor marks, zero-width characters, decorative and OCR-garbage lines.
- :mod:`odcf.rules.tables` — table folding (header + first/last rows + ``[DATA_ROWS: n]``).
- :mod:`odcf.rules.prefixes` — lossless folding of a prefix shared by consecutive lines.
- :mod:`odcf.rules.guard` — "does this text hold something the plan protects?"

The stages in :mod:`odcf.stages.rules` and :mod:`odcf.stages.fold` apply them and record
the reports in the trace.
"""
