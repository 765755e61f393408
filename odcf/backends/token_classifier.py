"""Word-level keep probabilities from the ONNX token classifier (the compressor's model).

>>> from odcf.backends.token_classifier import TokenClassifier, split_words   # doctest: +SKIP
>>> clf = TokenClassifier.load()                      # the shipped model, from package data
>>> text = "Liability is capped at $5 million."
>>> probs = clf.word_probs([text])[0]                 # one probability per whitespace word
>>> [text[s:e] for s, e in split_words(text)]
['Liability', 'is', 'capped', 'at', '$5', 'million.']

A *word* is a maximal run of non-whitespace characters of the original text, with its character
offsets (:func:`split_words`); the compressor keeps or drops whole words. Each word is cut into
WordPiece sub-tokens by the model's tokenizer, the model gives every sub-token a keep probability,
and a word's probability is the mean over its sub-tokens.

Long texts are cut into chunks that fit the model window (``max_len`` sub-tokens including
``[CLS]``/``[SEP]``), at sentence ends when possible and between words otherwise. Each chunk runs
alone by default (``batch_size=1``), so a word's probability depends only on its own chunk: the
int8 model quantizes its activations with one scale per run, so a chunk run in a padded batch
beside other texts gets probabilities that depend on them (up to 0.14 apart, 1.3% of keep
decisions at the threshold on WNUT-17 test sentences, with the shipped model). On this 2-core
machine batching was no faster. A larger ``batch_size`` sorts chunks by length and pads each
batch to its longest member. Only onnxruntime, tokenizers and numpy are needed: no torch.

A model folder holds the ONNX file and ``metadata.json``; the metadata names the ONNX file
(``"file"``), the tokenizer (``"tokenizer"``: a name under ``odcf/data/tokenizers/`` or a path
relative to the folder), ``max_len`` and the calibrated ``threshold``; since ``metadata_version`` 1
also the tokenizer file's ``tokenizer_sha256`` and ``tokenizer_vocab_size``, checked at load. Every
load also runs the tokenizer's highest id through the model once, so that a tokenizer larger than
the model's word embedding is one :class:`~odcf.errors.StageError` naming both files, not an ONNX
Runtime error at the first text. The metadata's values are checked at load too
(:func:`check_metadata_values`), and one window of ``max_len`` sub-tokens runs through the model, so
that a window longer than its position embeddings is refused then, not at the first long text.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odcf.backends.onnx import get_session
from odcf.errors import StageError
from odcf.fileio import file_sha256
from odcf.textutil import nfc

logger = logging.getLogger(__name__)

_DATA = Path(__file__).resolve().parent.parent / "data"
#: Where the shipped compressor model lives inside the package.
DEFAULT_MODEL_DIR = _DATA / "models" / "compressor"
TOKENIZERS_DIR = _DATA / "tokenizers"

_WORD_RE = re.compile(r"\S+")
#: A word that ends a sentence: final punctuation, maybe followed by closing quotes or brackets.
_SENT_END_RE = re.compile(r"[.!?;。！？；…][\"'’”)\]]*$")
_TOKENIZERS: dict[str, Any] = {}
_TOK_LOCK = threading.Lock()
#: The ``metadata_version`` that ``odcf export`` writes and this odcf reads.
METADATA_VERSION = 1
#: (model, tokenizer) pairs whose highest id has run through the model once in this process.
_PROBED: set[tuple[str, str]] = set()
#: (model, max_len) pairs whose window has run through the model once in this process.
_WINDOWS: set[tuple[str, int]] = set()
#: The shipped model's file name.
ONNX_DEFAULT = "model.int8.onnx"


def split_words(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the whitespace-separated words of *text*."""
    return [(m.start(), m.end()) for m in _WORD_RE.finditer(text)]


#: ``metadata["token_types"]`` value of a model that reads letter case from ``token_type_ids``.
CASE_TYPES = "uppercase"


def case_type(word: str) -> int:
    """Token type of a word's sub-tokens in a case-aware model: 1 when it has an upper-case letter.

    The vocabulary is uncased, so the tokenizer lowercases "Apple" and "apple" alike; models
    exported with ``"token_types": "uppercase"`` get the lost letter case back through BERT's
    second token-type embedding.

    >>> [case_type(w) for w in ("Apple", "apple", "iPhone", "§12", "北京")]
    [1, 0, 1, 0, 0]
    """
    return 1 if any(c.isupper() for c in word) else 0


