"""`odcf eval --data DIR [--model DIR] [--work RUN] [--out FILE.md]` — held-out figures of the compressor.

Gold entity retention (WNUT-17 test), number and must-keep retention (QMSum held-out meetings),
agreement with the labels, compression in o200k tokens at 3:1 and 5.2:1 word rates, and speed on
1 and 2 CPU threads. Needs the ``train`` extra for the data builder (datasets, spaCy labels).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from odcf.cli.common import add_data_flags, corpus_paths, csv_list
from odcf.errors import OdcfError, UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "eval", help="held-out evaluation of the token compressor model",
        description="Evaluate an exported compressor model on the held-out split of the training data builder.",
    )
    add_data_flags(
        p, corpus_help="also evaluate on the test split of your own corpus (format as for odcf train --corpus); "
                       "only for a --work folder without labelled data of other sources",
        sources_help="shared data sets to evaluate on (default wnut17,qmsum; '' for none)")
    p.add_argument("--model", default=None, metavar="DIR", help="model folder or .onnx (default: the shipped model)")
    p.add_argument("--work", default="runs/eval", metavar="RUN",
                   help="folder for the labelled data (a training run folder reuses its data)")
    p.add_argument("--threads", default="1,2", help="thread counts to time (default 1,2)")
    p.add_argument("--out", default=None, metavar="FILE.md", help="write the markdown table here")
    p.add_argument("--json", default=None, metavar="FILE.json", help="write the raw figures here")
    p.add_argument("--compare", action="append", default=[], metavar="NAME=MODEL",
                   help="also evaluate MODEL and add it to a comparison table (repeatable)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from odcf.backends.token_classifier import DEFAULT_MODEL_DIR, TokenClassifier
    from odcf.training.evaluate import evaluate, render_markdown

    try:
        threads = tuple(int(x) for x in args.threads.split(","))
    except ValueError:
        raise UsageError(f"--threads: expected comma-separated thread counts, e.g. 1,2; got {args.threads!r}") from None
    if not threads or min(threads) < 1:
        raise UsageError(f"--threads {args.threads}: thread counts must be 1 or more")
    # the outputs are checked first (a bad path must not cost the whole evaluation), but their folders
    # are made only when the results are written: a failed evaluation leaves no new folder behind
    for flag, target in (("--out", args.out), ("--json", args.json)):
        if target:
            _output_file(flag, Path(target))
    others = []
    for item in args.compare:  # a usage error, before the first model's (long) evaluation
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--compare: expected NAME=MODEL, got {item!r}")
        others.append((name, path))
    model = args.model or str(DEFAULT_MODEL_DIR)
    for path in (model, *(path for _, path in others)):  # every model loads before the first evaluation
        TokenClassifier.load(path, threads=max(threads))
    picked = dict(sources=csv_list(args.sources) if args.sources is not None else None, corpus=corpus_paths(args))
    res = evaluate(model, data_dir=args.data, work_dir=args.work, threads=threads, **picked)
    compare = [(name, evaluate(path, data_dir=args.data, work_dir=args.work, threads=threads, **picked))
               for name, path in others]
    argv = sys.argv[1:]
    command = "odcf " + " ".join(shlex.quote(a) for a in argv[argv.index("eval"):]) if "eval" in argv else "odcf eval"
    md = render_markdown(res, command=command, compare=compare)
    if args.out:
        _write("--out", Path(args.out), md)
    if args.json:
        _write("--json", Path(args.json), json.dumps({**res, "compare": dict(compare)}, indent=2) + "\n")
    sys.stdout.write(md)
    return 0


def _output_file(flag: str, path: Path) -> None:
    """Refuse an output path that cannot be written as a file: a folder, a path under a file, or a
    path whose nearest existing folder cannot be written to. Creates nothing."""
    if path.is_dir():
        raise OdcfError(f"{flag} {path}: is a folder; name a file")
    for p in path.parents:
        if p.exists() and not p.is_dir():
            raise OdcfError(f"{flag} {path}: {p} is a file, not a folder")
    there = next((p for p in path.absolute().parents if p.exists()), None)
    if there is not None and not os.access(there, os.W_OK | os.X_OK):
        raise OdcfError(f"{flag} {path}: cannot write in {there} (permission denied)")


def _write(flag: str, path: Path, text: str) -> None:
    """Write *text* to *path*, making its folder now (not before the evaluation)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OdcfError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
