"""Run ONE system over prepared examples in a fresh process; write outputs and timings as JSONL.

Started by :mod:`odcfbench.run` once per system (and once more for the long document), so that
each system's peak RSS (``ru_maxrss`` of its own process) is its own. Usage::

    python -m odcfbench.worker --system bm25 --examples ex.json --out bm25.jsonl --cap 120
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import signal
import sys
import time
import traceback

logger = logging.getLogger("odcfbench.worker")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # SIGALRM: stop a long-document call that passed its limit
    raise _Timeout()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cap", type=float, default=120.0, help="seconds of compress time per task, then skip")
    ap.add_argument("--cap-total", type=float, default=600.0, help="seconds of compress time in all, then skip")
    ap.add_argument("--long", default=None, help="JSON file with the long-document example (run last)")
    ap.add_argument("--long-limit", type=float, default=180.0, help="seconds for the long document")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from odcfbench import text
    from odcfbench.peers import make

    with open(args.examples, encoding="utf-8") as f:
        examples = json.load(f)
    text.count("warm up the counter")
    text.words("热身 warm up")  # jieba's dictionary loads here, not inside a timed call
    rss_base = _rss_mb()
    out = open(args.out, "w", encoding="utf-8")
    meta: dict = {"system": args.system, "rss_base_mb": rss_base, "capped": {}, "errors": 0}
    try:
        system = make(args.system)
        t0 = time.perf_counter()
        system.warm_up()
        meta["load_s"] = time.perf_counter() - t0
        meta["versions"] = system.versions()
        meta["note"] = system.note
    except Exception as exc:  # a peer that cannot load is reported, with its error
        meta["load_error"] = f"{type(exc).__name__}: {exc}"
        meta["load_traceback"] = traceback.format_exc()[-3000:]
        out.write(json.dumps({"_meta": meta}) + "\n")
        out.close()
        return 0
    # one untimed call per language so lazy first-call work (caches, jieba) is not timed
    for wtext, lang in (("Warm up once. The second sentence has 42 in it.", "en"), ("热身一次。第二句有四十二。", "zh")):
        try:
            system.compress({"id": "warm", "task": "warm", "text": wtext, "query": "warm up", "kind": "text",
                             "lang": lang, "budgets": {}, "gold": {}, "tokens_in": 10}, 6)
        except Exception:  # a failing warm-up shows again, with its error, on the real examples
            pass
    meta["rss_loaded_mb"] = _rss_mb()
    spent: dict[str, float] = {}
    for ex in examples:
        task = ex["task"]
        # caps are checked per example, so an example runs at all its budgets or at none
        if spent.get(task, 0.0) > args.cap or sum(spent.values()) > args.cap_total:
            meta["capped"][task] = meta["capped"].get(task, 0) + 1
            continue
        for label, budget in ex["budgets"].items():
            err = None
            t = time.perf_counter()
            try:
                res = system.compress(ex, budget)
            except Exception as exc:
                res = ""
                err = f"{type(exc).__name__}: {str(exc)[:300]}"
                meta["errors"] += 1
            ms = (time.perf_counter() - t) * 1000.0
            spent[task] = spent.get(task, 0.0) + ms / 1000.0
            out.write(json.dumps({"id": ex["id"], "task": task, "label": label, "budget": budget,
                                  "output": res, "ms": ms, "error": err}, ensure_ascii=False) + "\n")
            out.flush()
    meta["rss_peak_mb"] = _rss_mb()
    if args.long:
        with open(args.long, encoding="utf-8") as f:
            ex = json.load(f)[0]
        label, budget = next(iter(ex["budgets"].items()))
        err = None
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, args.long_limit)
        t = time.perf_counter()
        try:
            res = system.compress(ex, budget)
        except _Timeout:
            res, err = "", f"stopped after the {args.long_limit:.0f} s limit"
        except Exception as exc:
            res, err = "", f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        ms = (time.perf_counter() - t) * 1000.0
        out.write(json.dumps({"id": ex["id"], "task": "long", "label": label, "budget": budget, "output": res,
                              "ms": ms, "error": err}, ensure_ascii=False) + "\n")
        meta["rss_peak_long_mb"] = _rss_mb()
    out.write(json.dumps({"_meta": meta}) + "\n")
    out.close()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
