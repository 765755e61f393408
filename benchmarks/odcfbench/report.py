"""Tables, summary and plots from scored rows. Called by :mod:`odcfbench.runner`."""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from typing import Any

from odcfbench import metrics

LOWER_IS_BETTER = {"chrome_share"}

#: What had to be adapted to run each peer offline and on a token budget (all checked while building).
PEER_NOTES = (
    "sumy's own tokenizer needs NLTK `punkt` data, which cannot be downloaded here: LexRank/TextRank get the "
    "harness's sentences and words (jieba for Chinese) through a small tokenizer object.",
    "LangChain: `EmbeddingsFilter(k=None, similarity_threshold=...)` still cut at 20 documents in this version, "
    "so k is set to the number of sentences and the harness fills by the returned similarity order.",
    "LlamaIndex: the optimizer's NLTK punkt splitter does not split Chinese at 。, so a CMRC paragraph is one "
    "\"sentence\"; when it does not fit the budget the output is empty (that is the tool's behaviour, kept).",
    "llmlingua 0.2.2 downloads tiktoken's BPE file in `PromptCompressor.__init__`; tiktoken is replaced by odcf's "
    "o200k_base counter (so its `target_token` is counted in the same tokenizer). It also picks its word-merging "
    "rule from the model *name* (only `bert-base-multilingual-cased` / `xlm-roberta-large` are known): the local "
    "checkpoint is reached through a symlink whose name selects the WordPiece rule. The checkpoint is uncased, "
    "so LLMLingua-2's output is lowercased text rebuilt from word pieces: case-sensitive ID checks "
    "(agent tasks, KV) count `hat136` for `HAT136` as lost, which is what a reader of that output gets.",
    "odcf's output includes its source header line (`[source 1/1] ...`); it is counted in its tokens; for "
    "`json_valid` the header line is removed before parsing.",
)


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isinf(v):
            return "∞"
        return f"{v:.{nd}f}"
    return str(v)


def aggregate(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    """(task, system, label) -> n, errors, metrics, token and time figures."""
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["task"], r["system"], r["label"])].append(r)
    out = {}
    for key, rs in groups.items():
        names = sorted({k for r in rs for k in r["scores"]})
        tin = sum(r["tokens_in"] for r in rs)
        tout = sum(r["tokens_out"] for r in rs)
        secs = sum(r["ms"] for r in rs) / 1000.0
        out[key] = {
            "n": len(rs), "errors": sum(1 for r in rs if r["error"]),
            "metrics": {m: metrics.aggregate([r["scores"][m] for r in rs if m in r["scores"]]) for m in names},
            "budget_mean": sum(r["budget"] for r in rs) / len(rs),
            "tokens_out_mean": tout / len(rs),
            "over_budget": sum(1 for r in rs if r["tokens_out"] > r["budget"]) / len(rs),
            "ratio": (tin / tout) if tout else math.inf,
            "ms": secs * 1000.0 / len(rs),
            "tok_s": (tin / secs) if secs > 0 else math.inf,
        }
    return out


def _label_sort(label: str) -> float:
    try:
        return float(label.rstrip("x"))
    except ValueError:
        return 0.0


