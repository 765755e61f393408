"""Measure multi-agent handoffs on real public data (a program, not a test).

    python benchmarks/handoff_real_data.py --data ../shared/data [--stages lexical|default] [--limit N]
        [--out benchmarks/results/handoff_real_data.md]

``--stages lexical`` (the default here) runs the model-free pipeline (rules, segment, protect, fold,
rank, budget, assemble) for both the handoff and the peer; ``default`` adds the model stages the
installed build enables (entities, rerank, dedup, verify), which is much slower on a small machine.

(a) agent_tau_bench, 200 airline trajectories (system prompt as the instruction, the rest as
    OpenAI-style messages), handed to an executor (1500 tokens) and a reviewer (3000 tokens) under
    the bundled ``agent_ops`` ontology: errors, handoffs over budget, tokens in/out, time per
    handoff, history turns per mode, conflicts found; and two retention measures against the peer
    a user would otherwise run — the same messages through plain ``Compressor.compress`` (one
    history source per message, same role and budget): the share of the last 3 turns delivered
    verbatim, and the share of identifiers (reservation codes, user ids, flight numbers, payment
    ids) of the trajectory still in the text.
(b) dialog_sgd, 128 dialogues: the user's final slot values as ``user_constraints`` items (marked
    optional by the caller, listed after the chat) plus the dialogue as messages, handed to an
    executor at 150 / 300 / 600 tokens: share of slot values in the delivered text, against plain
    ``compress`` of the same material (slots as ordinary fact sources).

Writes a markdown table to ``--out`` and prints it.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

from odcf.compressor import Compressor  # noqa: E402
from odcf.handoff.conflicts import _id_regex  # noqa: E402
from odcf.handoff.engine import handoff  # noqa: E402
from odcf.handoff.items import parse_items  # noqa: E402


def tau_items(traj: list[dict[str, Any]]) -> dict[str, Any]:
    return {"instruction": traj[0]["content"], "messages": traj[1:]}


def plain_sources(batch: Any) -> list[dict[str, Any]]:
    """The peer's input: the same items as core sources, no handoff rules."""
    out = []
    for it in batch.items:
        text = f"{it.speaker}: {it.text}" if it.layer == "history" and it.speaker else it.text
        out.append({"id": it.id, "text": text or "(empty)", "layer": it.layer,
                    "kind": "chat" if it.layer == "history" else "text", "origin": it.origin, "category": it.category})
    return out


def ids_in(text: str, patterns: list[re.Pattern[str]]) -> set[str]:
    return {m.group(0) for rx in patterns for m in rx.finditer(text)}


def run_tau(data: Path, comp: Compressor, limit: int | None = None) -> dict[str, Any]:
    trajs = json.loads((data / "agent_tau_bench" / "gpt-4o-airline.json").read_text(encoding="utf-8"))[:limit]
    patterns = _id_regex()
    stats: dict[str, Any] = {}
    # the airline policy prompt alone is 1248 tokens: budgets leave room for the conversation
    for role, budget in (("executor", 2500), ("reviewer", 4000)):
        errors = over = 0
        t_in: list[int] = []
        t_out: list[int] = []
        ms: list[float] = []
        modes: dict[str, int] = {}
        conflicts = with_conflicts = 0
        last3 = {"handoff": [0, 0], "compress": [0, 0]}
        idr = {"handoff": [0, 0], "compress": [0, 0]}
        for t in trajs:
            items = tau_items(t["traj"])
            batch = parse_items(items)
            t0 = time.perf_counter()
            try:
                r = handoff(comp, role=role, items=batch, budget=budget)
            except Exception:  # noqa: BLE001 - counted, the run goes on
                errors += 1
                continue
            ms.append((time.perf_counter() - t0) * 1000)
            p = comp.compress(plain_sources(batch), role=role, budget=budget)
            over += r.tokens > budget
            t_in.append(r.tokens_in)
            t_out.append(r.tokens)
            for turn in r.record["handoff"]["history"]:
                modes[turn["mode"]] = modes.get(turn["mode"], 0) + 1
            conflicts += len(r.record["conflicts"])
            with_conflicts += bool(r.record["conflicts"])
            hist = [it for it in batch.items if it.layer == "history" and it.text.strip()]
            for it in hist[-3:]:
                line = f"{it.speaker}: {it.text.strip()}"
                for name, text in (("handoff", r.text), ("compress", p.text)):
                    last3[name][0] += line in text
                    last3[name][1] += 1
            wanted = ids_in("\n".join(it.text for it in batch.items), patterns)
            for name, text in (("handoff", r.text), ("compress", p.text)):
                idr[name][0] += len(wanted & ids_in(text, patterns))
                idr[name][1] += len(wanted)
        stats[role] = {
            "budget": budget, "runs": len(ms), "errors": errors, "over_budget": over,
            "tokens_in_median": statistics.median(t_in), "tokens_out_median": statistics.median(t_out),
            "ms_median": round(statistics.median(ms), 1), "ms_p95": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1),
            "modes": modes, "conflicts": conflicts, "with_conflicts": with_conflicts,
            "last3": {k: v[0] / v[1] for k, v in last3.items()}, "ids": {k: v[0] / v[1] for k, v in idr.items()},
        }
    return stats


