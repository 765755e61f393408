"""The context health report: where the tokens are, and what compression would do with them.

>>> from odcf.report import analyze
>>> report = analyze(["Order #W123 shipped.", open("log.txt").read()], plan, role="writer")  # doctest: +SKIP
>>> report.tokens_total, [s.tokens for s in report.sources]                                  # doctest: +SKIP
>>> json.dumps(report.to_dict())                                                             # doctest: +SKIP

It measures, on the inputs as given:

- tokens per source and per layer, with their shares of the total;
- entity density per segment: protected anchors, dictionary terms and NER entities (when the
  ``entities`` stage runs) plus numbers, per 100 tokens; runs of segments below the threshold
  are flagged as low-density regions;
- repeated structure: line prefixes shared by many lines of a source (log stamps, ``user:``,
  table pipes) with the tokens they cost, and boilerplate lines repeated within or across sources;
- noise: editor marks (TODO, ``[edit]``, HTML comments, track changes, zero-width characters),
  likely OCR garbage (words mostly made of symbols, replacement characters, broken hyphenation)
  and JSON that minifying would shrink, with the tokens it would save;
- what compression would save per stage: the pipeline runs once, and each stage's tokens in/out
  are read from the trace.

The compression run itself is kept (``report.result``) so the HTML report can show it.
"""
from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from odcf.document import LAYERS, Segment, Source
from odcf.rules.noise import INVISIBLE, TODO_LINE
from odcf.textutil import loads_json

#: A segment is low-density below this many entities per 100 tokens (and at least MIN_TOKENS long).
LOW_DENSITY = 1.0
MIN_TOKENS = 8

#: ASCII word boundaries: a number written against Chinese characters (175公里, 11.42亿元) counts too.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:/]\d+)*%?(?![\w])", re.ASCII)
_ENTITY_RULES = ("anchor:", "term", "entity:")

_EDITOR_MARKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("todo", TODO_LINE),  # the lines the rules stage removes, not every "TBD" in a sentence
    ("wiki_mark", re.compile(r"\[(?:edit|citation needed|clarification needed|when\?|who\?|update)\]", re.I)),
    ("html_comment", re.compile(r"<!--.*?-->", re.S)),
    ("track_change", re.compile(r"\{\+\+.*?\+\+\}|\{--.*?--\}|\{~~.*?~~\}|\{>>.*?<<\}|\{==.*?==\}", re.S)),
    ("invisible_char", INVISIBLE),  # not ZWJ in emoji or ZWNJ in Persian, nor RLM: they carry meaning
    ("control_char", re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")),
    ("separator_line", re.compile(r"^[ \t]*([-=_*~#+.])\1{7,}[ \t]*$", re.M)),
)
_OCR_HYPHEN = re.compile(r"[a-z]{2,}-\n[a-z]{2,}")
_WORDS = re.compile(r"\S+")
_PLAIN_PUNCT = set(".,;:!?'\"()[]{}-_/$%&@#*+=<>|`~^\\")


@dataclass(frozen=True)
class SourceStat:
    id: str
    origin: str | None
    kind: str
    layer: str
    tokens: int
    share: float
    tokens_out: int
    tokens_after_rules: int  # after source-level rules (HTML to text, JSON minify, noise removal)


@dataclass(frozen=True)
class LayerStat:
    layer: str
    tokens: int
    share: float
    sources: int
    tokens_out: int


@dataclass(frozen=True)
class SegmentDensity:
    segment: str
    source: str
    kind: str
    tokens: int
    entities: int
    per_100: float
    low: bool
    preview: str


@dataclass(frozen=True)
class LowDensityRegion:
    source: str
    first: str
    last: str
    segments: int
    tokens: int
    entities: int


@dataclass(frozen=True)
class RepeatedPrefix:
    source: str
    prefix: str
    lines: int
    tokens: int  # what the prefix costs over all its lines


@dataclass(frozen=True)
class Boilerplate:
    line: str
    occurrences: int
    sources: tuple[str, ...]
    tokens: int  # the cost of the repeats (occurrences - 1)


@dataclass(frozen=True)
class Noise:
    source: str
    kind: str
    count: int
    tokens: int  # tokens removing it (or minifying) would save
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class StageSaving:
    stage: str
    tokens_in: int
    tokens_out: int
    saved: int
    share: float  # of the input tokens


