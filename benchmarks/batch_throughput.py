"""Batch throughput: records/s and tokens/s of `odcf batch`, local (1 and 2 worker processes) and
Ray (1 and 2 actors), on a corpus built from real data.

    .venv/bin/python benchmarks/batch_throughput.py --data ../shared/data
        [--tau 200] [--qmsum 70] [--stage-sets light,default] [--default-limit 24]
        [--configs local:1,local:2,ray:1,ray:2] [--chunk-size 8] [--default-chunk-size 2]
        [--out benchmarks/results/batch_throughput.md]

Corpus (written to a temporary folder, never into the repository):
- tau-bench airline trajectories (``agent_tau_bench/gpt-4o-airline.json``): one record per
  trajectory, ``sources`` = its messages (system prompt → instruction layer, tool results →
  fact layer / kind tool, user and assistant turns → history layer / kind chat; tool calls appended
  as JSON), query = the first user message;
- QMSum meetings (``qa_qmsum/val.jsonl`` then ``test.jsonl``): one record per meeting,
  ``context`` = the transcript (``speaker: content`` lines), query = its first specific query.

Every record is compressed with the bundled ``general`` ontology to a budget of 1,000 tokens.
Stage sets: ``light`` = the default pipeline with the model-backed stages (rerank, entities,
dedup, verify) switched off; ``default`` = the ontology's own pipeline (model-backed stages on),
run on the first ``--default-limit`` records only because it is far slower on 2 CPUs.

For each configuration the job runs twice: on one record (start-up: worker processes or Ray,
model warm-up) and on the whole corpus. ``records/s`` and ``tokens/s`` are whole-corpus figures
including start-up; ``steady records/s`` = (N - 1) / (T_N - T_1) takes the start-up out. Every
configuration's output must be byte-identical to the first one's (timings off); the table says so. The tree is shared with colleagues who edit odcf while this runs, so each row
names the odcf code it ran (a hash of ``odcf/**/*.py``) and outputs are compared only between rows
that ran the same code.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
LIGHT = {"rerank": False, "entities": False, "dedup": False, "verify": False}


def tau_records(data: Path, limit: int) -> list[dict[str, Any]]:
    trajs = json.loads((data / "agent_tau_bench" / "gpt-4o-airline.json").read_text(encoding="utf-8"))
    out = []
    for i, t in enumerate(trajs[:limit]):
        sources = []
        query = None
        for k, m in enumerate(t["traj"]):
            text = m.get("content") or ""
            if m.get("tool_calls"):
                text = (text + "\n" + json.dumps(m["tool_calls"], ensure_ascii=False)).strip()
            if not text.strip():
                continue
            role = m.get("role", "user")
            if role == "user" and query is None:
                query = text[:500]
            layer = {"system": "instruction", "tool": "fact"}.get(role, "history")
            kind = "tool" if role == "tool" else ("chat" if role in ("user", "assistant") else "text")
            sources.append({"id": f"m{k}", "text": text, "layer": layer, "kind": kind, "speaker": role})
        out.append({"id": f"tau/{i}", "sources": sources, "query": query})
    return out


def qmsum_records(data: Path, limit: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for split in ("val", "test"):
        with open(data / "qa_qmsum" / f"{split}.jsonl", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if len(out) >= limit:
                    return out
                m = json.loads(line)
                text = "\n".join(f"{t['speaker']}: {t['content']}" for t in m["meeting_transcripts"])
                queries = m.get("specific_query_list") or m.get("general_query_list") or [{}]
                out.append({"id": f"qmsum/{split}/{i}", "context": text, "query": queries[0].get("query")})
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def run_one(src: Path, out: Path, stages: dict[str, Any], engine: str, workers: int,
            chunk_size: int = 8) -> tuple[float, Any]:
    from odcf.batch import BatchConfig, run_batch

    cfg = BatchConfig(ontology="general", budget=1000, stages=stages, timings=False)
    t0 = time.perf_counter()
    summary = run_batch(src, out, cfg, engine=engine, workers=workers, chunk_size=chunk_size, overwrite=True,
                        progress=False)
    return time.perf_counter() - t0, summary


def code_fingerprint() -> str:
    """sha256 of odcf's sources: colleagues edit the shared tree while this runs, and output can only
    be compared between runs of the same code."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted((ROOT / "odcf").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:8]


def machine() -> str:
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                   platform.processor())
    except OSError:
        cpu = platform.processor()
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU(s) ({cpu}), Python {platform.python_version()}"