def load_tokenizer(path: str | Path) -> Any:
    """A shared ``tokenizers.Tokenizer`` with truncation and padding switched off."""
    key = str(Path(path).resolve())
    with _TOK_LOCK:
        tok = _TOKENIZERS.get(key)
        if tok is None:
            try:
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - core dependency
                raise StageError("the token compressor needs `tokenizers`: pip install tokenizers") from exc
            if not Path(key).is_file():
                raise StageError(f"tokenizer {path!s}: no such file")
            try:
                tok = Tokenizer.from_file(key)
            except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception (not JSON, not a tokenizer)
                raise StageError(f"tokenizer {path!s}: not a tokenizers file ({_first_line(exc)})") from None
            tok.no_truncation()
            tok.no_padding()
            _TOKENIZERS[key] = tok
        return tok


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (at most 300 characters), else its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def read_metadata(model_path: str | Path) -> tuple[Path, dict[str, Any]]:
    """Resolve *model_path* (a folder or an ``.onnx`` file) to the ONNX file and its metadata."""
    p = Path(model_path)
    if p.is_dir():
        meta_file = p / "metadata.json"
        if not meta_file.is_file():
            raise StageError(f"compressor model {p}: no metadata.json in the folder")
        meta = _load_json(meta_file)
        check_metadata_values(meta_file, meta)
        onnx_file = p / meta.get("file", "model.onnx")
    elif p.is_file():
        onnx_file = p
        meta_file = p.parent / "metadata.json"
        meta = _load_json(meta_file) if meta_file.is_file() else {}
        check_metadata_values(meta_file, meta)
    else:
        raise StageError(f"compressor model {p}: no such file or folder")
    if not onnx_file.is_file():
        raise StageError(f"compressor model {p}: ONNX file {onnx_file.name} is missing")
    return onnx_file, meta


def _metadata_file(model_path: Path) -> Path:
    """The ``metadata.json`` that :func:`read_metadata` reads (or would read) for *model_path*."""
    return model_path / "metadata.json" if model_path.is_dir() else model_path.parent / "metadata.json"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_metadata_values(meta_file: Path, meta: dict[str, Any]) -> None:
    """Refuse metadata values that cannot be what they name, all in one :class:`~odcf.errors.StageError`
    naming *meta_file*, each key and its value, in the file's order (a missing key keeps its default). ``max_len`` is checked
    against what the model itself reads when it loads (:meth:`TokenClassifier.warm_up`).

    >>> check_metadata_values(Path("m/metadata.json"), {"threshold": "high", "max_len": 0})
    Traceback (most recent call last):
    ...
    odcf.errors.StageError: m/metadata.json: "threshold": "high" is not a number from 0 to 1; "max_len": 0 is not an integer of at least 8
    """
    version = meta.get("metadata_version")
    if _is_int(version) and version > METADATA_VERSION:
        return  # a newer format: check_metadata_version refuses it by its version, not by its keys
    problems: dict[str, str] = {}

    def bad(key: str, what: str) -> None:
        problems[key] = f"{json.dumps(key)}: {json.dumps(meta[key], ensure_ascii=False)} is not {what}"

    for key in ("file", "tokenizer"):
        if key in meta and not (isinstance(meta[key], str) and meta[key].strip()):
            bad(key, "a file name" if key == "file" else "a tokenizer name or path")
    if "max_len" in meta and not (_is_int(meta["max_len"]) and meta["max_len"] >= 8):
        bad("max_len", "an integer of at least 8")
    t = meta.get("threshold")
    if "threshold" in meta and not (isinstance(t, (int, float)) and not isinstance(t, bool) and 0.0 <= t <= 1.0):
        bad("threshold", "a number from 0 to 1")
    for key in ("sha256", "tokenizer_sha256"):
        v = meta.get(key)
        if v is not None and not (isinstance(v, str) and re.fullmatch(r"[0-9a-fA-F]{64}", v)):
            bad(key, "a sha256 (64 hex digits)")
    v = meta.get("tokenizer_vocab_size")
    if v is not None and not (_is_int(v) and v > 0):
        bad("tokenizer_vocab_size", "a positive integer")
    if problems:  # in the file's order
        raise StageError(f"{meta_file}: " + "; ".join(problems[k] for k in meta if k in problems))


