"""Held-out evaluation of an exported compressor model (ONNX), written as a markdown table.

>>> from odcf.training.evaluate import evaluate                                   # doctest: +SKIP
>>> res = evaluate("odcf/data/models/compressor", data_dir="../shared/data", work_dir="runs/compressor")  # doctest: +SKIP
>>> res["sources"]["wnut17"]["rate_0.333"]["entity_kept"]["share"]                # doctest: +SKIP

The held-out set is the ``test`` split of the training data builder (the WNUT-17 test file and
the QMSum meetings hashed to ``test``), rebuilt from ``data_dir`` or reused from ``work_dir``.
For each source: agreement with the labels, gold-entity / number / must-keep retention at a
global keep rate of 1/3 (3:1) and 1/5.2 (the design's 5.2:1) and at the model's threshold, the
compression those rates give in o200k tokens, the same retention under a global o200k token
budget of 1/3 and 1/5.2 of the input (words taken by probability while their tokens fit), and
speed (words and model sub-tokens per second on the CPU with 1 and 2 threads). The token stage
runs alone in these rows: no protected spans are forced. Extra rows force the anchors, and the
anchors plus spaCy's entities (what the pipeline's protect and entities stages would protect);
two model-free heuristic peers (one reading letter case) give a floor.
"""
from __future__ import annotations

import json
import logging
import platform
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from odcf.training.labels import FUNCTION_WORDS as _STOP
from odcf.training.metrics import (
    COST_EXPONENT,
    _recall,
    keep_metrics,
    select_global,
    select_global_tokens,
    word_masks,
)

logger = logging.getLogger(__name__)

RATES = (1 / 3, 1 / 5.2)
_URL = re.compile(r"https?://|^www\.", re.IGNORECASE)


class _Tokens:
    """One split's texts seen through the o200k counter: word spans, word costs, input tokens.

    Built once per source and shared by every rate and budget row (counting is the slow part).
    """

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        from odcf.backends.token_classifier import split_words
        from odcf.stages.compress import word_costs
        from odcf.tokens import get_counter

        self.counter = get_counter("o200k_base")
        self.texts = [r["text"] for r in rows]
        self.spans = [split_words(t) for t in self.texts]
        #: o200k tokens of each word, counted with one leading space (as the compress stage counts them)
        cache: dict[str, int] = {}
        self.costs = [word_costs(t, sp, self.counter, cache) for t, sp in zip(self.texts, self.spans)]
        self.tokens_in = sum(self.counter.count(t) for t in self.texts)
        _, self.ent, self.num, self.must = word_masks(rows)
        #: URL words (the long must-keep words that a token budget weighs by their cost)
        self.url = np.asarray([bool(_URL.search(t[s:e])) for t, sp in zip(self.texts, self.spans) for s, e in sp],
                              dtype=bool)

    def ratio(self, keep: np.ndarray) -> dict[str, Any]:
        """Input and output tokens of the texts rebuilt from the flat *keep* mask."""
        from odcf.stages.compress import rebuild

        t_out, pos = 0, 0
        for text, sp in zip(self.texts, self.spans):
            t_out += self.counter.count(rebuild(text, sp, keep[pos:pos + len(sp)]))
            pos += len(sp)
        return {"tokens_in": self.tokens_in, "tokens_out": t_out, "ratio": round(self.tokens_in / max(t_out, 1), 2)}

    def budget(self, probs: Sequence[np.ndarray], share: float, cost_exponent: float = COST_EXPONENT) -> dict[str, Any]:
        """Retention when one global o200k budget of *share* × the input tokens is filled in the
        order ``p / tokens ** cost_exponent`` (the compress stage's budget rule)."""
        keep = select_global_tokens(probs, self.costs, limit=share * self.tokens_in, cost_exponent=cost_exponent)
        flat_cost = np.concatenate(self.costs) if self.costs else np.zeros(0, np.int64)
        total = max(int(flat_cost.sum()), 1)
        return {"share": share, "cost_exponent": cost_exponent, "kept_words": round(float(keep.mean()), 4) if len(keep) else None,
                "entity_token_share": round(int(flat_cost[self.ent].sum()) / total, 4),
                "other_must_token_share": round(int(flat_cost[self.must & ~self.ent].sum()) / total, 4),
                **self.ratio(keep), "entity_kept": _recall(keep, self.ent), "number_kept": _recall(keep, self.num),
                "must_keep_kept": _recall(keep, self.must), "url_kept": _recall(keep, self.url),
                "url_mean_tokens": round(float(flat_cost[self.url].mean()), 1) if self.url.any() else None,
                "number_not_url_kept": _recall(keep, self.num & ~self.url)}