def summary(tasks, agg, systems, rows, capped=None) -> tuple[list[str], list[tuple[float, str]]]:
    """Per task and budget: odcf against the best peer on the primary metric, each pair compared on
    the examples both completed (time caps can leave a slow peer with fewer); and odcf's deficits."""
    by: dict[tuple[str, str, str], dict[str, dict]] = defaultdict(dict)
    for r in rows:
        by[(r["task"], r["system"], r["label"])][r["id"]] = r
    lines, gaps = [], []
    for t in tasks:
        labels = sorted({k[2] for k in agg if k[0] == t.name}, key=_label_sort)
        for label in labels:
            od_rows = by.get((t.name, "odcf", label), {})
            od = agg.get((t.name, "odcf", label))
            cands = []
            for s in systems:
                pr = by.get((t.name, s, label), {})
                if s.startswith("odcf") or not pr:  # odcf variants are not peers
                    continue
                common = sorted(set(pr) & set(od_rows)) if od_rows else sorted(pr)
                if not common:
                    continue
                pv = metrics.aggregate([pr[i]["scores"][t.metric] for i in common if t.metric in pr[i]["scores"]])
                ov = metrics.aggregate([od_rows[i]["scores"][t.metric] for i in common
                                        if t.metric in od_rows[i]["scores"]]) if od_rows else None
                if pv is not None:
                    cands.append((pv, s, ov, len(common)))
            if not cands:
                continue
            # a peer stopped early by the time cap is only "best" when it covers enough examples
            n_od = len(od_rows)
            need = min(n_od, max(5, math.ceil(0.5 * n_od))) if n_od else 0
            # ... and only when it met the budget (over budget in at most 10% of the examples)
            eligible = [c for c in cands if c[3] >= need and agg[(t.name, c[1], label)]["over_budget"] <= 0.10] \
                or [c for c in cands if c[3] >= need] or cands
            bv, best_s, ov, n = max(eligible, key=lambda c: c[0])
            best = agg[(t.name, best_s, label)]
            if ov is None:
                why = ("odcf was stopped by the time cap before this task" if (capped or {}).get(t.name)
                       else "odcf has no result")
                lines.append(f"- **{t.name} @ {label}** ({t.metric}): {why}; best peer {best_s} {bv:.3f}.")
                gaps.append((1.0, f"{t.name} @ {label}: {why} (best peer {best_s} {bv:.3f})"))
                continue
            d = ov - bv
            flag = ""
            if od["over_budget"] > 0:
                flag += f"; odcf over budget in {od['over_budget']:.0%} of examples"
            if best["over_budget"] > 0:
                flag += f"; {best_s} over budget in {best['over_budget']:.0%}"
            subset = "" if n == od["n"] else f" (on the {n} examples both completed)"
            for sec in t.secondary:
                o2, b2 = od["metrics"].get(sec), best["metrics"].get(sec)
                if o2 is not None and b2 is not None:
                    flag += f"; {sec}: odcf {o2:.3f}, {best_s} {b2:.3f}"
            verdict = "leads" if d > 0.005 else ("trails" if d < -0.005 else "ties")
            lines.append(f"- **{t.name} @ {label}** ({t.metric}): odcf {ov:.3f} vs best peer {best_s} {bv:.3f}"
                         f"{subset} → {verdict} ({d:+.3f}); odcf ratio {_fmt(od['ratio'], 2)}x, "
                         f"{_fmt(od['ms'], 1)} ms/example{flag}.")
            if d < -0.005:
                gaps.append((-d, f"{t.name} @ {label}: odcf {ov:.3f} vs {best_s} {bv:.3f} ({d:+.3f} {t.metric})"))
    gaps.sort(key=lambda g: -g[0])
    return lines, gaps


