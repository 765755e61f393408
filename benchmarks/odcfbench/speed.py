"""Model-only speed: odcf's shipped compressor ONNX vs an LLMLingua-2-small-shaped classifier.

The comparison model is a randomly initialised ``BertForTokenClassification`` with the shape of
LLMLingua-2-small's backbone (bert-base-multilingual-cased: hidden 768, 12 layers, 12 heads,
intermediate 3072, vocab 119,547); weights do not matter for speed. It goes through the same recipe
as odcf's model, by calling odcf's own export functions (``odcf.training.export``): TorchScript
export (dynamic batch/sequence axes) -> ONNX Runtime transformer optimizer (``model_type="bert"``)
-> dynamic per-channel int8 quantization.

Both models run in ONNX Runtime on the CPU with the same session options and threads, over the same
text in windows of the same length (odcf's ``max_len`` from its metadata, else 256; batches of 8),
tokenized by each model's own tokenizer.
Run as ``python -m odcfbench.speed --text long.txt --out speed.json``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

from odcfbench.peers import CACHE, REPO, minilm_path

ODCF_MODEL_DIR = os.path.join(REPO, "odcf", "data", "models", "compressor")
THREADS = int(os.environ.get("ODCFBENCH_THREADS", "1"))


def _session(path: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def find_odcf_model() -> tuple[str | None, str | None, int]:
    """(onnx path, tokenizer.json path, window length) of the shipped compressor, resolved the way
    odcf resolves it (``odcf.backends.token_classifier``: metadata.json, tokenizer by name)."""
    try:
        from odcf.backends import token_classifier as tc

        onnx_file, meta = tc.read_metadata(tc.DEFAULT_MODEL_DIR)
        tok = tc._resolve_tokenizer(onnx_file, meta)
        return str(onnx_file), str(tok), int(meta.get("max_len", 256))
    except Exception:  # not shipped yet, or a layout this harness does not know
        onnx = sorted(glob.glob(os.path.join(ODCF_MODEL_DIR, "**", "*.onnx"), recursive=True))
        tok = glob.glob(os.path.join(ODCF_MODEL_DIR, "**", "tokenizer.json"), recursive=True)
        if onnx and tok:
            onnx.sort(key=lambda p: (0 if ("int8" in p or "quant" in p) else 1, p))
            return onnx[0], tok[0], 256
        return None, None, 256


def build_bert_base(out_dir: str) -> tuple[str, str]:
    """Export + optimize + int8 the randomly initialised BERT-base token classifier (cached).

    Uses odcf's own recipe (``odcf.training.export``: ``export_onnx`` -> ``optimize_onnx`` ->
    ``quantize_int8``) so both models went through the same steps.
    """
    final = os.path.join(out_dir, "model.int8.onnx")
    recipe = ("odcf.training.export: export_onnx (TorchScript, opset 17) -> optimize_onnx (ORT bert fusion, "
              "12 heads, hidden 768) -> quantize_int8 (dynamic, per-channel QInt8)")
    stamp = os.path.join(out_dir, "recipe.txt")  # written only after a build with this recipe
    if os.path.exists(final) and os.path.exists(stamp) and open(stamp).read() == recipe:
        return final, recipe + " [built once, cached under .cache/bench]"
    os.makedirs(out_dir, exist_ok=True)
    import torch
    from transformers import BertConfig, BertForTokenClassification

    from odcf.training.export import export_onnx, optimize_onnx, quantize_int8

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=119547, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512, num_labels=2, attn_implementation="eager")
    model = BertForTokenClassification(cfg).eval()
    fp32 = os.path.join(out_dir, "model.onnx")
    opt = os.path.join(out_dir, "model.opt.onnx")
    export_onnx(model, fp32)
    optimize_onnx(fp32, opt, num_heads=12, hidden_size=768)
    quantize_int8(opt, final)
    for p in (fp32, opt):
        os.remove(p)
    with open(stamp, "w") as f:
        f.write(recipe)
    return final, recipe


def _windows(tok, text: str, max_len: int) -> list[list[int]]:
    ids = tok.encode(text, add_special_tokens=False).ids
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    step = max_len - 2
    return [[cls] + ids[i:i + step] + [sep] for i in range(0, len(ids), step)]


def time_model(onnx_path: str, tok_path: str, text: str, max_len: int, repeats: int = 3, batch: int = 8) -> dict:
    import numpy as np
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tok_path)
    tok.no_truncation()  # sentence-transformers ships tokenizer.json with truncation at 128
    tok.no_padding()
    sess = _session(onnx_path)
    names = {i.name for i in sess.get_inputs()}
    wins = _windows(tok, text, max_len)
    n_tokens = sum(len(w) for w in wins)

    def run_once():
        for b in range(0, len(wins), batch):
            chunk = wins[b:b + batch]
            L = max(len(w) for w in chunk)
            ids = np.zeros((len(chunk), L), dtype=np.int64)
            mask = np.zeros((len(chunk), L), dtype=np.int64)
            for r, w in enumerate(chunk):
                ids[r, :len(w)] = w
                mask[r, :len(w)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(ids)
            sess.run(None, {k: v for k, v in feed.items() if k in names})

    run_once()  # warm
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - t)
    best = min(times)
    return {"model": os.path.relpath(onnx_path, REPO) if onnx_path.startswith(REPO) else onnx_path,
            "model_mb": os.path.getsize(onnx_path) / 1e6, "windows": len(wins), "model_tokens": n_tokens,
            "seconds_best": best, "seconds_all": times, "model_tokens_per_s": n_tokens / best}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chars", type=int, default=60_000)
    args = ap.parse_args(argv)
    text = open(args.text, encoding="utf-8").read()[: args.chars]
    from odcfbench.text import count

    res: dict = {"threads": THREADS, "chars": len(text), "o200k_tokens": count(text)}
    onnx, tok, max_len = find_odcf_model()
    res["window"] = max_len
    if onnx and tok:
        res["odcf"] = time_model(onnx, tok, text, max_len)
    else:
        res["odcf_error"] = f"no compressor ONNX model + tokenizer.json under {os.path.relpath(ODCF_MODEL_DIR, REPO)}"
    try:
        path, recipe = build_bert_base(os.path.join(CACHE, "bert-base-tokcls-int8"))
        res["bert_base_recipe"] = recipe
        res["bert_base"] = time_model(path, os.path.join(minilm_path(), "tokenizer.json"), text, max_len)
    except Exception as exc:
        res["bert_base_error"] = f"{type(exc).__name__}: {exc}"
    if "odcf" in res and "bert_base" in res:
        # same text, different tokenizers: compare wall time for the text, not model tokens
        res["speedup_vs_bert_base"] = res["bert_base"]["seconds_best"] / res["odcf"]["seconds_best"]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
