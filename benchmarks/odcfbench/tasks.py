"""Benchmark tasks built from the shared real data: each a seeded sample of examples with budgets.

An :class:`Example` is what every system sees: one text, one optional query, one token budget
per budget label (computed from the input's ``o200k_base`` count). The gold data stays in the
example and is only read by :mod:`odcfbench.metrics` after the systems have run.

>>> tasks = build_tasks("../shared/data", quick=True)   # doctest: +SKIP
>>> [t.name for t in tasks][:2]                          # doctest: +SKIP
['nq_multi', 'nq_single']
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from odcfbench.text import count

SEED = 20261130


@dataclass(frozen=True)
class Example:
    id: str
    task: str
    text: str
    query: str | None
    kind: str  # text | html | json | chat | csv
    lang: str  # en | zh
    tokens_in: int
    budgets: dict[str, int]  # label ("2x", "4x", "1.25x body") -> budget in o200k tokens
    gold: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    metric: str  # the primary retention figure's name
    metric_doc: str  # exact definition, printed in the report
    budget_doc: str
    examples: tuple[Example, ...]
    secondary: tuple[str, ...] = ()


class DataMissing(Exception):
    """A data file the task needs is absent (the task is skipped and the report says so)."""


# sizes: (quick, full)
SIZES = {
    "nq_multi": (3, 40),
    "nq_single": (3, 60),
    "kv": (2, 30),
    "qmsum": (2, 15),
    "wnut": (3, 40),
    "cmrc": (3, 60),
    "agent_traj": (2, 20),
    "agent_json": (2, 16),
    "html": (2, 10),
    "tables": (3, 40),
}
LONG_DOC_TOKENS = (3_000, 80_000)


def _path(data: str, *parts: str) -> str:
    p = os.path.join(data, *parts)
    if not os.path.exists(p):
        raise DataMissing(p)
    return p


def _ratio_budgets(tokens: int, ratios: tuple[int, ...]) -> dict[str, int]:
    return {f"{r}x": max(1, tokens // r) for r in ratios}


def _example(task: str, i: int, text: str, query: str | None, kind: str, lang: str, ratios, gold) -> Example:
    n = count(text)
    return Example(f"{task}-{i:04d}", task, text, query, kind, lang, n, _ratio_budgets(n, ratios), gold)


def _read_jsonl_gz(path: str) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ----------------------------------------------------------------------------- NQ
def _nq_rows(data: str) -> list[dict]:
    rows = _read_jsonl_gz(_path(data, "qa_lost_in_the_middle", "nq-open-oracle.jsonl.gz"))
    keep = []
    for r in rows:
        gold = [c for c in r["ctxs"] if c.get("isgold")]
        if not gold:
            continue
        low = gold[0]["text"].lower()
        if any(a.lower() in low for a in r["answers"]):
            keep.append(r)
    return keep


def _doc_line(k: int, ctx: dict) -> str:
    return f"Document [{k}](Title: {ctx['title']}) {ctx['text']}"


def nq_multi(data: str, n: int) -> Task:
    rows = _nq_rows(data)
    rng = random.Random(SEED)
    picked = rng.sample(range(len(rows)), n)
    positions = (0, 4, 9, 14, 19)
    exs = []
    for i, qi in enumerate(picked):
        r = rows[qi]
        gold_ctx = next(c for c in r["ctxs"] if c.get("isgold"))
        others = [j for j in rng.sample(range(len(rows)), 40) if j != qi][:19]
        ctxs = [next(c for c in rows[j]["ctxs"] if c.get("isgold")) for j in others]
        pos = positions[i % len(positions)]
        ctxs.insert(pos, gold_ctx)
        text = "\n".join(_doc_line(k + 1, c) for k, c in enumerate(ctxs))
        exs.append(_example("nq_multi", i, text, r["question"], "text", "en", (2, 4, 8),
                            {"answers": r["answers"], "gold_pos": pos}))
    return Task("nq_multi", "NQ multi-passage (gold + 19 passages of other questions)", "answer_kept",
                "share of examples where any gold answer string occurs in the output (case-insensitive, "
                "whitespace-normalized)", "input tokens / 2, / 4, / 8", tuple(exs))


def nq_single(data: str, n: int) -> Task:
    rows = _nq_rows(data)
    rng = random.Random(SEED + 1)
    exs = []
    for i, qi in enumerate(rng.sample(range(len(rows)), n)):
        r = rows[qi]
        ctx = next(c for c in r["ctxs"] if c.get("isgold"))
        exs.append(_example("nq_single", i, _doc_line(1, ctx), r["question"], "text", "en", (2,),
                            {"answers": r["answers"]}))
    return Task("nq_single", "NQ single gold passage", "answer_kept",
                "share of examples where any gold answer string occurs in the output (case-insensitive)",
                "input tokens / 2", tuple(exs))


# ----------------------------------------------------------------------------- KV
def kv(data: str, n: int) -> Task:
    rows = _read_jsonl_gz(_path(data, "qa_lost_in_the_middle", "kv-retrieval-75_keys.jsonl.gz"))
    rng = random.Random(SEED + 2)
    exs = []
    for i, qi in enumerate(rng.sample(range(len(rows)), n)):
        r = rows[qi]
        # the lost-in-the-middle formatting: one "key": "value" pair per line, valid JSON
        body = ",\n ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in r["ordered_kv_records"])
        text = "{" + body + "}"
        query = f'Extract the value corresponding to the specified key in the JSON object. Key: "{r["key"]}"'
        exs.append(_example("kv", i, text, query, "json", "en", (4,), {"key": r["key"], "value": r["value"]}))
    return Task("kv", "KV retrieval (75 UUID pairs)", "pair_kept",
                "share of examples where both the queried key and its value occur in the output",
                "input tokens / 4", tuple(exs))


# ----------------------------------------------------------------------------- QMSum
def _qmsum_meetings(data: str) -> list[dict]:
    out = []
    for split in ("test", "val"):
        with open(_path(data, "qa_qmsum", f"{split}.jsonl"), encoding="utf-8") as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def _transcript(meeting: dict) -> list[str]:
    return [f"{t['speaker']}: {t['content']}" for t in meeting["meeting_transcripts"]]


def qmsum(data: str, n: int) -> Task:
    meetings = _qmsum_meetings(data)
    rng = random.Random(SEED + 3)
    order = rng.sample(range(len(meetings)), len(meetings))
    exs = []
    for mi in order:
        if len(exs) >= n:
            break
        m = meetings[mi]
        turns = _transcript(m)
        qs = [q for q in m["specific_query_list"] if q.get("relevant_text_span")]
        if not qs:
            continue
        q = rng.choice(qs)
        ev: list[int] = []
        for a, b in q["relevant_text_span"]:
            ev.extend(range(int(a), min(int(b), len(turns) - 1) + 1))
        evidence = [turns[j] for j in sorted(set(ev))]
        rest = [turns[j] for j in range(len(turns)) if j not in set(ev)]
        exs.append(_example("qmsum", len(exs), "\n".join(turns), q["query"], "chat", "en", (4,),
                            {"evidence": evidence, "rest": rest}))
    return Task("qmsum", "QMSum query-based meeting evidence", "evidence_word_recall",
                "evidence-distinctive word recall: the word types (lowercase, >=3 chars, not stopwords) that "
                "occur in the gold evidence turns and nowhere else in the meeting; share of them present in "
                "the output, averaged over queries. Secondary: evidence_sent_recall = share of evidence "
                "sentences of >=5 words found verbatim (whitespace/case-normalized) in the output",
                "input tokens / 4", tuple(exs), ("evidence_sent_recall",))


# ----------------------------------------------------------------------------- WNUT-17
def _wnut_sentences(path: str) -> list[list[tuple[str, str]]]:
    sents, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if cur:
                    sents.append(cur)
                    cur = []
                continue
            tok, _, tag = line.partition("\t")
            cur.append((tok, tag.strip() or "O"))
    if cur:
        sents.append(cur)
    return sents


def _entities(sent: list[tuple[str, str]]) -> list[str]:
    out, cur = [], []
    for tok, tag in sent:
        if tag.startswith("B-"):
            if cur:
                out.append(" ".join(cur))
            cur = [tok]
        elif tag.startswith("I-") and cur:
            cur.append(tok)
        else:
            if cur:
                out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def wnut(data: str, n: int) -> Task:
    sents = _wnut_sentences(_path(data, "ner_wnut17", "emerging.test.annotated"))
    chunks: list[tuple[str, list[str]]] = []
    lines: list[str] = []
    ents: list[str] = []
    used = 0
    for s in sents:
        line = " ".join(t for t, _ in s)
        lines.append(line)
        ents.extend(_entities(s))
        used += count(line)
        if used >= 300:
            chunks.append(("\n".join(lines), ents))
            lines, ents, used = [], [], 0
    chunks = [c for c in chunks if c[1]]
    rng = random.Random(SEED + 4)
    picked = sorted(rng.sample(range(len(chunks)), min(n, len(chunks))))
    exs = [_example("wnut", i, chunks[ci][0], None, "text", "en", (3,), {"entities": chunks[ci][1]})
           for i, ci in enumerate(picked)]
    return Task("wnut", "WNUT-17 test text (consecutive sentences in ~300-token chunks)", "entity_recall",
                "share of gold entity mentions (surface strings, case-insensitive) that occur in the output, "
                "pooled over all chunks", "input tokens / 3 (no query)", tuple(exs))


# ----------------------------------------------------------------------------- CMRC 2018
def cmrc(data: str, n: int) -> Task:
    d = json.load(open(_path(data, "zh_cmrc2018", "cmrc2018_dev.json"), encoding="utf-8"))
    pairs = []
    for art in d["data"]:
        for p in art["paragraphs"]:
            if p["qas"]:
                pairs.append((p["context"], p["qas"]))
    rng = random.Random(SEED + 5)
    exs = []
    for i, pi in enumerate(rng.sample(range(len(pairs)), n)):
        ctx, qas = pairs[pi]
        qa = rng.choice(qas)
        answers = sorted({a["text"] for a in qa["answers"] if a["text"]})
        exs.append(_example("cmrc", i, ctx, qa["question"], "text", "zh", (2,), {"answers": answers}))
    return Task("cmrc", "CMRC 2018 (Chinese reading comprehension)", "answer_kept",
                "share of examples where any gold answer string occurs in the output", "input tokens / 2",
                tuple(exs))


# ----------------------------------------------------------------------------- agent traffic
def _render_traj(traj: list[dict]) -> str:
    lines = []
    for m in traj:
        role = m.get("role", "?")
        if m.get("content"):
            name = f" {m['name']}" if role == "tool" and m.get("name") else ""
            lines.append(f"[{role}{name}] {m['content']}")
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            lines.append(f"[{role} -> {fn.get('name')}] {fn.get('arguments')}")
    return "\n".join(lines)


_ID_KEYS = {"user_id", "reservation_id", "flight_number", "payment_id", "order_id", "item_id", "product_id",
            "amount", "payment_method_id", "item_ids", "new_item_ids", "tracking_id"}


def _collect_ids(obj: Any, out: set[str], key: str | None = None) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _collect_ids(v, out, k)
    elif isinstance(obj, list):
        for v in obj:
            _collect_ids(v, out, key)
    elif key in _ID_KEYS and obj is not None and not isinstance(obj, bool):
        out.add(str(obj))


def agent_traj(data: str, n: int) -> Task:
    trajs = json.load(open(_path(data, "agent_tau_bench", "gpt-4o-airline.json"), encoding="utf-8"))
    seen: set[int] = set()
    uniq = []
    for t in trajs:  # one trajectory per task id
        if t["task_id"] not in seen:
            seen.add(t["task_id"])
            uniq.append(t)
    rng = random.Random(SEED + 6)
    exs = []
    for t in rng.sample(uniq, len(uniq)):
        if len(exs) >= n:
            break
        text = _render_traj(t["traj"])
        ids: set[str] = set()
        _collect_ids(t["info"]["task"].get("actions", []), ids)
        ids = {x for x in ids if x in text}
        if not ids:
            continue
        first_user = next((m["content"] for m in t["traj"] if m.get("role") == "user" and m.get("content")), "")
        exs.append(_example("agent_traj", len(exs), text, first_user, "chat", "en", (2, 4),
                            {"ids": sorted(ids)}))
    return Task("agent_traj", "tau-bench airline trajectories (rendered as text)", "id_recall",
                "IDs and amounts the task's gold actions use (user_id, reservation_id, flight_number, payment_id, "
                "amount) that occur in the input: share present in the output, averaged over trajectories",
                "input tokens / 2 and / 4; query = the user's first message", tuple(exs))


def agent_json(data: str, n: int) -> Task:
    orders = json.load(open(_path(data, "agent_tau_bench", "retail_orders.json"), encoding="utf-8"))
    keys = list(orders)
    rng = random.Random(SEED + 7)
    exs = []
    for i in range(n):
        start = rng.randrange(0, len(keys) - 12)
        chunk = {k: orders[k] for k in keys[start:start + 12]}
        target = rng.choice(list(chunk))
        text = json.dumps(chunk, indent=2, ensure_ascii=False)
        ids: set[str] = set()
        _collect_ids(chunk[target], ids)
        query = f"What is the status of order {target}, what was paid, and which items does it hold?"
        exs.append(_example("agent_json", i, text, query, "json", "en", (2, 4),
                            {"target_ids": sorted(ids), "order_ids": sorted(chunk)}))
    return Task("agent_json", "tau-bench retail orders (12 orders, pretty-printed JSON)", "target_id_recall",
                "IDs and amounts of the queried order (order_id, user_id, item_ids, product_ids, tracking ids, "
                "payment method ids, amounts): share present in the output, averaged. Secondary: all_order_ids = "
                "share of the 12 order ids present; json_valid = share of outputs that parse as JSON (after "
                "removing odcf's source header lines, if any)", "input tokens / 2 and / 4; query names one order",
                tuple(exs), ("all_order_ids", "json_valid"))


# ----------------------------------------------------------------------------- HTML
def html(data: str, n: int) -> Task:
    gt = json.load(open(_path(data, "html_article_extraction", "ground-truth.json"), encoding="utf-8"))
    folder = _path(data, "html_article_extraction", "html")
    cands = []
    for key in sorted(gt):
        p = os.path.join(folder, f"{key}.html.gz")
        if not os.path.exists(p) or not (gt[key].get("articleBody") or "").strip():
            continue
        with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
            raw = f.read()
        if len(raw) <= 150_000:  # keep the run within time for the slow peers
            cands.append((key, raw, gt[key]["articleBody"]))
    rng = random.Random(SEED + 8)
    exs = []
    for i, (key, raw, body) in enumerate(rng.sample(cands, min(n, len(cands)))):
        m = re.search(r"<title[^>]*>(.*?)</title>", raw, re.S | re.I)
        title = re.sub(r"\s+", " ", m.group(1)).strip() if m else None
        n_in = count(raw)
        budget = math.ceil(1.25 * count(body))
        exs.append(Example(f"html-{i:04d}", "html", raw, title or None, "html", "en", n_in,
                           {"1.25x body": min(budget, n_in)}, {"body": body, "page": key}))
    return Task("html", "Raw HTML news/blog pages (<=150k chars)", "body_recall",
                "token recall of the gold article body: |words(output) ∩ words(body)| / |words(body)| on "
                "lowercased word multisets. Secondary: chrome_share = share of output words whose type is not "
                "in the gold body's vocabulary (lower is better)",
                "fixed: 1.25 x the gold body's token count (every system gets the raw HTML; the query is the "
                "page <title>)", tuple(exs), ("chrome_share",))


# ----------------------------------------------------------------------------- tables
def tables(data: str, n: int) -> Task:
    root = _path(data, "table_wikitablequestions")
    with open(os.path.join(root, "pristine-unseen-tables.tsv"), encoding="utf-8") as f:
        qs = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    rng = random.Random(SEED + 9)
    exs = []
    for q in rng.sample(qs, len(qs)):
        if len(exs) >= n:
            break
        p = os.path.join(root, q["context"])
        if not os.path.exists(p):
            continue
        text = open(p, encoding="utf-8").read().strip()
        rows = list(csv.reader(io.StringIO(text)))
        if len(rows) < 8:
            continue
        target = q["targetValue"].strip().lower()
        ans_rows = [[c.strip() for c in r if c.strip()] for r in rows[1:]
                    if any(c.strip().lower() == target for c in r)]
        if not 1 <= len(ans_rows) <= 3:  # computed answers (counts, sums) have no answer row, or match by chance
            continue
        exs.append(_example("tables", len(exs), text, q["utterance"], "csv", "en", (2,),
                            {"answer_rows": ans_rows, "target": q["targetValue"]}))
    return Task("tables", "WikiTableQuestions (csv, >=8 rows, the answer is the cell of 1-3 rows)", "answer_row_kept",
                "share of questions where some row holding the answer cell survives: all its non-empty cells "
                "occur, in order, on one output line", "input tokens / 2", tuple(exs))


# ----------------------------------------------------------------------------- long document
def long_doc(data: str, tokens: int) -> Example:
    meetings = _qmsum_meetings(data)
    parts: list[str] = []
    used = 0
    for m in meetings:
        for line in _transcript(m):
            parts.append(line)
            used += count(line)
            if used >= tokens:
                break
        if used >= tokens:
            break
    text = "\n".join(parts)
    q = meetings[0]["specific_query_list"][0]["query"]
    return _example("long", 0, text, q, "chat", "en", (4,), {})


BUILDERS: dict[str, Callable[[str, int], Task]] = {
    "nq_multi": nq_multi, "nq_single": nq_single, "kv": kv, "qmsum": qmsum, "wnut": wnut, "cmrc": cmrc,
    "agent_traj": agent_traj, "agent_json": agent_json, "html": html, "tables": tables,
}


def build_tasks(data: str, *, quick: bool, only: list[str] | None = None) -> tuple[list[Task], dict[str, str]]:
    """Every task that has its data; a second dict says which were skipped and why."""
    tasks, skipped = [], {}
    for name, fn in BUILDERS.items():
        if only and name not in only:
            continue
        try:
            tasks.append(fn(data, SIZES[name][0 if quick else 1]))
        except DataMissing as exc:
            skipped[name] = f"data missing: {exc}"
    return tasks, skipped