def _plots(out_dir, tasks, agg, systems, long_rows, speed, long_tokens=0) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401

    files = []
    n = len(tasks)
    cols = 4 if n > 6 else max(1, min(n, 3))
    rows_n = math.ceil(n / cols) if n else 1
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.4 * rows_n), squeeze=False)
    cmap = plt.get_cmap("tab10")
    colors = {s: cmap(i % 10) for i, s in enumerate(systems)}
    for ax, t in zip(axes.flat, tasks):
        for s in systems:
            pts = sorted(((v["ratio"], v["metrics"].get(t.metric)) for k, v in agg.items()
                          if k[0] == t.name and k[1] == s and v["metrics"].get(t.metric) is not None
                          and not math.isinf(v["ratio"])))
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", label=s, color=colors[s], linewidth=2.4 if s == "odcf" else 1.2,
                    zorder=3 if s == "odcf" else 2)
        ax.set_title(f"{t.name}", fontsize=10)
        ax.set_xlabel("achieved compression ratio (x)", fontsize=8)
        ax.set_ylabel(t.metric, fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.1f"))
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 9), fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    p = os.path.join(out_dir, "retention_vs_ratio.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)

    if long_rows or speed.get("odcf") or speed.get("bert_base"):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [3, 1]})
        names = [s for s in systems if long_rows.get(s)]
        vals = [long_rows[s]["tok_s"] for s in names]
        a1.bar(names, vals, color=[colors[s] for s in names])
        a1.set_yscale("log")
        a1.set_ylabel("input tokens / s (o200k), log scale")
        a1.set_xlabel("hatched: stopped at its time limit (rate is an upper bound)", fontsize=8)
        a1.set_title(f"long document ({long_tokens:,} tokens, budget 4x): throughput per system", fontsize=10)
        a1.tick_params(axis="x", rotation=30)
        for i, (s_, v) in enumerate(zip(names, vals)):
            stopped = long_rows[s_].get("stopped")
            if stopped:  # did not finish within its limit: the bar is an upper bound
                a1.patches[i].set_hatch("//")
                a1.patches[i].set_alpha(0.5)
            a1.text(i, v, ("< " if stopped else "") + f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
        mm = [(k, speed[k]) for k in ("odcf", "bert_base") if k in speed]
        if mm:
            toks = speed.get("o200k_tokens", 0)
            a2.bar([("odcf model" if k == "odcf" else "BERT-base int8") for k, _ in mm],
                   [toks / v["seconds_best"] for _, v in mm],
                   color=[colors.get("odcf", "tab:olive") if k == "odcf" else "tab:gray" for k, _ in mm])
            a2.set_ylabel("text tokens / s (o200k)")
            title = "model only (ONNX Runtime, int8)"
            if "speedup_vs_bert_base" in speed:
                title += f": {speed['speedup_vs_bert_base']:.1f}x"
            a2.set_title(title, fontsize=10)
        else:
            a2.axis("off")
        fig.tight_layout()
        p = os.path.join(out_dir, "throughput.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


def write(out_dir, mode, run, tasks, rows, results, long_ex, long_results, speed) -> None:
    systems = list(results)
    agg = aggregate(rows)
    long_rows: dict[str, dict] = {}
    for s, res in long_results.items():
        if res["rows"]:
            r = res["rows"][0]
            from odcfbench.text import count

            tout = count(r["output"] or "")
            long_rows[s] = {"ms": r["ms"], "tok_s": long_ex["tokens_in"] / (r["ms"] / 1000.0),
                            "stopped": bool(r["error"]),
                            "tokens_out": tout, "budget": r["budget"], "error": r["error"],
                            "rss_peak_mb": res["meta"].get("rss_peak_long_mb")}
    prefix = "" if mode == "full" else "quick_"
    plot_files = _plots(out_dir, tasks, agg, systems, long_rows, speed, long_ex["tokens_in"] if long_ex else 0)
    if prefix:
        renamed = []
        for p in plot_files:
            q = os.path.join(os.path.dirname(p), prefix + os.path.basename(p))
            os.replace(p, q)
            renamed.append(q)
        plot_files = renamed
    lines_sum, gaps = summary(tasks, agg, systems, rows, results.get("odcf", {}).get("meta", {}).get("capped"))

    md: list[str] = []
    md.append(f"# odcf vs peers on real data ({mode} run)\n")
    md.append(f"Generated by `{run['command']}` on {run['started']} (git {run['git']}), "
              f"{run['total_s'] / 60:.1f} min in all.  ")
    if run.get("rerendered"):
        md.append(f"Tables and plots re-rendered from that run's saved outputs by `{run['rerendered']}` "
                  "(no system was run again).  ")
    m = run["machine"]
    md.append(f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM, Python {m['python']}; every system "
              f"ran with {run['threads']} thread(s) in its own process, one after another (the machine is shared "
              f"with other jobs, so timings carry noise).\n")
    md.append("## Summary: odcf against the best peer, per task and budget\n")
    md.append("Best peer = the highest primary figure among peers that covered at least half of odcf's examples "
              "(or 5) and stayed within the budget in at least 90% of them; each pair is compared on the "
              "examples both completed.\n")
    md.extend(lines_sum or ["- (no comparable results)"])
    md.append("\n### The three biggest gaps (odcf behind the best peer) — the next work\n")
    if gaps:
        for i, (_, g) in enumerate(gaps[:3], 1):
            md.append(f"{i}. {g}")
    else:
        md.append("- odcf is not behind the best peer on any task's primary metric in this run.")
    if long_rows.get("odcf"):
        fastest = max((s for s in long_rows if not s.startswith("odcf") and not long_rows[s]["error"]),
                      key=lambda s: long_rows[s]["tok_s"], default=None)
        if fastest:
            md.append(f"\nLong document: odcf {long_rows['odcf']['tok_s']:,.0f} tokens/s vs fastest peer "
                      f"{fastest} {long_rows[fastest]['tok_s']:,.0f} tokens/s.")
    if "speedup_vs_bert_base" in speed:
        md.append(f"Model only: odcf's compressor model is {speed['speedup_vs_bert_base']:.2f}x the speed of a "
                  f"BERT-base-sized int8 ONNX classifier on the same text.")

    md.append("\n## Systems and how each is fitted to the budget\n")
    md.append("Every system gets the same text, query and budget in `o200k_base` tokens; every output is "
              "counted by the harness with the same counter. Peak RSS is `ru_maxrss` of the system's own "
              "worker process (base = after loading the harness and examples, before the system's models).\n")
    md.append("| system | how it meets the budget | load s | RSS base MB | RSS peak MB | errors | versions |")
    md.append("|---|---|---|---|---|---|---|")
    for s, res in results.items():
        mt = res["meta"]
        err = mt.get("load_error") or mt.get("run_error")
        vers = ", ".join(f"{k} {v}" for k, v in (mt.get("versions") or {}).items())
        note = mt.get("note", "") if not err else f"**could not run**: `{err[:300]}`"
        md.append(f"| {s} | {note} | {_fmt(mt.get('load_s'), 1)} | {_fmt(mt.get('rss_base_mb'), 0)} | "
                  f"{_fmt(mt.get('rss_peak_mb'), 0)} | {mt.get('errors', '–')} | {vers} |")
    md.append("\nAdapting the peers (read before comparing):\n")
    md.extend(f"- {n}" for n in PEER_NOTES)
    capped = {s: r["meta"].get("capped") for s, r in results.items() if r["meta"].get("capped")}
    if capped:
        md.append(f"\nTime caps: a system whose compress time on one task passed {run['cap_s']:.0f} s, or in all "
                  f"passed {run.get('cap_total_s', 0):.0f} s, skipped the rest (odcf, the system under test: "
                  f"{run.get('odcf_caps', {}).get('task', 0):.0f} s and {run.get('odcf_caps', {}).get('total', 0):.0f} s); "
                  "its n is then smaller, and the summary compares odcf and each peer on the examples both "
                  "completed: " +
                  "; ".join(f"{s}: " + ", ".join(f"{t} {n} examples skipped" for t, n in c.items())
                            for s, c in capped.items()))
    if run.get("skipped_tasks"):
        md.append("\nSkipped tasks: " + "; ".join(f"{k}: {v}" for k, v in run["skipped_tasks"].items()))

    md.append("\n## Tasks\n")
    for t in tasks:
        md.append(f"### {t.name}: {t.title}\n")
        md.append(f"{len(t.examples)} examples (seeded sample). Budget: {t.budget_doc}.  ")
        if len({k[2] for k in agg if k[0] == t.name}) > 1:
            md.append("Budgets run one after another on the same text (smallest ratio first); a system that "
                      "caches work per text pays it in the first row.  ")
        md.append(f"Metric `{t.metric}`: {t.metric_doc}.\n")
        mnames = [t.metric] + list(t.secondary)
        md.append("| budget | system | n | " + " | ".join(mnames) +
                  " | tokens out / budget | over budget | ratio | ms/example | tokens/s |")
        md.append("|---|---|---|" + "---|" * len(mnames) + "---|---|---|---|---|")
        labels = sorted({k[2] for k in agg if k[0] == t.name}, key=_label_sort)
        for label in labels:
            for s in systems:
                v = agg.get((t.name, s, label))
                if not v:
                    continue
                name = f"**{s}**" if s == "odcf" else s
                errs = f" ({v['errors']} err)" if v["errors"] else ""
                md.append(f"| {label} | {name} | {v['n']}{errs} | " +
                          " | ".join(_fmt(v["metrics"].get(mn)) for mn in mnames) +
                          f" | {_fmt(v['tokens_out_mean'], 0)} / {_fmt(v['budget_mean'], 0)} | "
                          f"{v['over_budget']:.0%} | {_fmt(v['ratio'], 2)} | {_fmt(v['ms'], 1)} | "
                          f"{_fmt(v['tok_s'], 0)} |")
        md.append("")
        positions = sorted({r["pos"] for r in rows if r["task"] == t.name and r.get("pos") is not None})
        if positions:
            md.append(f"{t.metric} by position of the gold passage (0 = first of 20):\n")
            md.append("| budget | system | " + " | ".join(f"pos {p}" for p in positions) + " |")
            md.append("|---|---|" + "---|" * len(positions))
            for label in labels:
                for s in systems:
                    cells = []
                    for p in positions:
                        vals = [r["scores"][t.metric] for r in rows if r["task"] == t.name and r["system"] == s
                                and r["label"] == label and r.get("pos") == p]
                        cells.append(f"{metrics.aggregate(vals):.2f} ({len(vals)})" if vals else "–")
                    if any(c != "–" for c in cells):
                        md.append(f"| {label} | {s} | " + " | ".join(cells) + " |")
            md.append("")

    md.append("## Speed\n")
    if long_ex is not None:
        md.append(f"### Long document: {long_ex['tokens_in']:,} tokens (QMSum transcripts concatenated), "
                  f"budget {long_ex['budgets'].get('4x')} (4x)\n")
        md.append("| system | seconds | input tokens/s | tokens out | process peak RSS MB (after it) | note |")
        md.append("|---|---|---|---|---|---|")
        for s in systems:
            lr = long_rows.get(s)
            res = long_results.get(s, {})
            if lr:
                lt = "< " if lr.get("stopped") else ""  # did not finish: the rate is an upper bound
                md.append(f"| {s} | {lr['ms'] / 1000:.2f} | {lt}{lr['tok_s']:,.0f} | {lr['tokens_out']} | "
                          f"{_fmt(lr['rss_peak_mb'], 0)} | {lr['error'] or ''} |")
            else:
                mt = res.get("meta", {})
                why = mt.get("run_error") or mt.get("load_error") or "no result"
                md.append(f"| {s} | – | – | – | – | {why[:200]} (limit {run['long_cap_s']:.0f} s) |")
        md.append(f"\nEach system gets one call with a {run['long_cap_s']:.0f} s limit (odcf "
                  f"{run.get('odcf_caps', {}).get('long', run['long_cap_s']):.0f} s), enforced with SIGALRM between "
                  "Python steps: a system inside one long native call (one big embedding batch) finishes that "
                  "call first, so its time can pass the limit. `<` marks a system stopped at its limit.")
    md.append("\n### Compressor model alone vs an LLMLingua-2-small-shaped classifier\n")
    if speed:
        md.append(f"Same text ({speed.get('chars', 0):,} characters, {speed.get('o200k_tokens', 0):,} o200k tokens), "
                  f"{speed.get('window', 256)}-token windows in batches of 8, ONNX Runtime CPU, {speed.get('threads')} "
                  "thread(s), best of 3.\n")
        md.append("| model | file MB | windows | model tokens | seconds | text tokens/s |")
        md.append("|---|---|---|---|---|---|")
        for k, name in (("odcf", "odcf compressor (shipped)"), ("bert_base", "BERT-base token classifier, int8")):
            v = speed.get(k)
            if v:
                md.append(f"| {name}: `{v['model']}` | {v['model_mb']:.1f} | {v['windows']} | {v['model_tokens']:,} | "
                          f"{v['seconds_best']:.2f} | {speed.get('o200k_tokens', 0) / v['seconds_best']:,.0f} |")
            else:
                md.append(f"| {name} | – | – | – | – | {speed.get(k + '_error', 'not run')} |")
        if speed.get("bert_base_recipe"):
            md.append(f"\nBERT-base recipe: {speed['bert_base_recipe']}.")
        if "speedup_vs_bert_base" in speed:
            md.append(f"**Ratio: odcf's model runs {speed['speedup_vs_bert_base']:.2f}x as fast as the BERT-base-sized "
                      f"classifier on the same text.**")
        if speed.get("error"):
            md.append(f"Speed run failed: {speed['error']}")
    md.append("\n## Plots\n")
    for p in plot_files:
        md.append(f"![{os.path.basename(p)}]({os.path.basename(p)})")
    md.append("")
    name = "latest.md" if mode == "full" else "quick.md"
    with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    with open(os.path.join(out_dir, f"{prefix}results.json"), "w", encoding="utf-8") as f:
        json.dump({"run": run, "aggregate": {"|".join(k): v for k, v in sorted(agg.items())},
                   "systems": {s: r["meta"] for s, r in results.items()}, "long": long_rows, "speed": speed},
                  f, indent=1, default=str)
