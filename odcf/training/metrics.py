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


def select_global(probs: Sequence[np.ndarray], *, rate: float, forced: Sequence[np.ndarray] | None = None,
                  needs: Needs | None = None) -> np.ndarray:
    """Flat boolean keep mask: forced words plus the most probable others, ``rate`` of all words.

    With *needs* (see :func:`closed`), a word comes with the words it needs that are not kept yet, and
    is passed over when they do not all fit the ``rate``; the forced words' closure is forced too.

    >>> p = [np.array([0.9, 0.1, 0.5, 0.8])]
    >>> select_global(p, rate=0.5).tolist()
    [True, False, False, True]
    >>> select_global(p, rate=0.5, needs=[[(), (), (), (1,)]]).tolist()   # word 3 needs word 1
    [True, False, True, False]
    """
    flat = np.concatenate([np.asarray(p, dtype=np.float64) for p in probs]) if probs else np.zeros(0)
    n = len(flat)
    keep = np.zeros(n, dtype=bool)
    if forced is not None and len(forced):
        keep |= np.concatenate([np.asarray(f, dtype=bool) for f in forced])
    graph = _flat_needs(needs, [len(p) for p in probs])
    if graph is not None:
        keep = _close(keep, graph)
    k = int(round(rate * n))
    room = k - int(keep.sum())
    if room > 0:
        free = np.flatnonzero(~keep)
        # stable sort on -p: equal probabilities keep their text order
        order = free[np.argsort(-flat[free], kind="stable")]
        if graph is None:
            keep[order[:room]] = True
            return keep
        for i in order:
            if room <= 0:
                break
            if keep[i]:
                continue
            group = _group(int(i), keep, graph)
            if len(group) <= room:
                keep[group] = True
                room -= len(group)
    return keep


#: Per text, per word: the indices (in that text) of the words it cannot be kept without (its syntactic
#: head, a preposition's object); None for a text without them. See :func:`closed`.
Needs = Sequence[Sequence[Sequence[int]] | None]


def closed(keep: np.ndarray, needs: Sequence[Sequence[int]]) -> np.ndarray:
    """*keep* (one text's mask) with every word that a kept word needs, and what those need, to the end.

    *needs* holds, for each word, the words it cannot be kept without: the token stage gives each word
    its syntactic head (so a kept word keeps the words above it up to its sentence's root) and a preposition
    its object. Thinned without this rule, "Validation costs are estimated between EUR 65,000 and EUR 80,000."
    read "… estimated EUR 65,000 and EUR 80,000." (the range word dropped under the amount it heads) and
    "Units with serial numbers above EK17-2409999 …" read "Units serial numbers above …".

    >>> closed(np.array([False, False, True, False]), [(), (), (1,), (2,)]).tolist()
    [False, True, True, False]
    """
    graph = _flat_needs([needs], [len(keep)])
    return _close(np.asarray(keep, dtype=bool).copy(), graph) if graph is not None else np.asarray(keep, dtype=bool)


def _flat_needs(needs: Needs | None, sizes: Sequence[int]) -> list[tuple[int, ...]] | None:
    """*needs* as one list over the flat word index (each text's indices moved by its offset), or None."""
    if needs is None or all(n is None for n in needs):
        return None
    if len(needs) != len(sizes):
        raise ValueError(f"needs has {len(needs)} texts, probs {len(sizes)}")
    out: list[tuple[int, ...]] = []
    pos = 0
    for text_needs, size in zip(needs, sizes):
        if text_needs is None:
            out.extend(() for _ in range(size))
        else:
            if len(text_needs) != size:
                raise ValueError(f"needs has {len(text_needs)} words for a text of {size}")
            out.extend(tuple(pos + int(j) for j in word) for word in text_needs)
        pos += size
    return out


def _group(i: int, keep: np.ndarray, graph: Sequence[tuple[int, ...]]) -> list[int]:
    """Word *i* and every word it needs, directly or through another, that *keep* does not hold yet (sorted)."""
    seen = {i}
    todo = [i]
    while todo:
        for j in graph[todo.pop()]:
            if j not in seen and not keep[j]:
                seen.add(j)
                todo.append(j)
    return sorted(seen)