def check_sha256(onnx_file: Path, meta: dict[str, Any]) -> str:
    """Refuse an ONNX file whose sha256 is not the one its metadata (and so the delivery record) names.

    Returns the file's sha256 (computed when the metadata names none)."""
    want = meta.get("sha256")
    got = file_sha256(onnx_file)
    if want and got != str(want).lower():
        raise StageError(f"compressor model {onnx_file}: its sha256 {got[:16]}… is not the "
                         f"{str(want)[:16]}… that metadata.json names; the file was replaced or damaged "
                         "(export the model again)")
    return got


def tokenizer_vocab_size(tok: Any) -> int:
    """One more than the tokenizer's highest id: the word-embedding rows a model needs for it."""
    return max(tok.get_vocab(with_added_tokens=True).values(), default=-1) + 1


def check_metadata_version(onnx_file: Path, meta: dict[str, Any]) -> str | None:
    """Refuse metadata of a newer format than this odcf reads; a warning (for the delivery record)
    when it has no ``metadata_version`` and lacks keys that then silently take their defaults (a
    model trained with letter case whose metadata lost ``token_types`` would run without it)."""
    version = meta.get("metadata_version")
    if version is None:
        defaults = {"token_types": "none: letter case is not read", "max_len": "256", "threshold": "0.5"}
        lacking = [f"{k} ({v})" for k, v in defaults.items() if k not in meta]
        if not lacking:  # an export from before metadata_version: every key it needs is there
            return None
        where = "metadata.json has" if meta else "no metadata.json beside it, so it has"
        return (f"compressor model {onnx_file}: {where} no metadata_version and no {', '.join(lacking)}: "
                "defaults used; if the model was trained otherwise (letter case), export it again")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StageError(f"compressor model {onnx_file}: metadata_version must be a positive integer, got {version!r}")
    if version > METADATA_VERSION:
        raise StageError(f"compressor model {onnx_file}: metadata_version {version} is newer than this odcf reads "
                         f"({METADATA_VERSION}); upgrade odcf or export the model with this one")
    return None


def _load_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            raise StageError(f"{path}: cannot read model metadata: the file is empty")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StageError(f"{path}: cannot read model metadata: {exc}") from None
    if not isinstance(data, dict):
        raise StageError(f"{path}: model metadata must be a JSON object")
    return data


def _resolve_tokenizer(onnx_file: Path, meta: dict[str, Any]) -> Path:
    name = str(meta.get("tokenizer", "minilm-uncased"))
    beside = onnx_file.parent / name
    if beside.is_file():
        return beside
    if beside.is_dir() and (beside / "tokenizer.json").is_file():
        return beside / "tokenizer.json"
    shared = TOKENIZERS_DIR / name / "tokenizer.json"
    if shared.is_file():
        return shared
    raise StageError(f"compressor model {onnx_file}: tokenizer {name!r} not found beside it or in {TOKENIZERS_DIR}")


@dataclass
class _Chunk:
    text_index: int
    word_index: np.ndarray  # word index of each sub-token (without [CLS]/[SEP])
    ids: np.ndarray
    types: np.ndarray  # token type of each sub-token (all 0 unless the model reads letter case)