@dataclass(frozen=True)
class HealthReport:
    """What :func:`analyze` found. Frozen; ``to_dict()`` is the ``--json`` output."""

    domain: str
    plan_hash: str
    unit: str
    role: str | None
    query: str | None
    budget: int | None
    tokens_total: int
    tokens_out: int
    entity_source: str
    low_density_threshold: float
    sources: tuple[SourceStat, ...]
    layers: tuple[LayerStat, ...]
    density: tuple[SegmentDensity, ...]
    low_density: tuple[LowDensityRegion, ...]
    prefixes: tuple[RepeatedPrefix, ...]
    boilerplate: tuple[Boilerplate, ...]
    noise: tuple[Noise, ...]
    stages: tuple[StageSaving, ...]
    result: Any = field(default=None, compare=False, repr=False)

    @property
    def body_tokens(self) -> int:
        """Tokens delivered in the source bodies: ``tokens_out`` less the source headers and the
        separators (a short source can come out longer than it went in)."""
        return sum(s.tokens_out for s in self.sources)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.__dataclass_fields__:
            if key == "result":
                continue
            value = getattr(self, key)
            if isinstance(value, tuple):
                out[key] = [asdict(v) for v in value]
            else:
                out[key] = value
        out["low_density_tokens"] = sum(r.tokens for r in self.low_density)
        out["noise_tokens"] = sum(n.tokens for n in self.noise)
        out["prefix_tokens"] = sum(p.tokens for p in self.prefixes)
        out["boilerplate_tokens"] = sum(b.tokens for b in self.boilerplate)
        return out


def _entities_available() -> bool:
    return importlib.util.find_spec("odcf.stages.entities") is not None and importlib.util.find_spec("spacy") is not None


def analyze(
    sources: Any,
    plan: Any,
    *,
    role: str | None = None,
    query: str | None = None,
    budget: int | None = None,
    tokenizer: str | None = None,
    stages: Mapping[str, Any] | None = None,
    entities: bool | None = None,
    low_density: float = LOW_DENSITY,
    top: int = 10,
) -> HealthReport:
    """Measure *sources* under *plan* (a :class:`~odcf.plan.model.Plan`) and run the pipeline once.

    *entities*: run the spaCy ``entities`` stage for density (``None``: when spaCy is installed).
    *stages*: extra stage switches, as for :class:`~odcf.compressor.Compressor`.
    *top*: how many prefixes / boilerplate lines to keep (the largest token costs first).
    """
    from odcf.compressor import Compressor, to_sources
    from odcf.tokens import get_counter

    overrides = dict(stages or {})
    if entities is None:
        entities = _entities_available() and "entities" not in overrides
    if "entities" not in overrides:
        overrides["entities"] = bool(entities)
    compressor = Compressor(plan, stages=overrides, tokenizer=tokenizer)
    inputs = to_sources(sources)
    result = compressor.compress(inputs, query=query, role=role, budget=budget)
    doc = result.document
    record = result.record
    counter = get_counter(record.get("unit") or doc.tokenizer)
    count = counter.count

    in_tokens = {s.id: count(s.text) for s in inputs}
    total = sum(in_tokens.values())
    src_stats = _source_stats(inputs, in_tokens, total, record, {s.id: count(s.text) for s in doc.sources})
    layers = _layer_stats(src_stats, total)

    ran = {ev.stage for ev in doc.trace}
    entity_source = "anchors+terms+numbers" + ("+spacy" if "entities" in ran else "")
    density = tuple(_density(seg, count, low_density) for seg in doc.segments)
    regions = _regions(density)

    prefixes = sorted((p for src in inputs for p in _prefixes(src, count)),
                      key=lambda p: (-p.tokens, p.source, p.prefix))
    noise = [n for src in inputs for n in _noise(src, count)]
    stage_rows = tuple(
        StageSaving(ev.stage, ev.tokens_in, ev.tokens_out, ev.tokens_in - ev.tokens_out,
                    _share(ev.tokens_in - ev.tokens_out, total))
        for ev in doc.trace if ev.tokens_in is not None and ev.tokens_out is not None
    )
    return HealthReport(
        domain=plan.domain, plan_hash=plan.hash, unit=counter.name, role=record.get("role"), query=query,
        budget=record.get("budget"), tokens_total=total, tokens_out=result.tokens_out,
        entity_source=entity_source, low_density_threshold=low_density,
        sources=src_stats, layers=layers, density=density, low_density=regions,
        prefixes=tuple(prefixes[:top]), boilerplate=tuple(_boilerplate(inputs, count)[:top]),
        noise=tuple(noise), stages=stage_rows, result=result,
    )