def heuristic_probs(texts: Sequence[str], *, case: bool = False) -> list[np.ndarray]:
    """A model-free peer: stop words last, then longer words first, words with digits first of all.

    With *case*, words with an upper-case letter come right after the words with digits (the
    information a case-aware model gets through its token types).
    """
    out = []
    for text in texts:
        scores = []
        for w in text.split():
            core = re.sub(r"^\W+|\W+$", "", w).lower()
            if any(ch.isdigit() for ch in w):
                scores.append(1.0)
            elif case and any(ch.isupper() for ch in w):
                scores.append(0.95)
            elif not core or core in _STOP:
                scores.append(0.0)
            else:
                scores.append(min(0.9, 0.1 + 0.08 * len(core)))
        out.append(np.asarray(scores, dtype=np.float64))
    return out


#: Kinds of the gold entity words a model misses, in the order the report names them.
MISSED_KINDS = ("capitalised", "function word or punctuation", "other lower-case word")


def missed_entity_words(rows: Sequence[dict[str, Any]], probs: Sequence[np.ndarray], rate: float) -> dict[str, Any]:
    """The gold entity words left out at a global keep *rate*, by kind: with an upper-case letter, a
    lower-case function word (``FUNCTION_WORDS``: "the", "of", "is", "they", …) or bare punctuation,
    or another lower-case word. Each kind counts its words and lists them (text order) with their
    probability, so a report can say which words stand between a figure and its target.

    >>> rows = [{"text": "Into the Wild by the democrats", "entity": [1, 1, 1, 0, 1, 1]}]
    >>> m = missed_entity_words(rows, [np.array([0.1, 0.2, 0.9, 0.0, 0.3, 0.4])], rate=1 / 3)
    >>> {k: v["count"] for k, v in m["kinds"].items()}
    {'capitalised': 1, 'function word or punctuation': 2, 'other lower-case word': 0}
    >>> m["kinds"]["function word or punctuation"]["words"]
    [['the', 0.2], ['the', 0.3]]
    """
    from odcf.backends.token_classifier import split_words

    keep = select_global(probs, rate=rate)
    kinds: dict[str, dict[str, Any]] = {k: {"count": 0, "words": []} for k in MISSED_KINDS}
    pos = 0
    for r, p in zip(rows, probs):
        spans = split_words(r["text"])
        for i, flag in enumerate(r["entity"]):
            if flag and not keep[pos + i]:
                word = r["text"][spans[i][0]:spans[i][1]]
                core = re.sub(r"^\W+|\W+$", "", word)
                kind = (MISSED_KINDS[0] if any(c.isupper() for c in word)
                        else MISSED_KINDS[1] if not core or core in _STOP else MISSED_KINDS[2])
                kinds[kind]["count"] += 1
                kinds[kind]["words"].append([word, round(float(p[i]), 3)])
        pos += len(p)
    return {"rate": rate, "missed": sum(k["count"] for k in kinds.values()), "kinds": kinds}