def _close(keep: np.ndarray, graph: Sequence[tuple[int, ...]]) -> np.ndarray:
    """*keep* with the closure of every kept word under *graph* (in place; returned)."""
    for i in np.flatnonzero(keep):
        for j in _group(int(i), keep, graph):
            keep[j] = True
    return keep


#: Exponent of a word's token count in the budget order ``p / tokens ** e`` (chosen on WNUT-17 and
#: QMSum dev: 0 = probability alone, 1 = probability per token; see training/README.md).
COST_EXPONENT = 0.25


def select_global_tokens(
    probs: Sequence[np.ndarray], costs: Sequence[np.ndarray], *, limit: float,
    forced: Sequence[np.ndarray] | None = None, cost_exponent: float = COST_EXPONENT, needs: Needs | None = None,
) -> np.ndarray:
    """Flat boolean keep mask under a token budget: forced words, then the best value per token.

    ``costs`` holds each word's token count; words are taken in one global order of falling
    ``p / cost ** cost_exponent`` (ties by position) while their costs fit ``limit`` minus what is
    already kept; a word that does not fit is passed over and the next ones are still tried. With
    ``cost_exponent=0`` the order is probability alone, and one long word (a URL of 30 tokens) can
    take the room of ten short ones that are each almost as likely to be needed.

    With *needs* (see :func:`closed`), choosing a word chooses the words it needs that are not kept yet:
    their summed cost is charged, and the word is passed over when the group does not fit; the forced words'
    closure is forced (and charged) first. So the limit holds exactly and no kept phrase hangs from a dropped
    word ("up 11% year guidance range of …" lost "above the top end of our" under "guidance range").

    >>> p, c = [np.array([0.9, 0.1, 0.5])], [np.array([2, 1, 3])]
    >>> select_global_tokens(p, c, limit=3, cost_exponent=0).tolist()
    [True, True, False]
    >>> p, c = [np.array([0.9, 0.8, 0.8])], [np.array([4, 1, 1])]
    >>> select_global_tokens(p, c, limit=4, cost_exponent=0).tolist()
    [True, False, False]
    >>> select_global_tokens(p, c, limit=4).tolist()   # 0.9 / 4 ** 0.25 = 0.64 < 0.8
    [False, True, True]
    >>> p, c = [np.array([0.9, 0.1, 0.8, 0.2])], [np.array([1, 1, 1, 1])]   # word 2 needs word 1: 2 tokens
    >>> select_global_tokens(p, c, limit=2, cost_exponent=0, needs=[[(), (), (1,), ()]]).tolist()
    [True, False, False, True]
    """
    if not 0.0 <= cost_exponent <= 1.0:
        raise ValueError(f"cost_exponent must be within [0, 1], got {cost_exponent}")
    flat = np.concatenate([np.asarray(p, dtype=np.float64) for p in probs]) if probs else np.zeros(0)
    cost = np.concatenate([np.asarray(c, dtype=np.int64) for c in costs]) if costs else np.zeros(0, np.int64)
    keep = np.zeros(len(flat), dtype=bool)
    if forced is not None and len(forced):
        keep |= np.concatenate([np.asarray(f, dtype=bool) for f in forced])
    graph = _flat_needs(needs, [len(p) for p in probs])
    if graph is not None:
        keep = _close(keep, graph)
    room = float(limit) - int(cost[keep].sum())
    score = flat / np.maximum(cost, 1).astype(np.float64) ** cost_exponent if cost_exponent else flat
    for i in np.flatnonzero(~keep)[np.argsort(-score[~keep], kind="stable")]:
        if room <= 0:
            break
        if graph is None:
            if cost[i] <= room:
                keep[i] = True
                room -= int(cost[i])
            continue
        if keep[i]:
            continue  # taken in with a word it heads
        group = _group(int(i), keep, graph)
        group_cost = int(cost[group].sum())
        if group_cost <= room:
            keep[group] = True
            room -= group_cost
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
