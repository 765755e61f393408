"""Your own training data for the token compressor: one JSON object per line.

>>> import json, tempfile, os
>>> from odcf.training.corpus import read_corpus
>>> line = {"id": "msa-1", "text": "Liability is capped at 5% by Acme Corp.", "entities": [[29, 38]]}
>>> with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
...     _ = fh.write(json.dumps(line) + "\\n")
>>> [(d.id, d.entities, d.split) for d in read_corpus(fh.name)]
[('msa-1', ((29, 38),), None)]
>>> os.unlink(fh.name)

Fields of a line (``.jsonl`` or ``.jsonl.gz``; blank lines are skipped):

* ``id`` (required): a non-empty string or an integer, unique within all corpus files; the split
  is drawn from it, so all windows of one document stay in one split.
* ``text`` (required): the document, a non-empty string. Long texts are cut into model windows
  at sentence ends, as the inference stage cuts them.
* ``entities`` (optional): character spans ``[start, end]`` (end exclusive; a third element, a
  label, is allowed and ignored) that must survive compression: every word they touch is
  *must-keep* (extra loss weight) and counts as a gold entity in ``odcf eval``. ``null`` or no key
  means none; another value that is not a list (``false``, ``{}``) is an error, as for ``keep``.
* ``keep`` (optional): character spans of ordinary *keep* words (the words a summary of the
  document needs). Without it, content words are *keep* (spaCy part of speech in the build's
  ``content_pos``, not a stop word) and negations too, as for WNUT-17. ``"keep": []`` is not the
  same: no ordinary keep word at all (the build warns, naming the documents).
* ``split`` (optional): ``train``, ``dev`` or ``test``; by default a stable hash of ``id`` puts
  one document in ten in test and one in ten in dev (``odcf.training.data.stable_split``, the rule
  that splits QMSum meetings).

Anchors (numbers, money, dates, URLs, codes, and the anchors and terms of the build's ontologies)
are *must-keep* in every document, as in the other sources. A malformed line stops the build with
one error naming ``FILE:LINE`` and what is wrong (an ``id`` or ``text`` holding a lone surrogate,
``"\\ud800"``, included). The builder skips, with a warning, documents not
mainly in Latin script (the compress stage never gives the model such text), and needs at least
one document in each split.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from odcf.document import unicode_problem
from odcf.errors import InputError

SPLIT_NAMES = ("train", "dev", "test")


@dataclass(frozen=True)
class CorpusDoc:
    id: str
    text: str
    entities: tuple[tuple[int, int], ...]
    keep: tuple[tuple[int, int], ...] | None
    split: str | None
    where: str  # FILE:LINE


def corpus_files(paths: Sequence[str]) -> list[Path]:
    """The corpus files named by *paths* (files, or folders read recursively in sorted order)."""
    out: list[Path] = []
    first: dict[str, str] = {}  # real path -> how it was named first
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.name.endswith((".jsonl", ".jsonl.gz")))
            if not found:
                raise InputError(f"{p}: no .jsonl or .jsonl.gz files in this folder")
        elif p.is_file():
            found = [p]
        else:
            raise InputError(f"{p}: corpus file not found")
        for q in found:
            real = os.path.realpath(q)
            if real in first:
                raise InputError(f"{q}: corpus file given twice (also as {first[real]}); its documents would count twice")
            first[real] = str(q)
        out += found
    return out


def corpus_digest(paths: Sequence[str]) -> dict[str, str]:
    """``{file: sha256}`` of the corpus files, so that a changed file rebuilds the labelled data."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus_files(paths)}