def _forced_retention(rows: Sequence[dict[str, Any]], probs: Sequence[np.ndarray], rate: float, *,
                      ner: bool = False) -> dict[str, Any]:
    """Retention when the built-in and ontology anchors are forced to keep (as the protect stage
    would), and with *ner* also spaCy's entities of the bundled ``general`` ontology's labels (what
    the entities stage protects): the token stage as the pipeline runs it."""
    from odcf.training.labels import AnchorSet, words_of

    anchors = AnchorSet.build(Path(__file__).resolve().parent.parent / "data" / "ontologies")
    texts = [r["text"] for r in rows]
    words = [words_of(t) for t in texts]
    forced = [np.asarray(anchors.word_hits(t, w), dtype=bool) for t, w in zip(texts, words)]
    if ner:
        from odcf.backends.ner import pipe
        from odcf.compressor import Compressor

        labels = set(Compressor.from_ontology("general").plan.protection.entities)
        from odcf.training.corpus import touched

        for f, w, sdoc in zip(forced, words, pipe(texts, parse=False)):
            f |= np.asarray(touched(w, [(e.start_char, e.end_char) for e in sdoc.ents if e.label_ in labels]),
                            dtype=bool)
    keep = select_global(probs, rate=rate, forced=forced)
    _, ent, num, _ = word_masks(rows)
    return {"rate": rate, "forced_share": round(float(np.concatenate(forced).mean()), 4),
            "kept_share": round(float(keep.mean()), 4),
            "entity_kept": _recall(keep, ent), "number_kept": _recall(keep, num)}


def _speed(model_path: str | Path, texts: Sequence[str], threads: int, repeats: int = 1,
           batch_size: int = 1) -> dict[str, Any]:
    from odcf.backends.token_classifier import TokenClassifier

    clf = TokenClassifier.load(model_path, threads=threads, batch_size=batch_size)
    clf.word_probs(texts[:32])  # warm the session
    n_words = sum(len(t.split()) for t in texts)
    n_sub = sum(len(clf._tok.encode(t.split(), is_pretokenized=True, add_special_tokens=False).ids) for t in texts)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        clf.word_probs(texts)
        best = min(best, time.perf_counter() - t0)
    return {"threads": threads, "batch_size": batch_size, "seconds": round(best, 2), "words_per_s": round(n_words / best),
            "subtokens_per_s": round(n_sub / best), "words": n_words, "subtokens": n_sub}


def evaluate(
    model_path: str | Path,
    *,
    data_dir: str | None,
    work_dir: str,
    threads: Sequence[int] = (1, 2),
    speed_texts: int = 600,
    sources: Sequence[str] | None = None,
    corpus: Sequence[str] = (),
) -> dict[str, Any]:
    """Figures for *model_path* on the held-out split; see the module docstring.

    The labelled data of *work_dir* (a training run's folder) is reused as it was built; a folder
    without it gets ``sources`` (default WNUT-17 and QMSum, plus ``corpus`` with *corpus* files).
    """
    from odcf.backends.token_classifier import TokenClassifier
    from odcf.errors import InputError
    from odcf.training.data import BuildConfig, build_dataset

    # the model first: a wrong path or a broken model is one error before the labelled data are built
    clf = TokenClassifier.load(model_path, threads=max(threads))
    chosen = tuple(sources) if sources is not None else ("wnut17", "qmsum")
    if corpus:
        chosen = (*chosen, "corpus")
    cfg = BuildConfig(data_dir=data_dir or "", out_dir=work_dir, sources=chosen, corpus=tuple(corpus))
    stamp = Path(work_dir) / "dataset" / "odcf_build.json"
    if stamp.is_file():  # the run's own labelled data, as it was built (no source file is read again)
        from odcf.training.data import load_labelled

        try:
            conf = json.loads(stamp.read_text(encoding="utf-8"))["config"]
            built = (tuple(conf["sources"]), tuple(conf.get("corpus", ())))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(f"{stamp}: cannot read the build stamp ({type(exc).__name__}: {exc}); rebuild "
                             f"the data with `odcf train --out {work_dir}`, or give another --work folder") from None
        if (sources is not None or corpus) and built != (cfg.sources, cfg.corpus):
            raise InputError(f"{work_dir}: holds labelled data built from {', '.join(conf['sources'])}; "
                             "give another --work folder for other sources or corpus files")
        try:
            test = list(load_labelled(stamp.parent)["test"])
        except InputError as exc:  # QA S: a damaged dataset/ was a traceback
            raise InputError(f"{exc}; rebuild the data with `odcf train --out {work_dir}` (it builds damaged "
                             "labelled data again), or give another --work folder") from None
    else:
        test = list(build_dataset(cfg)["test"])
    out: dict[str, Any] = {"model": str(model_path), "metadata": {k: clf.metadata.get(k) for k in (
        "sha256", "bytes", "num_hidden_layers", "threshold", "max_len", "int8_agreement", "agreement_gate", "train")},
        "sources": {}, "speed": [], "machine": {"cpu": platform.processor() or platform.machine()}}
    for source in sorted({r["source"] for r in test}):
        rows = [r for r in test if r["source"] == source]
        texts = [r["text"] for r in rows]
        tokens = _Tokens(rows)
        probs = clf.word_probs(texts)
        m = keep_metrics(probs, rows, threshold=clf.threshold, rates=RATES)
        m["documents"] = len({r["doc"].split("#")[0].rsplit("/", 1)[0] if source == "qmsum" else r["doc"].split("#")[0]
                              for r in rows})
        m["windows"] = len(rows)
        for rate in RATES:
            m[f"rate_{rate:.3f}"]["o200k"] = tokens.ratio(select_global(probs, rate=rate))
            m[f"tokens_{rate:.3f}"] = tokens.budget(probs, rate)
            # the same budget filled by probability alone (the rule before cost_exponent)
            m[f"tokens_{rate:.3f}_p"] = tokens.budget(probs, rate, cost_exponent=0.0)
        m["anchors_forced"] = _forced_retention(rows, probs, RATES[0])
        m["ner_forced"] = _forced_retention(rows, probs, RATES[0], ner=True)
        if any(any(r["entity"]) for r in rows):
            m["missed_entities"] = missed_entity_words(rows, probs, RATES[0])
        out["sources"][source] = m
        logger.info("%s: %s", source, {k: v for k, v in m.items() if k.startswith("rate")})
        for key, case in (("heuristic", False), ("heuristic_case", True)):
            hp = heuristic_probs(texts, case=case)
            out.setdefault(key, {})[source] = keep_metrics(hp, rows, threshold=0.5, rates=RATES)
            out[key][source][f"tokens_{RATES[0]:.3f}"] = tokens.budget(hp, RATES[0])
    texts = [r["text"] for r in test][:speed_texts]
    for n in threads:
        out["speed"].append(_speed(model_path, texts, n))
    # what running chunks in padded batches would buy (the stage runs each chunk alone: see
    # odcf.backends.token_classifier for why)
    out["speed"].append(_speed(model_path, texts, min(threads), batch_size=32))
    return out