def git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="the shared data folder (../shared/data)")
    ap.add_argument("--tau", type=int, default=200, help="tau-bench trajectories (default 200)")
    ap.add_argument("--qmsum", type=int, default=70, help="QMSum meetings (default 70)")
    ap.add_argument("--stage-sets", default="light,default", help="light and/or default (see the docstring)")
    ap.add_argument("--default-limit", type=int, default=24, help="records for the `default` stage set")
    ap.add_argument("--chunk-size", type=int, default=8, help="records per part for the `light` set (default 8)")
    ap.add_argument("--default-chunk-size", type=int, default=2,
                    help="records per part for the `default` set (default 2: enough units for 2 workers)")
    ap.add_argument("--configs", default="local:1,local:2,ray:1,ray:2", help="engine:workers, comma-separated")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "batch_throughput.md")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"data folder not found: {args.data}", file=sys.stderr)
        return 2

    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in args.configs.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="odcf-batch-bench-"))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections: list[str] = []
    try:
        corpus = tau_records(args.data, args.tau) + qmsum_records(args.data, args.qmsum)
        for set_name in args.stage_sets.split(","):
            stages = LIGHT if set_name == "light" else {}
            chunk = args.chunk_size if set_name == "light" else args.default_chunk_size
            recs = corpus if set_name == "light" else corpus[: args.default_limit // 2] + \
                corpus[len(corpus) - (args.default_limit - args.default_limit // 2):]
            src = tmp / f"{set_name}.jsonl"
            one = tmp / f"{set_name}-one.jsonl"
            write_jsonl(src, recs)
            write_jsonl(one, recs[:1])
            rows = []
            reference: dict[str, bytes] = {}  # code fingerprint -> first output made with that code
            for engine, workers in configs:
                code = code_fingerprint()
                print(f"[{set_name}] {engine} x{workers}: start-up run ...", file=sys.stderr, flush=True)
                t1, _ = run_one(one, tmp / "one-out.jsonl", stages, engine, workers, chunk)
                print(f"[{set_name}] {engine} x{workers}: {len(recs)} records ...", file=sys.stderr, flush=True)
                out = tmp / f"{set_name}-{engine}-{workers}.jsonl"
                tn, s = run_one(src, out, stages, engine, workers, chunk)
                data = out.read_bytes() + Path(s.errors).read_bytes()
                if code_fingerprint() != code:
                    code, same = code + " (changed during the run)", "n/a"
                elif code not in reference:
                    reference[code], same = data, "reference"
                else:
                    same = "yes" if reference[code] == data else "NO"
                steady = (s.records_in - 1) / (tn - t1) if tn > t1 else float("nan")
                rows.append((engine, workers, s, t1, tn, steady, same, code))
                print(f"  {s.records_in} records in {tn:.1f} s (start-up {t1:.1f} s)", file=sys.stderr, flush=True)
            s0 = rows[0][2]
            lines = [
                f"### Stage set `{set_name}` — {s0.records_in} records "
                f"({sum(1 for r in recs if r['id'].startswith('tau/'))} tau-bench, "
                f"{sum(1 for r in recs if r['id'].startswith('qmsum/'))} QMSum), "
                f"{s0.tokens_in:,} tokens in → {s0.tokens_out:,} out, {s0.records_failed} failed, chunk size {chunk}",
                "",
                "| engine | workers | wall s | start-up s | records/s | tokens in/s | steady records/s | odcf code | output identical |",
                "|---|---:|---:|---:|---:|---:|---:|---|---|",
            ]
            for engine, workers, s, t1, tn, steady, same, code in rows:
                lines.append(f"| {engine} | {workers} | {tn:.1f} | {t1:.1f} | {s.records_in / tn:.2f} | "
                             f"{s.tokens_in / tn:,.0f} | {steady:.2f} | {code} | {same} |")
            sections.append("\n".join(lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    text = "\n".join([
        "# Batch throughput (`odcf batch`)",
        "",
        f"- command: `{' '.join([Path(sys.executable).name, 'benchmarks/batch_throughput.py', *(argv or sys.argv[1:])])}`",
        f"- date: {started}; odcf commit {git_rev()}",
        f"- machine: {machine()}",
        "- **shared machine**: 2 CPU cores shared with colleagues' jobs running at the same time"
        + (f" (load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f})" if load else "")
        + "; absolute figures are noisy and low, compare rows of one table, not runs.",
        "- ontology `general`, budget 1,000 tokens (o200k_base), timings off, OMP_NUM_THREADS=1.",
        "- output identical: byte-identical (output and error file) to the `reference` row, the first row "
        "of the table that ran the same odcf code; `n/a` when odcf's code changed during that row's run.",
        "- records/s and tokens in/s: whole corpus including start-up (spawning workers or starting Ray, "
        "loading models); steady records/s = (N - 1) / (T_N - T_1) with T_1 a one-record job.",
        "",
        *sum(([s, ""] for s in sections), []),
    ])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
