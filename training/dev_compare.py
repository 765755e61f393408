"""Dev figures of trained runs (fp32 PyTorch, before export): WNUT-17 dev entity words and QMSum dev
label-keep words kept at global word rates, one line per run and source.

    python training/dev_compare.py runs/rk1aug2s13 runs/rk1aug2s14 --dataset runs/compressor-v4/dataset

Runs trained with ``--train-on-dev ''`` only: a run that trained on dev rows would be scored on its
own training data. This is how the recipe in training/README.md was chosen. Needs the train extra.
"""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders (odcf train --out RUN writes RUN/model)")
    ap.add_argument("--dataset", required=True, help="a built dataset folder (RUN/dataset) with a dev split")
    ap.add_argument("--qmsum-windows", type=int, default=1200, help="QMSum dev windows scored (default 1200)")
    args = ap.parse_args(argv)
    from odcf.training.data import load_labelled_or_exit as _load

    dev = _load(args.dataset, "dev_compare.py")["dev"]  # checked before the heavy imports

    import numpy as np
    import torch
    from transformers import AutoModelForTokenClassification

    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows, predict_word_probs
    from odcf.training.metrics import select_global, word_masks

    torch.set_num_threads(1)
    tok = load_tokenizer(DEFAULT_TOKENIZER)
    rates = (1 / 3, 1 / 4, 1 / 5.2)
    print("| run | source | " + " | ".join(f"kept at {1 / r:.1f}:1" for r in rates) + " |")
    print("|---|---|" + "---|" * len(rates))
    for run in args.runs:
        model = AutoModelForTokenClassification.from_pretrained(f"{run}/model")
        for source in ("wnut17", "qmsum"):
            rows = [r for r in dev if r["source"] == source]
            if source == "qmsum":
                rows = rows[: args.qmsum_windows]
            if not rows:
                continue
            probs = predict_word_probs(model, encode_rows(rows, tok, 128, case_types=True))
            labels, ent, _, _ = word_masks(rows)
            target = ent if source == "wnut17" else labels
            cells = [f"{(select_global(probs, rate=r) & target).sum() / max(int(np.sum(target)), 1):.2%}" for r in rates]
            print(f"| {run} | {source} ({'entity words' if source == 'wnut17' else 'label-keep words'}) | "
                  + " | ".join(cells) + " |", flush=True)



if __name__ == "__main__":
    main()