def _source_stats(inputs: Any, in_tokens: Mapping[str, int], total: int, record: Mapping[str, Any],
                  after_rules: Mapping[str, int]) -> tuple[SourceStat, ...]:
    """One row per input source: tokens in, share, tokens delivered, tokens left after the rule stages."""
    out_tokens = {str(s["id"]): int(s.get("tokens_out") or 0) for s in record.get("sources", ())}
    return tuple(
        SourceStat(s.id, s.origin, s.kind, s.layer, in_tokens[s.id], _share(in_tokens[s.id], total),
                   out_tokens.get(s.id, 0), after_rules.get(s.id, in_tokens[s.id]))
        for s in inputs
    )


def _layer_stats(src_stats: tuple[SourceStat, ...], total: int) -> tuple[LayerStat, ...]:
    """Per layer (in LAYERS order, present layers only): tokens, share, sources, tokens delivered."""
    layers: list[LayerStat] = []
    for layer in LAYERS:
        members = [s for s in src_stats if s.layer == layer]
        if members:
            tok = sum(s.tokens for s in members)
            layers.append(LayerStat(layer, tok, _share(tok, total), len(members), sum(s.tokens_out for s in members)))
    return tuple(layers)


def _share(part: int, total: int) -> float:
    return round(part / total, 4) if total else 0.0


# -- density ---------------------------------------------------------------------------------

def entity_count(seg: Segment) -> int:
    """Anchors, terms and NER entities protected in *seg* (overlapping spans count once), plus
    numbers none of them covers."""
    regions: list[list[int]] = []
    for sp in sorted((sp for sp in seg.protected if sp.rule.startswith(_ENTITY_RULES)), key=lambda s: (s.start, s.end)):
        if regions and sp.start < regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], sp.end)
        else:
            regions.append([sp.start, sp.end])
    extra = sum(1 for m in _NUMBER.finditer(seg.original)
                if not any(a <= m.start() and m.end() <= b for a, b in regions))
    return len(regions) + extra


def _density(seg: Segment, count: Any, threshold: float) -> SegmentDensity:
    tokens = count(seg.original)
    ents = entity_count(seg)
    per_100 = round(100.0 * ents / tokens, 2) if tokens else 0.0
    preview = " ".join(seg.original.split())[:80]
    return SegmentDensity(seg.id, seg.source_id, seg.kind, tokens, ents, per_100,
                          tokens >= MIN_TOKENS and per_100 < threshold, preview)


def _regions(density: Sequence[SegmentDensity]) -> tuple[LowDensityRegion, ...]:
    """Runs of consecutive low-density segments within a source, largest first."""
    out: list[LowDensityRegion] = []
    run: list[SegmentDensity] = []

    def close() -> None:
        if run:
            out.append(LowDensityRegion(run[0].source, run[0].segment, run[-1].segment, len(run),
                                        sum(d.tokens for d in run), sum(d.entities for d in run)))
            run.clear()

    for d in density:
        if d.low and (not run or run[-1].source == d.source):
            run.append(d)
        else:
            close()
            if d.low:
                run.append(d)
    close()
    out.sort(key=lambda r: (-r.tokens, r.source, r.first))
    return tuple(out)


# -- repeated structure ----------------------------------------------------------------------

_PREFIX_PART = re.compile(r"\s*\S+\s+")


def _line_prefixes(line: str, most: int = 3) -> list[str]:
    """Candidate prefixes of a line: its leading whitespace-delimited words, 1 to *most* of them."""
    out: list[str] = []
    pos = 0
    for _ in range(most):
        m = _PREFIX_PART.match(line, pos)
        if not m:
            break
        pos = m.end()
        if pos >= len(line.rstrip()):
            break  # the prefix would be the whole line: that is boilerplate, not a prefix
        out.append(line[:pos])
    return out


def _prefixes(src: Source, count: Any, min_lines: int = 3) -> list[RepeatedPrefix]:
    lines = [ln for ln in src.text.splitlines() if ln.strip()]
    if len(lines) < min_lines:
        return []
    counts: Counter[str] = Counter()
    for ln in lines:
        for p in _line_prefixes(ln):
            counts[p] += 1
    frequent = {p: n for p, n in counts.items() if n >= min_lines and p.strip()}
    # greedy by cost: a prefix nested in (or extending) one already taken would count the same tokens twice
    ranked = sorted(((n * count(p), p, n) for p, n in frequent.items()), key=lambda t: (-t[0], t[1]))
    out: list[RepeatedPrefix] = []
    for cost, p, n in ranked:
        if cost <= 0 or any(p.startswith(q.prefix) or q.prefix.startswith(p) for q in out):
            continue
        out.append(RepeatedPrefix(src.id, p, n, cost))
    return out


