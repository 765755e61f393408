"""Helpers for batch tests: a tiny ontology (no model-backed stages, so jobs are fast) and
writers for small JSON Lines / Parquet corpora. Every text here is written by the project."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ONTOLOGY = """\
odcf: 1
domain: batch_test
description: Small ontology for batch tests.
language: en
task:
  goal: Keep liability caps, amounts and deadlines.
concepts:
  - name: liability
    keywords: [liability, cap, damages]
  - name: delivery
    keywords: [deliver, delivery, units, deadline]
protect:
  anchors:
    - name: money
      pattern: '\\$\\s?\\d[\\d,]*(?:\\.\\d+)?'
  terms: [gross negligence]
  markers: [shall]
pipeline:          # model-backed stages off: batch tests exercise the job, not the models
  rerank: false
  entities: false
  dedup: false
  verify: false
  compress: false
roles:
  writer:
    budget: 60
    required: [instruction]
    optional: [fact]
"""

SENTENCES = (
    "The supplier shall deliver {n} units by 2024-03-{d:02d}.",
    "Liability is capped at ${n},000 unless gross negligence is proven.",
    "The weather in Paris was pleasant during the negotiation.",
    "Either party may terminate on {d} days' notice.",
    "Lunch was served at noon and coffee afterwards.",
    "Invoices are payable within {d} days of receipt.",
)


def context_for(i: int, sentences: int = 12) -> str:
    """A deterministic, varied context for record *i*."""
    out = []
    for k in range(sentences):
        out.append(SENTENCES[(i + k) % len(SENTENCES)].format(n=100 + 7 * i + k, d=1 + (i + k) % 28))
    return " ".join(out)


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def records(n: int, *, start: int = 0, query: bool = True) -> list[dict[str, Any]]:
    out = []
    for i in range(start, start + n):
        rec: dict[str, Any] = {"id": f"r{i:04d}", "context": context_for(i)}
        if query and i % 2 == 0:
            rec["query"] = "liability cap"
        out.append(rec)
    return out
