"""Word-level figures for a keep/drop model, shared by training (PyTorch) and evaluation (ONNX).

>>> import numpy as np
>>> from odcf.training.metrics import select_global
>>> select_global([np.array([0.9, 0.1, 0.5]), np.array([0.2, 0.8])], rate=0.4).tolist()
[True, False, False, False, True]

:func:`select_global` is the same rule the inference stage uses: one ranking of all words of all
texts, the top ``rate`` share kept (ties broken by position), never a per-text percentile.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def select_global(probs: Sequence[np.ndarray], *, rate: float, forced: Sequence[np.ndarray] | None = None) -> np.ndarray:
    """Flat boolean keep mask: forced words plus the most probable others, ``rate`` of all words."""
    flat = np.concatenate([np.asarray(p, dtype=np.float64) for p in probs]) if probs else np.zeros(0)
    n = len(flat)
    keep = np.zeros(n, dtype=bool)
    if forced is not None and len(forced):
        keep |= np.concatenate([np.asarray(f, dtype=bool) for f in forced])
    k = int(round(rate * n))
    room = k - int(keep.sum())
    if room > 0:
        free = np.flatnonzero(~keep)
        # stable sort on -p: equal probabilities keep their text order
        order = free[np.argsort(-flat[free], kind="stable")]
        keep[order[:room]] = True
    return keep


#: Exponent of a word's token count in the budget order ``p / tokens ** e`` (chosen on WNUT-17 and
#: QMSum dev: 0 = probability alone, 1 = probability per token; see training/README.md).
COST_EXPONENT = 0.25


def select_global_tokens(
    probs: Sequence[np.ndarray], costs: Sequence[np.ndarray], *, limit: float,
    forced: Sequence[np.ndarray] | None = None, cost_exponent: float = COST_EXPONENT,
) -> np.ndarray:
    """Flat boolean keep mask under a token budget: forced words, then the best value per token.

    ``costs`` holds each word's token count; words are taken in one global order of falling
    ``p / cost ** cost_exponent`` (ties by position) while their costs fit ``limit`` minus what is
    already kept; a word that does not fit is passed over and the next ones are still tried. With
    ``cost_exponent=0`` the order is probability alone, and one long word (a URL of 30 tokens) can
    take the room of ten short ones that are each almost as likely to be needed.

    >>> p, c = [np.array([0.9, 0.1, 0.5])], [np.array([2, 1, 3])]
    >>> select_global_tokens(p, c, limit=3, cost_exponent=0).tolist()
    [True, True, False]
    >>> p, c = [np.array([0.9, 0.8, 0.8])], [np.array([4, 1, 1])]
    >>> select_global_tokens(p, c, limit=4, cost_exponent=0).tolist()
    [True, False, False]
    >>> select_global_tokens(p, c, limit=4).tolist()   # 0.9 / 4 ** 0.25 = 0.64 < 0.8
    [False, True, True]
    """
    if not 0.0 <= cost_exponent <= 1.0:
        raise ValueError(f"cost_exponent must be within [0, 1], got {cost_exponent}")
    flat = np.concatenate([np.asarray(p, dtype=np.float64) for p in probs]) if probs else np.zeros(0)
    cost = np.concatenate([np.asarray(c, dtype=np.int64) for c in costs]) if costs else np.zeros(0, np.int64)
    keep = np.zeros(len(flat), dtype=bool)
    if forced is not None and len(forced):
        keep |= np.concatenate([np.asarray(f, dtype=bool) for f in forced])
    room = float(limit) - int(cost[keep].sum())
    score = flat / np.maximum(cost, 1).astype(np.float64) ** cost_exponent if cost_exponent else flat
    for i in np.flatnonzero(~keep)[np.argsort(-score[~keep], kind="stable")]:
        if room <= 0:
            break
        if cost[i] <= room:
            keep[i] = True
            room -= int(cost[i])
    return keep


def keep_metrics(
    probs: Sequence[np.ndarray],
    rows: Sequence[Mapping[str, Any]],
    *,
    threshold: float = 0.5,
    rates: Sequence[float] = (1 / 3, 1 / 5.2),
) -> dict[str, Any]:
    """Agreement with labels at *threshold*, and retention figures at each global keep *rate*.

    *rows* carry ``labels`` (0/1 per word), ``entity`` (gold entity word), ``number`` (has a
    digit), and ``weights`` (> 1 marks a must-keep word).
    """
    labels, ent, num, must = word_masks(rows)
    flat = np.concatenate([np.asarray(p) for p in probs]) if probs else np.zeros(0)
    pred = flat >= threshold
    out: dict[str, Any] = {"words": int(len(flat)), "label_keep_share": _share(labels)}
    out["threshold"] = {"value": threshold, **_agreement(pred, labels), "kept_share": _share(pred),
                        "entity_kept": _recall(pred, ent), "number_kept": _recall(pred, num),
                        "must_keep_kept": _recall(pred, must)}
    spans = entity_spans(rows)
    for rate in rates:
        sel = select_global(probs, rate=rate)
        out[f"rate_{rate:.3f}"] = {
            "rate": rate, "compression": round(1 / rate, 2) if rate else None, **_agreement(sel, labels),
            "entity_kept": _recall(sel, ent), "number_kept": _recall(sel, num),
            "must_keep_kept": _recall(sel, must), "label_keep_kept": _recall(sel, labels),
            "entity_spans_kept": _recall(np.asarray([bool(sel[a:b].all()) for a, b in spans], dtype=bool),
                                         np.ones(len(spans), dtype=bool)),
        }
    return out


def word_masks(rows: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flat word masks of *rows*: label keep, gold entity, number, must-keep (weight > 1).

    >>> [m.tolist() for m in word_masks([{"labels": [1, 0], "entity": [1, 0], "number": [0, 1], "weights": [3.0, 1.0]}])]
    [[True, False], [True, False], [False, True], [True, False]]
    """
    if not rows:
        return tuple(np.zeros(0, dtype=bool) for _ in range(4))  # type: ignore[return-value]

    def flat(key: str) -> np.ndarray:
        return np.concatenate([np.asarray(r[key], dtype=bool) for r in rows])
    must = np.concatenate([np.asarray(r["weights"]) > 1.0 for r in rows])
    return flat("labels"), flat("entity"), flat("number"), must


def entity_spans(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """Whole gold entities as ``(start, end)`` flat word indices: runs of entity words in a row.

    >>> entity_spans([{"entity": [1, 1, 0, 1]}, {"entity": [1, 0]}])
    [(0, 2), (3, 4), (4, 5)]
    """
    out: list[tuple[int, int]] = []
    pos = 0
    for r in rows:
        flags = list(r["entity"])
        i = 0
        while i < len(flags):
            if flags[i]:
                j = i
                while j < len(flags) and flags[j]:
                    j += 1
                out.append((pos + i, pos + j))
                i = j
            else:
                i += 1
        pos += len(flags)
    return out


def _share(mask: np.ndarray) -> float | None:
    return round(float(mask.mean()), 4) if len(mask) else None


def _recall(pred: np.ndarray, gold: np.ndarray) -> dict[str, Any]:
    n = int(gold.sum())
    k = int((pred & gold).sum())
    return {"kept": k, "of": n, "share": round(k / n, 4) if n else None}


def _agreement(pred: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    tp = int((pred & labels).sum())
    fp = int((pred & ~labels).sum())
    fn = int((~pred & labels).sum())
    acc = float((pred == labels).mean()) if len(labels) else 0.0
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"accuracy": round(acc, 4), "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}