def _norm_line(line: str) -> str:
    return " ".join(line.split())


def _boilerplate(sources: Sequence[Source], count: Any) -> list[Boilerplate]:
    where: dict[str, list[str]] = defaultdict(list)
    for src in sources:
        for ln in src.text.splitlines():
            key = _norm_line(ln)
            if len(key) >= 12 and sum(ch.isalpha() for ch in key) >= 6:
                where[key].append(src.id)
    out: list[Boilerplate] = []
    for line, ids in where.items():
        distinct = tuple(dict.fromkeys(ids))
        if len(ids) >= 3 or len(distinct) >= 2:
            out.append(Boilerplate(line, len(ids), distinct, count(line) * (len(ids) - 1)))
    out.sort(key=lambda b: (-b.tokens, b.line))
    return out


# -- noise -----------------------------------------------------------------------------------

def _wordish(ch: str) -> bool:
    """A letter, digit, combining mark (Devanagari, Thai and Tamil vowel signs), emoji or joiner:
    what a word of real text is made of in some script."""
    return ch.isalnum() or unicodedata.category(ch) in ("Mn", "Mc", "Me", "So", "Cf")


def _ocr_garbage_word(word: str) -> bool:
    if "\ufffd" in word:
        return True
    core = word.strip(".,;:!?\"'()[]")
    if len(core) < 4:
        return False
    odd = sum(1 for ch in core if not _wordish(ch) and ch not in _PLAIN_PUNCT)
    symbols = sum(1 for ch in core if not _wordish(ch))
    if odd >= 2 and odd / len(core) >= 0.3:
        return True
    # symbol soup: mostly symbols of many kinds ("~#;l|^~"), but not table rules or ellipses ("|---|", "....")
    if symbols / len(core) >= 0.6 and len({ch for ch in core if not _wordish(ch)}) >= 4 \
            and not re.fullmatch(r"[|:\-+=_. ]+", core):
        return True
    # letters and symbols interleaved, e.g. "t#e;r~" (URLs, paths and code are mostly excluded by needing 3 switches)
    if symbols / len(core) >= 0.5 and sum(ch.isalpha() for ch in core) >= 2:
        switches = sum(1 for a, b in zip(core, core[1:]) if _wordish(a) != _wordish(b))
        return switches >= 4 and not re.search(r"[/\\]|\.\w{2,4}$|^[<{\[]|[>}\]]$", core)
    return False


def _noise(src: Source, count: Any) -> list[Noise]:
    out: list[Noise] = []
    text = src.text
    whole: int | None = None
    for kind, rx in _EDITOR_MARKS:
        hits = [m.group(0) for m in rx.finditer(text)]
        if hits:
            # measured in place: a mark counted alone is a token or more, but an invisible character
            # inside a word often shares a token with a letter, so removing it saves less
            whole = count(text) if whole is None else whole
            out.append(Noise(src.id, f"editor_mark:{kind}", len(hits), max(0, whole - count(rx.sub("", text))),
                             tuple(dict.fromkeys(h[:40] for h in hits))[:3]))
    garbage = [w for w in _WORDS.findall(text) if _ocr_garbage_word(w)]
    if src.kind not in ("json", "html") and garbage:
        out.append(Noise(src.id, "ocr_garbage", len(garbage), sum(count(w) for w in garbage),
                         tuple(dict.fromkeys(w[:40] for w in garbage))[:3]))
    hyph = _OCR_HYPHEN.findall(text)
    if hyph:
        # joining "exam-\nple" saves about one token per break
        saved = sum(max(0, count(h) - count(h.replace("-\n", ""))) for h in hyph)
        out.append(Noise(src.id, "ocr_hyphenation", len(hyph), saved, tuple(h.replace("\n", "\\n") for h in hyph[:3])))
    saved, n = _minify_savings(text, count)
    if n:
        out.append(Noise(src.id, "minifiable_json", n, saved))
    return out


def _minify_savings(text: str, count: Any) -> tuple[int, int]:
    """(tokens saved by minifying, JSON values found): the whole text, else each JSON line."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = loads_json(stripped)
        except ValueError:
            value = None
        else:
            mini = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            return max(0, count(text) - count(mini)), 1
    saved = n = 0
    for line in text.splitlines():
        s = line.strip()
        if len(s) < 2 or s[0] not in "{[" or s[-1] not in "}]":
            continue
        try:
            value = loads_json(s)
        except ValueError:
            continue
        mini = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        diff = count(line) - count(mini)
        if diff > 0:
            saved += diff
            n += 1
    return saved, n