def sgd_case(d: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    messages = [{"role": "user" if t["speaker"] == "USER" else "assistant", "content": t["utterance"]}
                for t in d["turns"]]
    slots: dict[str, str] = {}
    for t in d["turns"]:
        if t["speaker"] == "USER":
            for f in t["frames"]:
                for k, v in f.get("state", {}).get("slot_values", {}).items():
                    slots[k] = v[0]
    return messages, slots


def run_sgd(data: Path, comp: Compressor, limit: int | None = None) -> dict[int, dict[str, Any]]:
    dialogues = json.loads((data / "dialog_sgd" / "dialogues_001.json").read_text(encoding="utf-8"))[:limit]
    out: dict[int, dict[str, Any]] = {}
    for budget in (150, 300, 600):
        kept = {"handoff": 0, "compress": 0}
        total = over = 0
        for d in dialogues:
            messages, slots = sgd_case(d)
            items = {"instruction": "Complete the user's booking exactly as agreed.",
                     "searched": ["task", "counterexamples", "preconditions"],
                     "messages": messages,
                     "items": [{"id": f"slot-{k}", "category": "user_constraints", "optional": True,
                                "origin": "sgd:slot_values", "text": f"{k.replace('_', ' ')}: {v}"}
                               for k, v in slots.items()]}
            batch = parse_items(items)
            r = handoff(comp, role="executor", items=batch, budget=budget)
            p = comp.compress(plain_sources(batch), role="executor", budget=budget)
            over += r.tokens > budget
            for v in slots.values():
                total += 1
                kept["handoff"] += v in r.text
                kept["compress"] += v in p.text
        out[budget] = {"slots": total, "dialogues": len(dialogues), "over_budget": over,
                       **{k: v / total for k, v in kept.items()}}
    return out


def table(tau: dict[str, Any], sgd: dict[int, dict[str, Any]], cmd: str, stages: list[str]) -> str:
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    lines = [
        "# Multi-agent handoff on real data",
        "",
        f"Generated {_dt.date.today().isoformat()} by `{cmd}` (o200k_base tokens; ontology `agent_ops`;"
        " peer: plain `Compressor.compress` of the same items, same role and budget).",
        "",
        f"Pipeline stages: {', '.join(stages)} (+ handoff_priority before budget in the handoff). "
        "Timings are wall-clock on a shared 2-core machine.",
        "",
        f"## tau-bench airline, {tau['executor']['runs'] + tau['executor']['errors']} trajectories",
        "",
        "| role | budget | handoffs | errors | over budget | median tokens in → out | median / p95 ms | "
        "last 3 turns verbatim: handoff / peer | ids kept: handoff / peer | conflicts (trajectories) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for role, s in tau.items():
        lines.append(
            f"| {role} | {s['budget']} | {s['runs']} | {s['errors']} | {s['over_budget']} | "
            f"{s['tokens_in_median']:.0f} → {s['tokens_out_median']:.0f} | {s['ms_median']} / {s['ms_p95']} | "
            f"{pct(s['last3']['handoff'])} / {pct(s['last3']['compress'])} | "
            f"{pct(s['ids']['handoff'])} / {pct(s['ids']['compress'])} | {s['conflicts']} ({s['with_conflicts']}) |")
    lines += ["", "History turns by mode (all handoffs of a role): "
              + "; ".join(f"{role}: " + ", ".join(f"{k} {v}" for k, v in sorted(s["modes"].items()))
                          for role, s in tau.items()), "",
              "## SGD dialogues, user slot values handed to an executor", "",
              "| budget | dialogues | slot values | over budget | kept by handoff | kept by peer |",
              "|---|---|---|---|---|---|"]
    for budget, s in sgd.items():
        lines.append(f"| {budget} | {s['dialogues']} | {s['slots']} | {s['over_budget']} | {pct(s['handoff'])} | "
                     f"{pct(s['compress'])} |")
    return "\n".join(lines) + "\n"


LEXICAL = {"entities": False, "rerank": False, "dedup": False, "compress": False, "verify": False}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data", help="the shared data folder")
    ap.add_argument("--stages", choices=("lexical", "default"), default="lexical")
    ap.add_argument("--limit", type=int, default=None, help="only the first N trajectories / dialogues")
    ap.add_argument("--out", default="benchmarks/results/handoff_real_data.md")
    args = ap.parse_args()
    data = Path(args.data)
    comp = Compressor.from_ontology("agent_ops", stages=LEXICAL if args.stages == "lexical" else None)
    tau = run_tau(data, comp, args.limit)
    sgd = run_sgd(data, comp, args.limit)
    cmd = f"python benchmarks/handoff_real_data.py --data {args.data} --stages {args.stages}"
    text = table(tau, sgd, cmd + (f" --limit {args.limit}" if args.limit else ""),
                 [s.name for s in comp.pipeline.stages])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
