"""The one command: build tasks, run every system in its own process, score, write the report.

    python benchmarks/run.py --data ../shared/data            # full run (make bench)
    python benchmarks/run.py --data ../shared/data --quick    # small run (make bench-quick)

Outputs (in --out, default benchmarks/results): latest.md (or quick.md with --quick), results.json,
and the PNG plots. Per-example outputs go to .cache/bench/<run>/ (not committed).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

from odcfbench import metrics, report
from odcfbench.peers import REPO, SYSTEMS
from odcfbench.tasks import LONG_DOC_TOKENS, build_tasks, long_doc

logger = logging.getLogger("odcfbench")
HERE = os.path.dirname(os.path.abspath(__file__))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # 1 thread by default: on a shared 2-core machine, 2 OpenMP threads per process spin-wait and
    # made torch 3-5x slower than 1 thread (measured while other jobs ran)
    threads = env.get("ODCFBENCH_THREADS", "1")
    env.update({"OMP_NUM_THREADS": threads, "ODCF_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
                "ODCFBENCH_THREADS": threads, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONHASHSEED": "0",
                "TORCH_NUM_THREADS": threads})
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run_worker(system: str, examples: str, out: str, caps: dict, timeout: float, long: str | None) -> dict:
    cmd = [sys.executable, "-m", "odcfbench.worker", "--system", system, "--examples", examples, "--out", out,
           "--cap", str(caps["task"]), "--cap-total", str(caps["total"]), "--long-limit", str(caps["long"])]
    if long:
        cmd += ["--long", long]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=_env(), cwd=os.path.dirname(HERE), capture_output=True, text=True,
                              timeout=timeout)
        rc, err = proc.returncode, proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        rc, err = None, f"timed out after {timeout:.0f} s"
    res = _read_outputs(out)
    if rc != 0:
        res["meta"].setdefault("run_error", f"worker exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}")
    res["meta"]["wall_s"] = time.perf_counter() - t
    return res


def _read_outputs(out: str) -> dict:
    rows, long_rows, meta = [], [], {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "_meta" in r:
                    meta = r["_meta"]
                elif r["task"] == "long":
                    long_rows.append(r)
                else:
                    rows.append(r)
    return {"rows": rows, "long_rows": long_rows, "meta": meta}


def _machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(line for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        ram = f"{int(mem.split()[1]) / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        ram = "unknown"
    return {"cpu": cpu, "cores": str(os.cpu_count()), "ram": ram, "python": sys.version.split()[0]}


def _git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(os.path.dirname(REPO), "shared", "data"),
                    help="the shared data folder (default ../shared/data)")
    ap.add_argument("--quick", action="store_true", help="small samples, under 5 minutes")
    ap.add_argument("--out", default=None,
                    help="report folder (default benchmarks/results; with --quick .cache/bench/run-quick/report)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    ap.add_argument("--tasks", default=None, help="comma-separated subset of tasks")
    ap.add_argument("--cap", type=float, default=None, help="compress seconds per system and task, then skip")
    ap.add_argument("--no-long", action="store_true", help="skip the long-document and model-only speed runs")
    ap.add_argument("--report-only", action="store_true",
                    help="rebuild the report from the last run's worker outputs in .cache/bench (no systems run)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    data = os.path.abspath(args.data)
    if not os.path.isdir(data):
        print(f"benchmarks/run.py: --data {args.data}: no such folder (the shared data is needed)", file=sys.stderr)
        return 2
    systems = [s for s in args.systems.split(",") if s]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        print(f"benchmarks/run.py: --systems: unknown {bad}; choose from {list(SYSTEMS)}", file=sys.stderr)
        return 2
    mode = "quick" if args.quick else "full"
    # odcf, the system under test, gets larger caps so that its own figures cover the full samples
    caps = {"task": args.cap if args.cap is not None else (3.0 if args.quick else 20.0),
            "total": 12.0 if args.quick else 150.0, "long": 20.0 if args.quick else 60.0}
    odcf_caps = {"task": caps["task"] * 4, "total": caps["total"] * 4, "long": caps["long"] * 2.5}
    work = os.path.join(REPO, ".cache", "bench", f"run-{mode}")
    os.makedirs(work, exist_ok=True)
    if args.out is None:
        args.out = os.path.join(work, "report") if args.quick else os.path.join(REPO, "benchmarks", "results")
    os.makedirs(args.out, exist_ok=True)
    started = datetime.now(timezone.utc)
    t_all = time.perf_counter()

    tasks, skipped = build_tasks(data, quick=args.quick, only=args.tasks.split(",") if args.tasks else None)
    logger.info("tasks: %s", ", ".join(f"{t.name}({len(t.examples)})" for t in tasks))
    ex_path = os.path.join(work, "examples.json")
    if args.report_only:  # score exactly what that run's systems saw
        examples = json.load(open(ex_path, encoding="utf-8"))
    else:
        examples = [e.to_dict() for t in tasks for e in t.examples]
        with open(ex_path, "w", encoding="utf-8") as f:
            json.dump(examples, f, ensure_ascii=False)
    long_ex = None
    if args.report_only and os.path.exists(os.path.join(work, "long.json")):
        long_ex = json.load(open(os.path.join(work, "long.json"), encoding="utf-8"))[0]
    elif not args.no_long:
        long_ex = long_doc(data, LONG_DOC_TOKENS[0 if args.quick else 1]).to_dict()
        with open(os.path.join(work, "long.json"), "w", encoding="utf-8") as f:
            json.dump([long_ex], f, ensure_ascii=False)  # noqa
        with open(os.path.join(work, "long.txt"), "w", encoding="utf-8") as f:
            f.write(long_ex["text"])

    results: dict[str, dict] = {}
    long_path = os.path.join(work, "long.json") if long_ex is not None else None
    for name in systems:
        logger.info("system %s: %d examples", name, len(examples))
        c = odcf_caps if name.startswith("odcf") else caps
        if args.report_only:
            results[name] = _read_outputs(os.path.join(work, f"{name}.jsonl"))
            continue
        results[name] = _run_worker(name, ex_path, os.path.join(work, f"{name}.jsonl"), c,
                                    timeout=c["total"] + c["task"] + c["long"] + 600, long=long_path)
        m = results[name]["meta"]
        lr = results[name]["long_rows"]
        logger.info("  done in %.0f s%s%s", m["wall_s"], f"; long document {lr[0]['ms'] / 1000:.1f} s" if lr else "",
                    f" ({m.get('load_error') or m.get('run_error')})" if (m.get("load_error") or m.get("run_error"))
                    else "")
    long_results = {name: {"rows": r["long_rows"], "meta": r["meta"]} for name, r in results.items()}

    speed: dict = {}
    if args.report_only:
        if os.path.exists(os.path.join(work, "speed.json")):
            speed = json.load(open(os.path.join(work, "speed.json")))
    elif long_ex is not None:
        logger.info("model-only speed run")
        sp_out = os.path.join(work, "speed.json")
        try:
            subprocess.run([sys.executable, "-m", "odcfbench.speed", "--text", os.path.join(work, "long.txt"),
                            "--out", sp_out, "--chars", "3000" if args.quick else "60000"],
                           env=_env(), cwd=os.path.dirname(HERE), capture_output=True, text=True, timeout=900)
            speed = json.load(open(sp_out))
        except (subprocess.SubprocessError, OSError, ValueError) as exc:
            speed = {"error": f"{type(exc).__name__}: {exc}"}

    by_id = {e["id"]: e for e in examples}
    scored = score_all(results, by_id)
    run_info = {
        "command": " ".join(["python", "benchmarks/run.py"] + (argv if argv is not None else sys.argv[1:])),
        "mode": mode, "started": started.strftime("%Y-%m-%d %H:%M UTC"), "git": _git_rev(),
        "machine": _machine(), "threads": _env()["OMP_NUM_THREADS"], "cap_s": caps["task"], "cap_total_s": caps["total"],
        "odcf_caps": odcf_caps,
        "long_cap_s": caps["long"],
        "total_s": time.perf_counter() - t_all, "skipped_tasks": skipped,
    }
    if args.report_only:  # keep the original run's facts; say that only the report was rebuilt
        prev = os.path.join(args.out, ("quick_" if args.quick else "") + "results.json")
        try:
            orig = json.load(open(prev, encoding="utf-8"))["run"]
            if not orig.get("rerendered"):
                orig["rerendered"] = run_info["command"]
            run_info = orig
        except (OSError, ValueError, KeyError):
            run_info["rerendered"] = run_info["command"]
    report.write(args.out, mode, run_info, tasks, scored, results, long_ex, long_results, speed)
    logger.info("wrote %s in %.0f s", args.out, time.perf_counter() - t_all)
    return 0


def score_all(results: dict[str, dict], by_id: dict[str, dict]) -> list[dict]:
    """One row per (system, example, budget label): tokens, time, and the task's metric values."""
    from odcfbench.text import count

    rows = []
    for system, res in results.items():
        for r in res["rows"]:
            ex = by_id[r["id"]]
            out = r["output"] or ""
            rows.append({"system": system, "task": r["task"], "id": r["id"], "label": r["label"],
                         "budget": r["budget"], "tokens_in": ex["tokens_in"], "tokens_out": count(out),
                         "ms": r["ms"], "error": r["error"], "scores": metrics.score(ex, out),
                         "pos": ex["gold"].get("gold_pos")})
    return rows