@dataclass
class TokenClassifier:
    """Keep probabilities per word from an ONNX token classifier (label 1 = keep).

    Create with :meth:`load`; the ONNX session and tokenizer are shared per process.
    """

    onnx_file: Path
    tokenizer_file: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    max_len: int = 256
    batch_size: int = 1
    threads: int | None = None
    #: The ONNX file's full sha256 (set by :meth:`load`).
    sha256: str | None = None
    #: The model path as given to :meth:`load`, or ``"bundled"`` for the shipped model.
    path: str = "bundled"
    #: Why the delivery record should doubt the metadata (:func:`check_metadata_version`), else None.
    warning: str | None = None
    #: Where ``max_len`` came from, for the error when the model cannot run windows that long.
    max_len_from: str | None = None

    @classmethod
    def load(
        cls,
        model_path: str | Path | None = None,
        *,
        max_len: int | None = None,
        batch_size: int = 1,
        threads: int | None = None,
    ) -> TokenClassifier:
        """Load the model at *model_path* (folder or ``.onnx``), or the shipped one when None."""
        path = Path(model_path) if model_path is not None else DEFAULT_MODEL_DIR
        if model_path is None and not (path / "metadata.json").is_file():
            raise StageError(
                f"the shipped compressor model is missing from {path}; pass model_path= "
                "or retrain it with `odcf train` and `odcf export`"
            )
        onnx_file, meta = read_metadata(path)
        sha = check_sha256(onnx_file, meta)
        warning = check_metadata_version(onnx_file, meta)
        if max_len is not None:
            if not (_is_int(max_len) and max_len >= 8):
                raise StageError(f"compressor: max_len must be an integer of at least 8, got {max_len!r}")
            n, n_from = max_len, f"max_len={max_len}"
        else:
            n = meta.get("max_len", 256)  # an integer of at least 8: read_metadata checked it
            n_from = (f'{_metadata_file(path)}: "max_len": {n}' if "max_len" in meta
                      else f"the default max_len {n} (none in metadata)")
        if batch_size < 1:
            raise StageError(f"compressor: batch_size must be positive, got {batch_size}")
        clf = cls(
            onnx_file=onnx_file,
            tokenizer_file=_resolve_tokenizer(onnx_file, meta),
            metadata=meta,
            max_len=n,
            batch_size=batch_size,
            threads=threads,
            sha256=sha,
            path=("bundled" if model_path is None or path.resolve() in (DEFAULT_MODEL_DIR, DEFAULT_MODEL_DIR / ONNX_DEFAULT)
                  else str(model_path)),
            warning=warning,
            max_len_from=n_from,
        )
        clf.warm_up()
        return clf

    def warm_up(self) -> None:
        """Create the session and the tokenizer (both cached per process)."""
        self._session = get_session(self.onnx_file, threads=self.threads)
        self._tok = load_tokenizer(self.tokenizer_file)
        self._inputs = [i.name for i in self._session.get_inputs()]
        out = self._session.get_outputs()[0]
        self._output = out.name
        self._check_interface(out.shape)
        cls_id = self._tok.token_to_id("[CLS]")
        sep_id = self._tok.token_to_id("[SEP]")
        pad_id = self._tok.token_to_id("[PAD]")
        if cls_id is None or sep_id is None:
            raise StageError(f"tokenizer {self.tokenizer_file}: no [CLS]/[SEP] tokens")
        self._cls, self._sep, self._pad = cls_id, sep_id, pad_id or 0
        types = self.metadata.get("token_types")
        if types not in (None, CASE_TYPES):
            raise StageError(f"compressor model {self.onnx_file}: unknown token_types {types!r} in metadata.json")
        self._case = types == CASE_TYPES
        if self._case and "token_type_ids" not in self._inputs:
            raise StageError(f"compressor model {self.onnx_file}: token_types is {types!r} but the ONNX "
                             "graph has no token_type_ids input")
        self._check_tokenizer()
        self._check_window()

    def _check_interface(self, shape: Sequence[Any]) -> None:
        """Refuse an ONNX graph that is not a token classifier of odcf's form (inputs ``input_ids`` and
        maybe ``attention_mask`` and ``token_type_ids``; logits ``[batch, seq, 2]``), so that another
        model is one error naming what it takes and gives, not a misleading one (a missing input read
        as a tokenizer mismatch) or a Python error at the first text."""
        known = ("input_ids", "attention_mask", "token_type_ids")
        if "input_ids" not in self._inputs or any(n not in known for n in self._inputs):
            raise StageError(f"compressor model {self.onnx_file}: its inputs are {self._inputs}; a token classifier "
                             f"takes input_ids (and maybe attention_mask, token_type_ids)")
        if len(shape) != 3 or (isinstance(shape[-1], int) and shape[-1] != 2):
            raise StageError(f"compressor model {self.onnx_file}: its output {self._output} has shape {list(shape)}; "
                             "a token classifier gives logits [batch, seq, 2] (drop, keep)")

    def _check_window(self) -> None:
        """Refuse a ``max_len`` longer than the model reads (a BERT-class model has 512 position
        embeddings): run one window of ``max_len`` sub-tokens, so that it is one error at load, not an
        ONNX Runtime error at the first text that long. On failure the longest window that runs is
        searched for (by halving) and named."""
        key = (str(self.onnx_file.resolve()), self.max_len)
        if key in _WINDOWS:
            return

        def runs(n: int) -> str | None:
            chunk = _Chunk(0, np.zeros(n - 2, dtype=np.int64), np.full(n - 2, self._sep, dtype=np.int64),
                           np.zeros(n - 2, dtype=np.int64))
            try:
                self._run([chunk], check=False)
            except StageError:
                raise
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
                return _first_line(exc)
            return None

        error = runs(self.max_len)
        if error is not None:
            good, bad = 3, self.max_len  # the tokenizer probe ran a window of 3
            while bad - good > 1:
                mid = (good + bad) // 2
                good, bad = (mid, bad) if runs(mid) is None else (good, mid)
            where = self.max_len_from or f"max_len {self.max_len}"
            raise StageError(f"compressor model {self.onnx_file}: {where} is more than the model reads: a window of "
                             f"{self.max_len} sub-tokens does not run (ONNX Runtime: {error}); the longest that runs "
                             f"is {good} (a BERT-class model has 512 position embeddings): set max_len to at most {good}")
        _WINDOWS.add(key)

    def _check_tokenizer(self) -> None:
        """Refuse a tokenizer that is not the model's: another file than the export's (sha256), another
        vocabulary size, or ids past the model's word embedding (one run of the highest id)."""
        meta, mismatch = self.metadata, f"tokenizer {self.tokenizer_file} does not match compressor model {self.onnx_file}"
        want_sha = meta.get("tokenizer_sha256")
        if want_sha and file_sha256(self.tokenizer_file) != str(want_sha).lower():
            raise StageError(f"{mismatch}: its sha256 {file_sha256(self.tokenizer_file)[:16]}… is not the "
                             f"{str(want_sha)[:16]}… of the tokenizer the model was exported with")
        size = tokenizer_vocab_size(self._tok)
        want_size = meta.get("tokenizer_vocab_size")
        if want_size is not None and want_size != size:
            raise StageError(f"{mismatch}: its vocabulary has {size} ids, the model's {want_size}")
        key = (str(self.onnx_file.resolve()), str(Path(self.tokenizer_file).resolve()))
        if key in _PROBED:
            return
        try:
            self._run([_Chunk(0, np.zeros(1, dtype=np.int64), np.asarray([size - 1], dtype=np.int64),
                              np.zeros(1, dtype=np.int64))], check=False)
        except StageError:
            raise
        except Exception as exc:  # onnxruntime raises its own exception types
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise StageError(f"{mismatch}: the model cannot read the tokenizer's highest id {size - 1} (its word "
                             f"embedding has fewer rows than the tokenizer's {size} ids; ONNX Runtime: {first})") from None
        _PROBED.add(key)

    @property
    def threshold(self) -> float:
        """The calibrated keep threshold from the metadata (0.5 when absent; a number from 0 to 1,
        checked at load)."""
        return float(self.metadata.get("threshold", 0.5))

    # -- public ------------------------------------------------------------------------------
    def word_probs(self, texts: Sequence[str]) -> list[np.ndarray]:
        """For each text, a float64 array with one keep probability per :func:`split_words` word."""
        spans = [split_words(t) for t in texts]
        return self.word_probs_for(texts, spans)

    def word_probs_for(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> list[np.ndarray]:
        """Like :meth:`word_probs` with the words given as character spans of each text."""
        chunks: list[_Chunk] = []
        for ti, (text, sp) in enumerate(zip(texts, spans)):
            # each word as its NFC form (odcf.textutil.nfc): a combining accent reads as the composed letter
            chunks.extend(self._chunks(ti, [nfc(text[s:e]) for s, e in sp]))
        sums = [np.zeros(len(sp), dtype=np.float64) for sp in spans]
        counts = [np.zeros(len(sp), dtype=np.float64) for sp in spans]
        order = sorted(range(len(chunks)), key=lambda i: (len(chunks[i].ids), i))
        for b in range(0, len(order), self.batch_size):
            batch = [chunks[i] for i in order[b:b + self.batch_size]]
            probs = self._run(batch)
            for chunk, p in zip(batch, probs):
                n = len(chunk.ids)
                np.add.at(sums[chunk.text_index], chunk.word_index, p[1:n + 1])
                np.add.at(counts[chunk.text_index], chunk.word_index, 1.0)
        out: list[np.ndarray] = []
        for s, c in zip(sums, counts):
            # A word without sub-tokens (only characters the tokenizer strips) gets probability 0.
            out.append(np.divide(s, c, out=np.zeros_like(s), where=c > 0))
        return out

    # -- internals ---------------------------------------------------------------------------
    def _chunks(self, text_index: int, words: list[str]) -> list[_Chunk]:
        if not words:
            return []
        enc = self._tok.encode(words, is_pretokenized=True, add_special_tokens=False)
        ids = np.asarray(enc.ids, dtype=np.int64)
        wid = np.asarray([-1 if w is None else w for w in enc.word_ids], dtype=np.int64)
        keep = wid >= 0
        ids, wid = ids[keep], wid[keep]
        types = (np.asarray([case_type(w) for w in words], dtype=np.int64)[wid] if self._case
                 else np.zeros(len(ids), dtype=np.int64))
        window = self.max_len - 2
        # sub-token range of each word
        starts = np.searchsorted(wid, np.arange(len(words)), side="left")
        ends = np.searchsorted(wid, np.arange(len(words)), side="right")
        chunks: list[_Chunk] = []
        lo = 0  # first word of the current chunk
        n_words = len(words)
        while lo < n_words:
            # furthest word end that fits the window
            limit = starts[lo] + window
            hi = lo
            best_sentence = -1
            while hi < n_words and ends[hi] <= limit:
                if _SENT_END_RE.search(words[hi]):
                    best_sentence = hi
                hi += 1
            if hi == n_words:
                cut = n_words
            elif best_sentence >= lo:
                cut = best_sentence + 1
            elif hi > lo:
                cut = hi
            else:
                cut = lo + 1  # a single word longer than the window: its first sub-tokens only
            a, z = starts[lo], min(ends[cut - 1], starts[lo] + window)
            if z > a:
                chunks.append(_Chunk(text_index, wid[a:z], ids[a:z], types[a:z]))
            lo = cut
        return chunks

    def _run(self, batch: list[_Chunk], *, check: bool = True) -> np.ndarray:
        width = max(len(c.ids) for c in batch) + 2
        input_ids = np.full((len(batch), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for r, c in enumerate(batch):
            n = len(c.ids)
            input_ids[r, 0] = self._cls
            input_ids[r, 1:n + 1] = c.ids
            input_ids[r, n + 1] = self._sep
            mask[r, :n + 2] = 1
            types[r, 1:n + 1] = c.types
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {k: v for k, v in feeds.items() if k in self._inputs}
        if not check:  # the load-time probe: its error is raised as one StageError, not logged as well
            import onnxruntime

            quiet = onnxruntime.RunOptions()
            quiet.log_severity_level = 4
            logits = self._session.run([self._output], feeds, quiet)[0]
        else:
            try:
                logits = self._session.run([self._output], feeds)[0]
            except Exception as exc:  # onnxruntime raises its own exception types
                first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
                raise StageError(f"compressor model {self.onnx_file} (tokenizer {self.tokenizer_file}) failed to "
                                 f"run: {first}") from None
        logits = np.asarray(logits, dtype=np.float64)
        if logits.shape != (*input_ids.shape, 2):  # a graph whose declared shape is not fixed
            raise StageError(f"compressor model {self.onnx_file}: gave logits of shape {list(logits.shape)} for "
                             f"input_ids of shape {list(input_ids.shape)}; a token classifier gives [batch, seq, 2]")
        return 1.0 / (1.0 + np.exp(logits[..., 0] - logits[..., 1]))
