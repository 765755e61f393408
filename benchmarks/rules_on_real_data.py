"""Measure the ``rules`` stage on real public data (a program, not a test).

    python benchmarks/rules_on_real_data.py --data ../shared/data [--out benchmarks/results/rules_real_data.md]

(a) html_article_extraction, 181 news/blog pages with their gold article body: o200k_base tokens
    of the raw page, of a naive peer (every visible text node, whitespace collapsed: what a plain
    tag stripper gives) and of the rule stage; share of the gold body's words (multiset recall)
    each keeps, and the share of their words that are gold body words (precision).
(b) agent_tau_bench: the JSON tables (orders, products, flights) and every tool output of the
    200 airline trajectories, and the API responses in agent_toolbench: tokens before/after JSON
    minify, JSON validity and value equality after.
(c) anchors of the bundled ``general`` ontology (a built-in set when it is not bundled yet):
    every match present before the rules must still be present after. For HTML, "before" is
    the gold article body (chrome is dropped by design, so anchors in menus and footers are
    reported separately, against the naive peer's text).

(d) table_wikitablequestions, 4,344 questions over real web tables (CSV): the fold stage after
    the real segmenter and protector, with the question as the query: tokens before/after, and
    the share of questions whose answer is still in the folded table, against a query-blind fold
    (header + first/last rows only) run on the same segments.

Writes a markdown table to ``--out`` and prints it.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import logging
import os
import platform
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from odcf.document import Document, Source
from odcf.errors import OdcfError
from odcf.plan.model import Anchor, Plan, ProtectionRules
from odcf.stages.fold import FoldStage
from odcf.stages.protect import Protector
from odcf.stages.rules import RuleStage
from odcf.stages.segment import Segmenter
from odcf.tokens import get_counter

logger = logging.getLogger("rules_on_real_data")

#: Used when the bundled general ontology is not available.
FALLBACK_ANCHORS = (
    Anchor("money", r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?"),
    Anchor("percent", r"\d+(?:\.\d+)?\s?%"),
    Anchor("iso_date", r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2})?)?\b"),
    Anchor("date", r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{4}\b"),
    Anchor("time", r"\b\d{1,2}:\d{2}(?::\d{2})?\b"),
    Anchor("long_number", r"\b\d{6,}\b"),
    Anchor("order_id", r"#W\d{7}"),
    Anchor("code_id", r"\b[A-Z]{2,5}-?\d{2,6}\b"),
    Anchor("email", r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"),
)

_WORDS = re.compile(r"\w+")


def load_plan() -> tuple[Plan, str]:
    try:
        from odcf.plan.compiler import compile_file

        plan = compile_file("general")
        return plan, f"bundled `general` ontology ({len(plan.protection.anchors)} anchors, plan {plan.version})"
    except (OdcfError, ImportError) as exc:
        logger.warning("general ontology not available (%s); using the built-in anchor set", exc)
        plan = Plan(domain="rules_benchmark", protection=ProtectionRules(anchors=FALLBACK_ANCHORS))
        return plan, f"built-in fallback anchor set ({len(FALLBACK_ANCHORS)} anchors; general ontology not bundled yet)"


class _Visible(HTMLParser):
    """The naive peer: all text outside script/style/noscript/template/head, whitespace collapsed."""

    _SKIP = {"script", "style", "noscript", "template", "head", "svg"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def naive_text(html: str) -> str:
    p = _Visible()
    p.feed(html)
    p.close()
    return re.sub(r"\s+", " ", " ".join(p.parts)).strip()


def words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORDS.findall(text))


def anchor_survival(plan: Plan, before: str, after: str, shown: str | None = None) -> tuple[int, int, Counter[str]]:
    """(matches before, matches still present after, lost matches by anchor name).

    With *shown*, a match of *before* counts only as often as its text occurs in *shown*.
    """
    total = kept = 0
    lost: Counter[str] = Counter()
    for anchor in plan.protection.anchors:
        found = Counter(m.group(0) for m in anchor.regex.finditer(before) if m.group(0))
        for text, n in found.items():
            if shown is not None:
                n = min(n, shown.count(text))
                if not n:
                    continue
            present = min(n, after.count(text))
            total += n
            kept += present
            if present < n:
                lost[anchor.name] += n - present
    return total, kept, lost


def run_rules(stage: RuleStage, plan: Plan, source: Source) -> tuple[Source, dict[str, Any]]:
    doc = stage(Document.from_sources([source]), plan)
    return doc.sources[0], dict(doc.trace[-1].data["sources"].get(source.id, {}))


def pct(a: float, b: float) -> str:
    """A percentage that never rounds a loss up to 100%."""
    if not b:
        return "n/a"
    value = 100.0 * a / b
    text = f"{value:.1f}%"
    if a != b and text in ("100.0%", "0.0%"):
        text = f"{value:.3f}%"
    return text


# -- (a) HTML ------------------------------------------------------------------------------

def html_part(data: Path, plan: Plan, stage: RuleStage, counter: Any, limit: int | None) -> dict[str, Any]:
    root = data / "html_article_extraction"
    gold = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))
    keys = sorted(gold)[:limit] if limit else sorted(gold)
    acc: Counter[str] = Counter()
    recalls: dict[str, list[float]] = {"naive": [], "rules": []}
    lost_body: Counter[str] = Counter()
    drops: Counter[str] = Counter()
    ms = 0.0
    for key in keys:
        raw = gzip.decompress((root / "html" / f"{key}.html.gz").read_bytes()).decode("utf-8", "replace")
        body = gold[key]["articleBody"]
        t0 = time.perf_counter()
        out, rep = run_rules(stage, plan, Source(id=key[:12], text=raw, kind="html"))
        drops.update(rep.get("html", {}).get("dropped", {}))
        ms += (time.perf_counter() - t0) * 1000
        naive = naive_text(raw)
        g = words(body)
        acc["pages"] += 1
        acc["tokens_raw"] += counter.count(raw)
        acc["tokens_naive"] += counter.count(naive)
        acc["tokens_rules"] += counter.count(out.text)
        acc["gold_words"] += sum(g.values())
        for name, text in (("naive", naive), ("rules", out.text)):
            o = words(text)
            hit = sum((g & o).values())
            acc[f"{name}_hit"] += hit
            acc[f"{name}_words"] += sum(o.values())
            recalls[name].append(hit / max(1, sum(g.values())))
        total, kept, lost = anchor_survival(plan, body, out.text)
        acc["anchors_body"] += total
        acc["anchors_body_kept"] += kept
        lost_body.update(lost)
        # gold-body anchors the page really shows (some gold bodies hold text the page lacks)
        total, kept, _ = anchor_survival(plan, body, out.text, shown=naive)
        acc["anchors_shown"] += total
        acc["anchors_shown_kept"] += kept
        total, kept, _ = anchor_survival(plan, naive, out.text)
        acc["anchors_visible"] += total
        acc["anchors_visible_kept"] += kept
    acc_d: dict[str, Any] = dict(acc)
    acc_d["ms"] = ms
    acc_d["recalls"] = recalls
    acc_d["lost_body"] = dict(lost_body)
    acc_d["drops"] = drops
    return acc_d


# -- (b) JSON ------------------------------------------------------------------------------

def json_one(plan: Plan, stage: RuleStage, counter: Any, source: Source) -> dict[str, Any]:
    out, rep = run_rules(stage, plan, source)
    r: dict[str, Any] = {"tokens_in": counter.count(source.text), "tokens_out": counter.count(out.text)}
    minified = "json_minify" in rep and rep["json_minify"].get("applied", True) and "valid" not in rep["json_minify"]
    r["minified"] = bool(minified)
    r["method"] = rep.get("json_minify", {}).get("method")
    try:
        r["valid_after"] = True
        r["equal"] = json.loads(out.text) == json.loads(source.text)
    except ValueError:
        r["valid_after"] = False
        r["equal"] = out.text == source.text
    r["anchors"], r["anchors_kept"], r["lost"] = anchor_survival(plan, source.text, out.text)
    return r


def json_part(data: Path, plan: Plan, stage: RuleStage, counter: Any, limit: int | None) -> list[dict[str, Any]]:
    root = data / "agent_tau_bench"
    rows: list[dict[str, Any]] = []
    for name in ("retail_orders.json", "retail_products.json", "airline_flights.json"):
        text = (root / name).read_text(encoding="utf-8")
        r = json_one(plan, stage, counter, Source(id=name, text=text, kind="json"))
        r.update(name=f"{name} (1 file)", items=1)
        rows.append(r)
    trajs = json.loads((root / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    outputs = [m["content"] for t in trajs for m in t["traj"] if m.get("role") == "tool" and isinstance(m.get("content"), str)]
    rows.append(_tool_outputs(plan, stage, counter, "gpt-4o-airline.json tool outputs", outputs[: limit * 10] if limit else outputs))
    toolbench = data / "agent_toolbench"
    if toolbench.is_dir():
        outputs = []
        for path in sorted(toolbench.glob("answer__*.json")):
            gen = json.loads(path.read_text(encoding="utf-8")).get("answer_generation", {})
            for conv in gen.get("train_messages", []):
                outputs.extend(m["content"] for m in conv if m.get("role") == "function" and isinstance(m.get("content"), str))
        rows.append(_tool_outputs(plan, stage, counter, "toolbench API responses", outputs[: limit * 10] if limit else outputs))
    return rows


def _tool_outputs(plan: Plan, stage: RuleStage, counter: Any, label: str, outputs: list[str]) -> dict[str, Any]:
    agg: dict[str, Any] = {"name": f"{label} ({len(outputs)})", "items": len(outputs),
                           "tokens_in": 0, "tokens_out": 0, "minified": 0, "valid_after": 0, "not_json": 0,
                           "equal": 0, "anchors": 0, "anchors_kept": 0, "lost": Counter(), "method": Counter()}
    for i, text in enumerate(outputs):
        r = json_one(plan, stage, counter, Source(id=f"tool{i}", text=text, kind="tool"))
        for key in ("tokens_in", "tokens_out", "anchors", "anchors_kept"):
            agg[key] += r[key]
        agg["minified"] += int(r["minified"])
        agg["not_json"] += int(not r["minified"])
        agg["valid_after"] += int(r["valid_after"] and r["minified"])
        agg["equal"] += int(r["equal"])
        agg["lost"].update(r["lost"])
        if r["method"]:
            agg["method"][r["method"]] += 1
    return agg


# -- (d) tables ----------------------------------------------------------------------------

def csv_to_pipe_table(text: str) -> str:
    """A CSV table as the markdown pipe table the HTML rule would render."""
    import csv
    import io

    rows = [[c.replace("|", "\\|").replace("\n", " ").strip() for c in row] for row in csv.reader(io.StringIO(text))]
    rows = [r for r in rows if any(r)]
    width = max((len(r) for r in rows), default=0)
    rows = [r + [""] * (width - len(r)) for r in rows]
    if not rows:
        return ""
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    out.extend("| " + " | ".join(r) + " |" for r in rows[1:])
    return "\n".join(out)


#: (label, plan key, query?) — the peer first.
TABLE_RUNS = (
    ("blind", "header + first/last rows only (peer: no query, no anchors)", "bare", False),
    ("query", "odcf fold, no anchors: + rows with query terms", "bare", True),
    ("general", "odcf fold, `general` ontology: + rows with protected spans + query terms", "general", True),
)


def table_part(data: Path, plan: Plan, counter: Any, limit: int | None) -> dict[str, Any]:
    root = data / "table_wikitablequestions"
    lines = (root / "pristine-unseen-tables.tsv").read_text(encoding="utf-8").split("\n")[1:]
    questions = [ln.split("\t") for ln in lines if ln.strip()]
    if limit:
        questions = questions[: limit * 20]
    plans = {"bare": Plan(domain="tables"), "general": plan}
    segmenter, protector, fold = Segmenter(), Protector(), FoldStage()
    acc: Counter[str] = Counter()
    cache: dict[tuple[str, str], Document] = {}
    raw_seen: set[str] = set()
    for _qid, utterance, context, target in (q[:4] for q in questions if len(q) >= 4):
        csv_text = (root / context).read_text(encoding="utf-8", errors="replace")
        if context not in raw_seen:  # how the segmenter takes the raw CSV
            raw_seen.add(context)
            raw = segmenter(Document.from_sources([Source(id="t", text=csv_text, kind="text")]), plans["bare"])
            acc["raw_tables"] += 1
            acc["raw_one_table"] += int([s.kind for s in raw.segments] == ["table"])
        table = csv_to_pipe_table(csv_text)
        answers = [a.strip().lower() for a in target.split("|") if a.strip()]
        acc["questions"] += 1
        if not answers or not all(a in table.lower() for a in answers):
            continue
        acc["answerable"] += 1
        for key, p in plans.items():
            if (context, key) not in cache:
                doc = Document.from_sources([Source(id="t", text=table, kind="markdown")])
                cache[(context, key)] = protector(segmenter(doc, p), p)
        acc["tokens_before"] += sum(counter.count(s.text) for s in cache[(context, "bare")].segments)
        acc["one_table"] += int([s.kind for s in cache[(context, "bare")].segments] == ["table"])
        for name, _label, key, use_query in TABLE_RUNS:
            doc = cache[(context, key)].replace(query=utterance if use_query else None)
            out = fold(doc, plans[key])
            text = "\n".join(s.text for s in out.segments).lower()
            acc[f"tokens_{name}"] += sum(counter.count(s.text) for s in out.segments)
            acc[f"kept_{name}"] += int(all(a in text for a in answers))
            acc[f"folded_{name}"] += int(any(s.status == "folded" for s in out.segments))
    return dict(acc)


# -- report ----------------------------------------------------------------------------------

def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def render(h: dict[str, Any], js: list[dict[str, Any]], tb: dict[str, Any], plan_note: str, command: str,
           elapsed: float) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPU(s)"
    lines = [
        "# Rule stage on real data",
        "",
        f"- command: `{command}`",
        f"- date: {now}; machine: {machine}; total run time {elapsed:.1f} s",
        "- tokens: o200k_base (`odcf.tokens.get_counter`)",
        f"- anchors: {plan_note}",
        "",
        f"## (a) HTML pages → semantic text ({h['pages']} pages of html_article_extraction)",
        "",
        "| text | tokens | vs raw | gold-body word recall (pooled) | mean per-page recall | min page recall | precision (gold words / output words) |",
        "|---|---|---|---|---|---|---|",
        f"| raw HTML | {h['tokens_raw']:,} | 100% | | | | |",
    ]
    for name, label in (("naive", "naive peer: all visible text"), ("rules", "odcf rules (html + noise)")):
        rec = h["recalls"][name]
        lines.append(
            f"| {label} | {h[f'tokens_{name}']:,} | {pct(h[f'tokens_{name}'], h['tokens_raw'])} "
            f"| {pct(h[f'{name}_hit'], h['gold_words'])} | {100 * _mean(rec):.1f}% | {100 * min(rec):.1f}% "
            f"| {pct(h[f'{name}_hit'], h[f'{name}_words'])} |"
        )
    low = sorted(h["recalls"]["rules"])
    lines += [
        "",
        f"Rules output vs the naive peer: {pct(h['tokens_rules'], h['tokens_naive'])} of its tokens. "
        f"Pages with rules recall below 90%: {sum(r < 0.9 for r in low)}; below 50%: {sum(r < 0.5 for r in low)}. "
        f"Rule stage time: {h['ms'] / max(1, h['pages']):.1f} ms per page.",
        "",
        "Dropped elements, all pages (top 12 reasons): "
        + ", ".join(f"{k} {v:,}" for k, v in h["drops"].most_common(12)) + ".",
        "",
        "## (b) tool JSON → minified JSON (tau-bench tables and trajectories, toolbench API responses)",
        "",
        "| input | tokens before | tokens after | after/before | minified | valid JSON after (of minified) | same value (or text) after | method |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in js:
        if r["items"] == 1:
            lines.append(
                f"| {r['name']} | {r['tokens_in']:,} | {r['tokens_out']:,} | {pct(r['tokens_out'], r['tokens_in'])} "
                f"| {'yes' if r['minified'] else 'no'} | {'yes' if r['valid_after'] else 'no'} "
                f"| {'yes' if r['equal'] else 'no'} | {r['method']} |"
            )
        else:
            methods = ", ".join(f"{k}: {v}" for k, v in sorted(r["method"].items()))
            lines.append(
                f"| {r['name']} | {r['tokens_in']:,} | {r['tokens_out']:,} | {pct(r['tokens_out'], r['tokens_in'])} "
                f"| {r['minified']} of {r['items']} ({r['not_json']} not valid JSON: prose, empty or truncated; left as is) "
                f"| {r['valid_after']} of {r['minified']} | {r['equal']} of {r['items']} | {methods} |"
            )
    lines += [
        "",
        "toolbench responses wrap the API payload in a JSON *string* (`{\"error\": \"\", \"response\": \"[{\\\"id\\\": ...`), "
        "so minifying the outer object saves little (the payload string keeps its value; only its \\\\uXXXX escapes become characters).",
    ]
    lines += [
        "",
        "## (c) anchor matches present before the rules and still present after",
        "",
        "| corpus | matches before | still present after | share | lost, by anchor |",
        "|---|---|---|---|---|",
        f"| HTML: gold article bodies ({h['pages']} pages) | {h['anchors_body']:,} | {h['anchors_body_kept']:,} "
        f"| {pct(h['anchors_body_kept'], h['anchors_body'])} | {_lost(h['lost_body'])} |",
        f"| HTML: gold-body matches the page really shows | {h['anchors_shown']:,} | {h['anchors_shown_kept']:,} "
        f"| {pct(h['anchors_shown_kept'], h['anchors_shown'])} | |",
        f"| HTML: all visible text (naive peer; includes menus, footers, ads) | {h['anchors_visible']:,} "
        f"| {h['anchors_visible_kept']:,} | {pct(h['anchors_visible_kept'], h['anchors_visible'])} | dropped with chrome, by design |",
    ]
    for r in js:
        lines.append(f"| {r['name']} | {r['anchors']:,} | {r['anchors_kept']:,} | {pct(r['anchors_kept'], r['anchors'])} "
                     f"| {_lost(r['lost'])} |")
    n = tb.get("answerable", 0)
    lines += [
        "",
        f"## (d) table folding on WikiTableQuestions ({tb.get('questions', 0):,} questions; "
        f"{n:,} whose answer text occurs in the table)",
        "",
        "Each CSV table is rendered as a markdown pipe table (as the HTML rule renders tables), segmented "
        "and protected by the real stages, then folded (max_rows 8, head 2, tail 1) with the question as "
        f"the query. {tb.get('one_table', 0):,} of {n:,} came out of the segmenter as one `table` segment. "
        f"(Given the raw quoted CSV instead, the segmenter made one `table` segment of "
        f"{tb.get('raw_one_table', 0)} of {tb.get('raw_tables', 0)} distinct tables.)",
        "",
        "| fold | tokens before | tokens after | after/before | questions whose table was folded | answer still in the text |",
        "|---|---|---|---|---|---|",
    ]
    for name, label, _key, _q in TABLE_RUNS:
        lines.append(
            f"| {label} | {tb.get('tokens_before', 0):,} | {tb.get(f'tokens_{name}', 0):,} "
            f"| {pct(tb.get(f'tokens_{name}', 0), tb.get('tokens_before', 0))} | {tb.get(f'folded_{name}', 0):,} "
            f"| {tb.get(f'kept_{name}', 0):,} of {n:,} ({pct(tb.get(f'kept_{name}', 0), n)}) |"
        )
    lines += [
        "",
        "The `general` ontology protects every number, date and identifier, and a row holding a protected "
        "span is never folded: numeric tables then stay almost whole. Answers that need every row (counts, "
        "superlatives, \"which came next\") are lost when their rows are folded; the `[DATA_ROWS: n]` marker "
        "says how many rows are missing, and `pipeline: {fold: {tables: false}}` (or a larger `max_rows`) keeps "
        "tables whole for such tasks. \"Answer still in the text\" is a lenient check: every part of the gold "
        "answer occurs somewhere in the folded text (a short number may match another row).",
    ]
    lines += [
        "",
        "Notes: word recall counts each gold word occurrence at most as often as it occurs in the output "
        "(multiset); pages whose gold body holds text outside the article (menus, captions, pull quotes) "
        "lower recall and are counted, not excluded. Gold-body anchors not kept (2026-11-30 run) were in a pull quote that "
        "repeats a body sentence (dropped with its aside) and in a \"Story Timeline\" list of links to other stories "
        "that one gold body includes. An anchor counts as present when its matched text occurs in the "
        "output as many times as in the input.",
        "",
    ]
    return "\n".join(lines)


def _lost(lost: dict[str, int] | Counter[str]) -> str:
    items = [(k, v) for k, v in sorted(dict(lost).items()) if v]
    return ", ".join(f"{k}: {v}" for k, v in items) if items else "none"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (html_article_extraction, agent_tau_bench)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "rules_real_data.md")
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages (quick check)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for folder in ("html_article_extraction", "agent_tau_bench"):
        if not (args.data / folder).is_dir():
            print(f"error: {args.data / folder}: no such folder (is --data the shared data folder?)", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    plan, plan_note = load_plan()
    stage = RuleStage()
    counter = get_counter("o200k_base")
    h = html_part(args.data, plan, stage, counter, args.limit)
    js = json_part(args.data, plan, stage, counter, args.limit)
    tb = table_part(args.data, plan, counter, args.limit) if (args.data / "table_wikitablequestions").is_dir() else {}
    command = "python benchmarks/rules_on_real_data.py --data " + str(args.data) + (f" --limit {args.limit}" if args.limit else "")
    text = render(h, js, tb, plan_note, command, time.perf_counter() - t0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
