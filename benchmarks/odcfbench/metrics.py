"""Retention figures, computed by the harness on every system's output (definitions in tasks.py).

``score(example, output)`` returns ``{metric: value}``; a value is a float in [0, 1] averaged over
examples, or a ``(kept, total)`` pair pooled over examples.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from odcfbench.text import norm_ws, split_sentences, words

_STOP = frozenset(
    """the and for are was were been being this that these those there here what which who whom whose when
    where why how does did done have has had having you your they them their not nor than too very can will
    just should would could may might must shall into over under about after before between through during
    above below out off again further then once all any both each few more most other some such only own same
    also but because until while yeah okay yes well like think know mean going get got really just gonna
    right one two thing things lot said say""".split()
)
# odcf marks each delivered block with a header line; JSON validity is judged on the content.
_HEADER_RE = re.compile(r"^\[source \d+/\d+\] .*$")


def _has_any(out_low: str, answers: list[str]) -> float:
    return float(any(norm_ws(a) in out_low for a in answers if a.strip()))


def _ev_words(texts: list[str]) -> set[str]:
    return {w for t in texts for w in words(t) if len(w) >= 3 and w not in _STOP and not w.isdigit()}


def _json_ok(out: str) -> float:
    body = "\n".join(line for line in out.splitlines() if not _HEADER_RE.match(line)).strip()
    for cand in (out.strip(), body):
        try:
            json.loads(cand)
            return 1.0
        except ValueError:
            continue
    return 0.0


def _row_kept(lines: list[str], row: list[str]) -> bool:
    for line in lines:
        pos = 0
        for cell in row:
            j = line.find(cell.lower(), pos)
            if j < 0:
                break
            pos = j + len(cell)
        else:
            return True
    return False


def score(ex: dict[str, Any], out: str) -> dict[str, Any]:
    g = ex["gold"]
    task = ex["task"]
    low = norm_ws(out)
    if task in ("nq_multi", "nq_single", "cmrc"):
        return {"answer_kept": _has_any(low, g["answers"])}
    if task == "kv":
        return {"pair_kept": float(g["key"] in out and g["value"] in out)}
    if task == "qmsum":
        distinct = _ev_words(g["evidence"]) - _ev_words(g["rest"])
        ow = set(words(out))
        ev_sents = [norm_ws(s) for t in g["evidence"] for s in split_sentences(t) if len(s.split()) >= 5]
        return {
            "evidence_word_recall": (len(distinct & ow) / len(distinct)) if distinct else 1.0,
            "evidence_sent_recall": (sum(1 for s in ev_sents if s in low) / len(ev_sents)) if ev_sents else 1.0,
        }
    if task == "wnut":
        ents = g["entities"]
        return {"entity_recall": (sum(1 for e in ents if norm_ws(e) in low), len(ents))}
    if task == "agent_traj":
        ids = g["ids"]
        return {"id_recall": sum(1 for i in ids if i in out) / len(ids)}
    if task == "agent_json":
        t = g["target_ids"]
        return {
            "target_id_recall": sum(1 for i in t if i in out) / len(t),
            "all_order_ids": sum(1 for i in g["order_ids"] if i in out) / len(g["order_ids"]),
            "json_valid": _json_ok(out),
        }
    if task == "html":
        body = Counter(words(g["body"]))
        ow = Counter(words(out))
        inter = sum((body & ow).values())
        n_out = sum(ow.values())
        chrome = sum(c for w, c in ow.items() if w not in body)
        return {"body_recall": inter / max(1, sum(body.values())),
                "chrome_share": (chrome / n_out) if n_out else 0.0}
    if task == "tables":
        lines = [line.lower() for line in out.splitlines()]
        return {"answer_row_kept": float(any(_row_kept(lines, r) for r in g["answer_rows"]))}
    return {}


def aggregate(values: list[Any]) -> float | None:
    if not values:
        return None
    if isinstance(values[0], (tuple, list)):
        kept = sum(v[0] for v in values)
        total = sum(v[1] for v in values)
        return kept / total if total else None
    return sum(values) / len(values)