def read_corpus(*paths: str) -> Iterator[CorpusDoc]:
    """Validated documents of the corpus files, in file and line order."""
    seen: dict[str, str] = {}
    for path in corpus_files(paths):
        opener = gzip.open if path.name.endswith(".gz") else open
        try:
            with opener(path, "rb") as fh:
                n = 0
                for ln, raw in enumerate(fh, 1):
                    where = f"{path}:{ln}"
                    if ln == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
                        raw = raw[3:]
                    if not raw.strip():
                        continue
                    n += 1
                    doc = _parse(raw, where)
                    if doc.id in seen:
                        raise InputError(f"{where}: id {doc.id!r} already used at {seen[doc.id]}")
                    seen[doc.id] = where
                    yield doc
                if not n:
                    raise InputError(f"{path}: the corpus file is empty (no documents)")
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: cannot read: {exc}") from exc


def _parse(raw: bytes, where: str) -> CorpusDoc:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: invalid UTF-8 at byte {exc.start} of the line") from exc
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except RecursionError:  # as odcf batch reads a JSON Lines record
        raise InputError(f"{where}: not valid JSON (nested too deeply)") from None
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    doc_id = obj.get("id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or (isinstance(doc_id, str) and not doc_id.strip()):
        raise InputError(f"{where}: 'id' must be a non-empty string or an integer, got {doc_id!r}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: 'text' must be a non-empty string")
    split = obj.get("split")
    if split is not None and split not in SPLIT_NAMES:
        raise InputError(f"{where}: 'split' must be one of {', '.join(SPLIT_NAMES)}, got {split!r}")
    unknown = sorted(set(obj) - {"id", "text", "entities", "keep", "split"})
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(unknown)} (known: id, text, entities, keep, split)")
    # valid JSON can hold a lone surrogate ("\ud800", as tools write a string cut inside an emoji);
    # it cannot be written as UTF-8, and spaCy then failed with a traceback naming no line (QA S)
    for name, value in (("id", doc_id), ("text", text)):
        problem = unicode_problem(value) if isinstance(value, str) else None
        if problem:
            raise InputError(f"{where}: '{name}' {problem}")
    # only null or an absent key means "none": false, 0, "" or {} is a mistake, for entities as for
    # keep (QA S: "entities": {} trained silently with no must-keep word)
    keep = _spans(obj["keep"], "keep", text, where) if obj.get("keep") is not None else None
    entities = _spans(obj["entities"], "entities", text, where) if obj.get("entities") is not None else ()
    return CorpusDoc(str(doc_id), text, entities, keep, split, where)


def _spans(value: Any, name: str, text: str, where: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, list):
        raise InputError(f"{where}: '{name}' must be a list of [start, end] spans")
    out = []
    for k, span in enumerate(value):
        ok = isinstance(span, list) and len(span) in (2, 3) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in span[:2])
        if not ok:
            raise InputError(f"{where}: {name}[{k}] must be [start, end] or [start, end, label], got {span!r}")
        start, end = span[0], span[1]
        if not 0 <= start < end <= len(text):
            raise InputError(f"{where}: {name}[{k}] = [{start}, {end}] is not a span of the text "
                             f"(0 <= start < end <= {len(text)})")
        if not text[start:end].strip():
            raise InputError(f"{where}: {name}[{k}] = [{start}, {end}] covers only whitespace")
        out.append((start, end))
    return tuple(out)


def touched(words: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[bool]:
    """For each word ``(start, end)``: does any span overlap it?

    >>> touched([(0, 5), (6, 9), (10, 14)], [(7, 12)])
    [False, True, True]
    """
    if not spans:
        return [False] * len(words)
    size = max(max(e for _, e in spans), max((e for _, e in words), default=0)) + 1
    cover = np.zeros(size + 1, dtype=np.int64)  # difference array of span coverage per character
    for a, b in spans:
        cover[a] += 1
        cover[b] -= 1
    covered = np.concatenate([[0], np.cumsum(np.cumsum(cover)[:size] > 0)])  # covered chars before i
    return [bool(covered[e] - covered[s] > 0) for s, e in words]


__all__ = ["CorpusDoc", "read_corpus", "corpus_files", "corpus_digest", "touched"]
