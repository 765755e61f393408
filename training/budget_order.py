"""Which order fills a token budget best: retention at one global o200k budget for several
``cost_exponent`` values (``p / tokens ** e``), on one split of a built training dataset.

    python training/budget_order.py --dataset runs/compressor-v4/dataset --model runs/mw20kt3/onnx --split dev

This chose ``odcf.training.metrics.COST_EXPONENT`` on dev (training/README.md). Needs ``datasets``.
"""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True, help="a run's dataset folder (odcf train writes RUN/dataset)")
    ap.add_argument("--model", required=True, help="ONNX model folder")
    ap.add_argument("--split", default="dev", choices=("train", "dev", "test"))
    ap.add_argument("--exponents", default="0,0.25,0.5,0.75,1")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    from odcf.training.data import load_labelled_or_exit as _load

    split = _load(args.dataset, "budget_order.py")[args.split]

    from odcf.backends.token_classifier import TokenClassifier, split_words
    from odcf.stages.compress import word_costs
    from odcf.tokens import get_counter
    from odcf.training.metrics import select_global_tokens, word_masks

    clf = TokenClassifier.load(args.model, threads=args.threads)
    counter = get_counter("o200k_base")
    exps = [float(x) for x in args.exponents.split(",")]
    print("| source | budget | e | entities kept | must-keep kept | label-keep kept |")
    print("|---|---|---|---|---|---|")
    for source in sorted(set(split["source"])):
        rows = [r for r in split if r["source"] == source]
        probs = clf.word_probs([r["text"] for r in rows])
        cache: dict[str, int] = {}
        costs = [word_costs(r["text"], split_words(r["text"]), counter, cache) for r in rows]
        labels, ent, _, must = word_masks(rows)
        tokens_in = sum(counter.count(r["text"]) for r in rows)
        for share in (1 / 3, 1 / 5.2):
            for e in exps:
                keep = select_global_tokens(probs, costs, limit=share * tokens_in, cost_exponent=e)
                cells = [f"{(keep & m).sum() / m.sum():.1%}" if m.any() else "—" for m in (ent, must, labels)]
                print(f"| {source} | {1 / share:.1f}:1 | {e:g} | " + " | ".join(cells) + " |", flush=True)



if __name__ == "__main__":
    main()
