"""`odcf export RUN --out DIR` — ONNX export, graph optimization, int8, parity and agreement checks.

Writes DIR/model.int8.onnx and DIR/metadata.json; fails with one line when the ONNX logits differ
from PyTorch beyond --tolerance or int8 agrees with fp32 on fewer than --min-agreement of the
held-out keep decisions.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from odcf.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "export", help="export a trained compressor run to int8 ONNX, with parity checks (train extra)",
        description="Export RUN/model to ONNX (eager attention), optimize with ONNX Runtime, quantize to int8 "
                    "per channel, check parity and agreement, and write metadata.json beside the model.",
    )
    p.add_argument("run", metavar="RUN", help="a run folder written by `odcf train`")
    p.add_argument("--out", required=True, metavar="DIR", help="where the model goes, e.g. odcf/data/models/compressor")
    p.add_argument("--tolerance", type=float, default=1e-3, help="max |logit diff| fp32 ONNX vs PyTorch (default 1e-3)")
    p.add_argument("--min-agreement", type=float, default=0.98,
                   help="least int8-vs-fp32 keep-decision agreement on held-out words (default 0.98)")
    p.add_argument("--max-len", type=int, default=None,
                   help="inference window in sub-tokens, at most the model's position embeddings (default 256)")
    p.add_argument("--threshold-share", type=float, default=None, metavar="S",
                   help="calibrate the default threshold so that S of the dev words are kept (default: half the training target of an ordinary keep word)")
    p.add_argument("--threads", type=int, default=2, metavar="N",
                   help="CPU threads for the export and the parity checks (default 2)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # values that cannot work are usage errors before the run is read (--threads 0 was a torch traceback)
    if args.threads < 1:
        raise UsageError(f"--threads {args.threads}: must be 1 or more")
    if not (math.isfinite(args.tolerance) and args.tolerance > 0):
        raise UsageError(f"--tolerance {args.tolerance:g}: must be a positive number (a logit difference)")
    if not 0 <= args.min_agreement <= 1:
        raise UsageError(f"--min-agreement {args.min_agreement:g}: must be a share from 0 to 1")
    if args.threshold_share is not None and not 0 < args.threshold_share <= 1:
        raise UsageError(f"--threshold-share {args.threshold_share:g}: must be a share above 0 and at most 1")
    from odcf.training.export import export_run

    meta = export_run(args.run, args.out, tolerance=args.tolerance, min_agreement=args.min_agreement,
                      max_len=args.max_len, threads=args.threads,
                      threshold_keep_share=args.threshold_share)
    keys = ("file", "bytes", "sha256", "num_hidden_layers", "threshold", "parity", "int8_agreement", "agreement_gate")
    sys.stdout.write(json.dumps({k: meta[k] for k in keys}, indent=2) + "\n")
    return 0