def _pct(d: dict[str, Any] | None) -> str:
    if not d or d.get("share") is None:
        return "—"
    return f"{100 * d['share']:.1f}% ({d['kept']}/{d['of']})"


_COMPARISON_COLUMNS = ("model", "layers", "bytes", "WNUT entities kept 3:1 words", "WNUT entities kept 5.2:1 words",
                       "WNUT entities kept 3:1 o200k tokens", "WNUT F1 (thr)", "QMSum label-keep kept 3:1",
                       "QMSum numbers kept 3:1", "corpus entities kept 3:1 words", "corpus entities kept 5.2:1 words",
                       "corpus entities kept 3:1 o200k tokens", "corpus must-keep kept 3:1 words", "words/s, 1 thread")


def render_comparison(rows: Sequence[tuple[str, dict[str, Any]]],
                      peers: Sequence[tuple[str, dict[str, Any]]] = ()) -> list[str]:
    """A side-by-side table of several evaluated models (e.g. the 3-layer student vs the 6-layer model)
    and the model-free *peers* (``(label, {source: metrics})``); a column empty ("—") in every row,
    such as the WNUT-17 and QMSum columns of an evaluation on your corpus alone, is left out, and
    so is a peer row with nothing in the columns shown.

    Your corpus has its own columns (gold entities kept at 3:1 and 5.2:1 words and under a 3:1 o200k
    budget, must-keep words at 3:1): without them a corpus-only evaluation listed the peers with a
    dash in every cell although their figures had been computed (QA S), and the peers are the floor
    a fine-tune on your data is judged against.
    """
    table = []
    for name, res in rows:
        meta = res["metadata"]
        w = res["sources"].get("wnut17", {})
        speed = next((s["words_per_s"] for s in res["speed"] if s["threads"] == 1 and s.get("batch_size", 1) == 1), "—")
        wnut, qmsum, corpus = _comparison_cells(res["sources"])
        table.append([name, *(str(meta[k]) if meta.get(k) is not None else "—" for k in ("num_hidden_layers", "bytes")), *wnut,
                      str(w.get("threshold", {}).get("f1", "—")), *qmsum, *corpus, str(speed)])
    for label, sources in peers:
        wnut, qmsum, corpus = _comparison_cells(sources)
        table.append([label, "—", "—", *wnut, "—", *qmsum, *corpus, "—"])
    shown = [c for c in range(len(_COMPARISON_COLUMNS)) if c == 0 or any(row[c] != "—" for row in table)]
    table = table[:len(rows)] + [row for row in table[len(rows):] if any(row[c] != "—" for c in shown[1:])]
    lines = ["", "## Model comparison (same held-out data, same machine, same run of this command)", "",
             "| " + " | ".join(_COMPARISON_COLUMNS[c] for c in shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(row[c] for c in shown) + " |" for row in table]
    return lines


def _comparison_cells(sources: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """The WNUT entity cells (3:1 and 5.2:1 words, 3:1 tokens), the QMSum cells and the corpus cells
    (entities as for WNUT, then must-keep at 3:1 words) of a comparison row."""
    w, q, c = sources.get("wnut17", {}), sources.get("qmsum", {}), sources.get("corpus", {})
    r3, r5, t3 = f"rate_{RATES[0]:.3f}", f"rate_{RATES[1]:.3f}", f"tokens_{RATES[0]:.3f}"
    wnut = [_pct(w.get(k, {}).get("entity_kept")) for k in (r3, r5, t3)]
    qmsum = [_pct(q.get(r3, {}).get("label_keep_kept")), _pct(q.get(r3, {}).get("number_kept"))]
    corpus = [*(_pct(c.get(k, {}).get("entity_kept")) for k in (r3, r5, t3)), _pct(c.get(r3, {}).get("must_keep_kept"))]
    return wnut, qmsum, corpus


def model_label(model_path: str | Path) -> str:
    """How the comparison table names the evaluated model: "shipped" for the shipped model, else
    "model under test" and its path."""
    from odcf.backends.token_classifier import DEFAULT_MODEL_DIR

    path = Path(model_path).resolve()
    shipped = Path(DEFAULT_MODEL_DIR).resolve()
    return "shipped" if shipped in (path, path.parent) else f"model under test ({model_path})"


def render_markdown(res: dict[str, Any], *, command: str, compare: Sequence[tuple[str, dict[str, Any]]] = ()) -> str:
    """The result table for ``benchmarks/results/compressor_eval.md``."""
    meta = res["metadata"]
    lines = [
        "# Token compressor: held-out evaluation",
        "",
        f"Command: `{command}`",
        "",
        f"Model: `{res['model']}` (sha256 `{str(meta.get('sha256'))[:16]}…`, {meta.get('bytes')} bytes, "
        f"{meta.get('num_hidden_layers')} layers, int8, max_len {meta.get('max_len')}, threshold {meta.get('threshold')}).",
        "The token stage runs alone: no protected span is forced, so these are the model's own figures.",
        "Rates are one global ranking over all words of the split (never a per-text percentile).",
        "",
        "| split | words | setting | kept words | o200k in → out (ratio) | label F1 | gold entities kept | numbers kept | must-keep kept |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for source, m in res["sources"].items():
        lines += _source_rows({"wnut17": "WNUT-17 test", "qmsum": "QMSum held-out meetings",
                               "corpus": "your corpus, test split"}.get(source, source), m)
    if res["sources"].get("wnut17"):
        lines += _wnut_checks(res["sources"]["wnut17"])
    lines += ["", "Label agreement at the threshold (keep = positive class):", "",
              "| split | label keep share | accuracy | precision | recall | F1 |", "|---|---|---|---|---|---|"]
    for source, m in res["sources"].items():
        t = m["threshold"]
        lines.append(f"| {source} | {m['label_keep_share']:.1%} | {t['accuracy']:.3f} | {t['precision']:.3f} | "
                     f"{t['recall']:.3f} | {t['f1']:.3f} |")
    agr = meta.get("int8_agreement") or {}
    if agr:
        kept = (agr.get("threshold_kept") or {}).get("int8")
        sides = (f" (the int8 model keeps {kept} and drops {agr['words'] - kept} of them at the threshold)"
                 if kept is not None else "")
        gate = meta.get("agreement_gate") or {}
        lowered = (f" Exported under a lowered gate: --min-agreement {gate['min_agreement']:g} (default "
                   f"{gate['default']:g}).") if gate.get("lowered") and not gate.get("passes_default") else ""
        lines += ["", f"int8 vs fp32 keep-decision agreement on {agr.get('words')} held-out words{sides}: "
                  f"{100 * agr.get('threshold', 0):.2f}% at the threshold, {100 * agr.get('rate', 0):.2f}% at a global 1/3 rate "
                  f"(largest probability difference {agr.get('max_abs_prob_diff')}).{lowered}"]
    lines += _speed_rows(res)
    if compare or res.get("heuristic"):
        peers = [(label, res[key]) for key, label in (
            ("heuristic", "heuristic peer (no model: digits first, stop words last, longer words first)"),
            ("heuristic_case", "heuristic peer + case (capitalised words right after digits)")) if res.get(key)]
        lines += render_comparison([(model_label(res["model"]), res), *compare], peers)
    train = meta.get("train") or {}
    if train:
        lines += ["", f"Training: {train.get('wall_s')} s wall ({train.get('train_s')} s in the training loop) with "
                  f"{train.get('threads')} threads on {train.get('cpu_count')} CPU cores; {train.get('train_windows')} windows, "
                  f"{train.get('train_subtokens')} sub-tokens per epoch."]
    return "\n".join(lines) + "\n"


def _source_rows(name: str, m: dict[str, Any]) -> list[str]:
    """One source's rows of the main table: word rates, token budgets, forced anchors, threshold."""
    lines = []
    for rate in RATES:
        r = m[f"rate_{rate:.3f}"]
        o = r["o200k"]
        lines.append(
            f"| {name} | {m['words']} | global rate {rate:.3f} ({1 / rate:.1f}:1 words) | {rate:.1%} | "
            f"{o['tokens_in']} → {o['tokens_out']} ({o['ratio']}:1) | {r['f1']:.3f} | {_pct(r['entity_kept'])} | "
            f"{_pct(r['number_kept'])} | {_pct(r['must_keep_kept'])} |")
    for rate, suffix in ((r, s) for s in ("", "_p") for r in RATES):
        b = m.get(f"tokens_{rate:.3f}{suffix}")
        if b:
            order = (f"order p / tokens^{b['cost_exponent']:g}" if b.get("cost_exponent", 0)
                     else "probability order alone")
            lines.append(
                f"| {name} | {m['words']} | global o200k budget {rate:.3f} of the input ({1 / rate:.1f}:1 tokens), "
                f"{order} | {b['kept_words']:.1%} | {b['tokens_in']} → {b['tokens_out']} ({b['ratio']}:1) | — | "
                f"{_pct(b['entity_kept'])} | {_pct(b['number_kept'])} | {_pct(b['must_keep_kept'])} |")
    a = m.get("anchors_forced")
    if a:
        lines.append(
            f"| {name} | {m['words']} | rate {a['rate']:.3f} + anchors forced ({a['forced_share']:.1%} of words) | "
            f"{a['rate']:.1%} | — | — | {_pct(a['entity_kept'])} | {_pct(a['number_kept'])} | — |")
    a = m.get("ner_forced")
    if a:
        lines.append(
            f"| {name} | {m['words']} | rate {a['rate']:.3f} + anchors and spaCy entities forced, as in the pipeline "
            f"({a['forced_share']:.1%} of words) | {a['kept_share']:.1%} | — | — | {_pct(a['entity_kept'])} | "
            f"{_pct(a['number_kept'])} | — |")
    t = m["threshold"]
    lines.append(
        f"| {name} | {m['words']} | threshold {t['value']} | {t['kept_share']:.1%} | — | {t['f1']:.3f} | "
        f"{_pct(t['entity_kept'])} | {_pct(t['number_kept'])} | {_pct(t['must_keep_kept'])} |")
    return lines


def _wnut_checks(w: dict[str, Any]) -> list[str]:
    """The target checks (98% of WNUT-17 entity words at 3:1 and 5.2:1) and where the tokens go."""
    lines = []
    for rate, label in ((RATES[0], "3:1"), (RATES[1], "5.2:1 (the design's figure)")):
        share = w[f"rate_{rate:.3f}"]["entity_kept"]["share"]
        if share is not None:
            verdict = "met" if share >= 0.98 else "not met"
            whole = w[f"rate_{rate:.3f}"].get("entity_spans_kept")
            spans = f"; whole entities (every word of the span kept): {_pct(whole)}" if whole else ""
            lines.append(f"\nTarget check: WNUT-17 gold entities kept at {label} word compression: "
                         f"{100 * share:.1f}% of entity words (target ≥ 98%: {verdict}){spans}.")
        b = w.get(f"tokens_{rate:.3f}")
        if b and b["entity_kept"]["share"] is not None:
            verdict = "met" if b["entity_kept"]["share"] >= 0.98 else "not met"
            lines.append(f"\nTarget check: WNUT-17 gold entities kept at {label} o200k token compression "
                         f"(measured {b['ratio']}:1): {100 * b['entity_kept']['share']:.1f}% (target ≥ 98%: {verdict}).")
    b = w.get(f"tokens_{RATES[0]:.3f}")
    if b and "entity_token_share" in b:
        lines.append(f"\nWhere the tokens are in WNUT-17 test: gold entity words hold {b['entity_token_share']:.1%} of "
                     f"the o200k tokens, other must-keep words (URLs, numbers, codes: anchors) "
                     f"{b['other_must_token_share']:.1%}. A 3:1 token budget leaves room for 33.3%, and the model "
                     "ranks anchors with entities, so in probability order alone long URLs take the room of "
                     "entities; the budget order p / tokens^e passes over a long word before several short ones "
                     "that are almost as likely to be needed.")
    miss = w.get("missed_entities")
    if miss and miss["missed"]:
        parts = [f"{v['count']} {k}" for k, v in miss["kinds"].items()]
        lines.append(f"\nThe {miss['missed']} gold entity words left out at {1 / miss['rate']:.0f}:1 words, by kind: "
                     f"{', '.join(parts)}. The words (probability), in text order:")
        lines.append("")
        for kind, v in miss["kinds"].items():
            if v["count"]:
                lines.append(f"- {kind}: " + ", ".join(f"`{word}` ({prob:.2f})" for word, prob in v["words"]))
    p = w.get(f"tokens_{RATES[0]:.3f}_p")
    if b and p and b.get("url_kept"):
        lines.append(f"\nWhat the order trades at the 3:1 token budget: URL words ({b['url_kept']['of']}, "
                     f"{b['url_mean_tokens']} tokens each on average) kept {_pct(b['url_kept'])} against "
                     f"{_pct(p['url_kept'])} in probability order alone; numbers and codes that are not URLs "
                     f"{_pct(b['number_not_url_kept'])} against {_pct(p['number_not_url_kept'])}; gold entity words "
                     f"{_pct(b['entity_kept'])} against {_pct(p['entity_kept'])}. In the pipeline the bundled ontologies "
                     "protect URLs as anchors before this stage runs, so there they are kept whatever the order.")
    return lines


def _speed_rows(res: dict[str, Any]) -> list[str]:
    lines = ["", f"Speed (CPU: {res['machine']['cpu']}, int8 ONNX Runtime, {res['speed'][0]['words'] if res['speed'] else 0} "
             "words of held-out text, one timed run per setting). The 2-core machine was shared with other jobs "
             "while this ran, so these are lower bounds and noisy: models of identical architecture in the "
             "comparison below differ by the machine's noise, not by design.", "",
             "| threads | chunks per run | seconds | words/s | model sub-tokens/s |", "|---|---|---|---|---|"]
    for s in res["speed"]:
        batch = s.get("batch_size", "—")
        note = " (padded batches; not what the stage does)" if batch not in (1, "—") else ""
        lines.append(f"| {s['threads']} | {batch}{note} | {s['seconds']} | {s['words_per_s']} | {s['subtokens_per_s']} |")
    return lines
