"""Traces, replay and re-verification on real public data (a program, not a test).

    python benchmarks/inspect_real_data.py --data ../shared/data [--pages 40] [--tools 80]
        [--ontology general] [--budget 300] [--out benchmarks/results/inspect_real_data.md]

Inputs: the first ``--pages`` HTML pages of html_article_extraction and the first ``--tools`` tool
outputs (JSON) of the tau-bench airline trajectories, each written to a temporary file and
compressed from it under the ontology's plan with ``--budget`` tokens. For every input:

- **replay**: the run is traced and replayed; counted when output and record are byte-identical;
- **clean verify**: ``verify_record`` on the untouched record and text; any problem is a false alarm;
- **changed source**: one digit (else one letter) of the source file is changed; counted when
  verify reports ``source-changed`` and replay does not reproduce;
- **forged text**: the first delivered word with a digit (else the first word) is replaced in the
  delivered text, and the record's total and per-source sha256 are rewritten to match (a
  substitution that keeps the source reference); counted when verify reports a problem;
- **edited segment sha**: the sha256 of the first verbatim segment is replaced in the record;
  counted when verify reports a problem.

Writes a markdown table to ``--out`` and prints it.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import logging
import platform
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from odcf import __version__
from odcf.compressor import Compressor, read_source_file
from odcf.document import sha256
from odcf.plan.compiler import compile_file
from odcf.reverify import split_blocks, verify_record
from odcf.trace import replay, write_trace

logger = logging.getLogger("inspect_real_data")


def _inputs(data: Path, pages: int, tools: int, folder: Path) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for k, gz in enumerate(sorted((data / "html_article_extraction" / "html").glob("*.html.gz"))[:pages]):
        path = folder / f"page{k:03d}.html"
        path.write_bytes(gzip.decompress(gz.read_bytes()))
        out.append(("html page", path))
    trajs = json.loads((data / "agent_tau_bench" / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    n = 0
    for traj in trajs:
        for msg in traj["traj"]:
            if n >= tools:
                break
            if msg.get("role") == "tool" and (msg.get("content") or "").strip():
                path = folder / f"tool{n:03d}.json"
                path.write_text(msg["content"], encoding="utf-8")
                out.append(("tau-bench tool output", path))
                n += 1
    return out


def _mutate_source(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    m = re.search(r"\d", text) or re.search(r"[A-Za-z]", text)
    if m is None:
        path.write_text(text + " x", encoding="utf-8")
        return
    ch = m.group(0)
    new = str((int(ch) + 1) % 10) if ch.isdigit() else ("b" if ch != "b" else "c")
    path.write_text(text[:m.start()] + new + text[m.end():], encoding="utf-8")


def _forge(record: dict[str, Any], text: str) -> tuple[dict[str, Any], str] | None:
    blocks = split_blocks(text, record)
    for sid, body in blocks.items():
        m = re.search(r"\b\w*\d\w*\b", body) or re.search(r"\b\w{3,}\b", body)
        if not m:
            continue
        word = m.group(0)
        forged_word = re.sub(r"\d", lambda d: str((int(d.group(0)) + 1) % 10), word) if re.search(r"\d", word) \
            else word[::-1] + "x"
        start = text.index(body)
        pos = start + m.start()
        forged = text[:pos] + forged_word + text[pos + len(word):]
        rec = copy.deepcopy(record)
        rec["sha256"] = sha256(forged)
        for s, b in split_blocks(forged, rec).items():
            next(x for x in rec["sources"] if x["id"] == s)["sha256"] = sha256(b)
        return rec, forged
    return None


def run(args: argparse.Namespace) -> str:
    plan = compile_file(args.ontology)
    compressor = Compressor(plan)
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, path in _inputs(Path(args.data), args.pages, args.tools, folder):
            r = rows.setdefault(label, {k: 0 for k in ("n", "replayed", "false_alarm", "changed", "changed_replay",
                                                      "forged_n", "forged", "segsha_n", "segsha", "t_verify",
                                                      "t_replay")})
            source = read_source_file(str(path))
            result = compressor.compress([source], budget=args.budget)
            record, text = copy.deepcopy(dict(result.record)), result.text
            trace = folder / "run.trace.jsonl"
            write_trace(result, trace, inputs=[source], compressor=compressor)
            r["n"] += 1
            t0 = time.perf_counter()
            rep = replay(trace)
            r["t_replay"] += time.perf_counter() - t0
            r["replayed"] += rep.reproduced
            t0 = time.perf_counter()
            clean = verify_record(record, text, plan=plan)
            r["t_verify"] += time.perf_counter() - t0
            if clean:
                r["false_alarm"] += 1
                logger.warning("false alarm on %s: %s", path.name, [str(p) for p in clean[:3]])
            forged = _forge(record, text)
            if forged is not None:
                r["forged_n"] += 1
                r["forged"] += bool(verify_record(forged[0], forged[1], plan=plan))
            seg = next((s for src in record["sources"] for s in src.get("segments", ()) if s["status"] == "verbatim"),
                       None)
            if seg is not None:
                r["segsha_n"] += 1
                edited = copy.deepcopy(record)
                next(s for src in edited["sources"] for s in src["segments"] if s["id"] == seg["id"])["sha256"] = \
                    sha256("substituted text")
                r["segsha"] += bool(verify_record(edited, plan=plan))
            _mutate_source(path)
            r["changed"] += any(p.code == "source-changed" for p in verify_record(record, plan=plan))
            r["changed_replay"] += not replay(trace).reproduced
    lines = [
        "# Traces, replay and re-verification on real data",
        "",
        f"odcf {__version__}, ontology `{args.ontology}` (plan {plan.hash[:12]}), budget {args.budget} tokens, "
        f"Python {platform.python_version()}. Command: `python benchmarks/inspect_real_data.py --data DATA "
        f"--pages {args.pages} --tools {args.tools} --budget {args.budget}`.",
        "",
        "| inputs | n | replay reproduced | clean verify: false alarms | changed source: verify / replay detect "
        "| forged text + record: detected | edited segment sha: detected | verify ms/input | replay ms/input |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in rows.items():
        n = int(r["n"])
        lines.append(
            f"| {label} | {n} | {int(r['replayed'])}/{n} | {int(r['false_alarm'])}/{n} | "
            f"{int(r['changed'])}/{n} / {int(r['changed_replay'])}/{n} | {int(r['forged'])}/{int(r['forged_n'])} | "
            f"{int(r['segsha'])}/{int(r['segsha_n'])} | {1000 * r['t_verify'] / max(n, 1):.1f} | "
            f"{1000 * r['t_replay'] / max(n, 1):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="the shared data folder (holds html_article_extraction, agent_tau_bench)")
    p.add_argument("--pages", type=int, default=40)
    p.add_argument("--tools", type=int, default=80)
    p.add_argument("--ontology", default="general")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--out", default="benchmarks/results/inspect_real_data.md")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not (Path(args.data) / "html_article_extraction").exists():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    table = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
