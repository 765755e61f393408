"""Your own training corpus (`odcf train --corpus`): validation, labels, splits, rebuilds."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odcf.errors import InputError
from odcf.training.corpus import read_corpus, touched
from odcf.training.data import stable_split

CLAUSE = "Liability of Acme Corp is capped at 5% of the contract value."


def write_jsonl(path: Path, rows: list, *, raw_lines: tuple[str, ...] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in rows] + list(raw_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def contract_rows(n: int = 30) -> list[dict]:
    start = CLAUSE.index("Acme Corp")
    return [{"id": f"doc-{i}", "text": CLAUSE, "entities": [[start, start + len("Acme Corp"), "ORG"]]}
            for i in range(n)]


def test_reads_valid_lines_skips_blank_ones_and_reads_gzip(tmp_path: Path) -> None:
    plain = write_jsonl(tmp_path / "a.jsonl", [{"id": 7, "text": "Hello there", "keep": [[0, 5]], "split": "dev"}],
                        raw_lines=("",))
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "z", "text": "Second file"}) + "\n")
    docs = list(read_corpus(str(plain), str(tmp_path / "b.jsonl.gz")))
    assert [(d.id, d.keep, d.split, d.entities) for d in docs] == [("7", ((0, 5),), "dev", ()), ("z", None, None, ())]
    # a folder is read recursively in sorted order
    assert [d.id for d in read_corpus(str(tmp_path))] == ["7", "z"]
    nulls = write_jsonl(tmp_path / "n" / "n.jsonl", [{"id": 1, "text": "None here", "entities": None},
                                                     {"id": 2, "text": "None either", "entities": []}])
    assert [d.entities for d in read_corpus(str(nulls))] == [(), ()]


@pytest.mark.parametrize("line, message", [
    ('{"id": "a", "text": "x"', "not valid JSON"),
    ('["a", "b"]', "expected a JSON object, got list"),
    ("[" * 100_000, "not valid JSON (nested too deeply)"),
    ('{"text": "no id"}', "'id' must be a non-empty string or an integer"),
    ('{"id": true, "text": "bool id"}', "'id' must be a non-empty string or an integer"),
    ('{"id": "a"}', "'text' must be a non-empty string"),
    ('{"id": "a", "text": "   "}', "'text' must be a non-empty string"),
    ('{"id": "a", "text": "abc", "split": "holdout"}', "'split' must be one of train, dev, test"),
    ('{"id": "a", "text": "abc", "label": 1}', "unknown field(s) label"),
    ('{"id": "a", "text": "abc", "entities": [[0, 9]]}', "entities[0] = [0, 9] is not a span of the text"),
    ('{"id": "a", "text": "abc", "entities": [[2, 1]]}', "is not a span of the text"),
    ('{"id": "a", "text": "a c", "keep": [[1, 2]]}', "keep[0] = [1, 2] covers only whitespace"),
    ('{"id": "a", "text": "abc", "entities": [[0, "2"]]}', "entities[0] must be [start, end]"),
    ('{"id": "a", "text": "abc", "keep": "0-2"}', "'keep' must be a list"),
    # valid JSON, not text: spaCy failed with a traceback naming no line (QA S)
    ('{"id": "x11", "text": "Acme \\ud800 Corp pays Globex."}',
     "'text' holds a lone surrogate (U+D800) at character 5"),
    ('{"id": "\\udc00", "text": "abc"}', "'id' holds a lone surrogate (U+DC00) at character 0"),
    # only null or no key means no entities, as for keep (QA S: these trained with no must-keep word)
    ('{"id": "a", "text": "abc", "entities": false}', "'entities' must be a list"),
    ('{"id": "a", "text": "abc", "entities": 0}', "'entities' must be a list"),
    ('{"id": "a", "text": "abc", "entities": ""}', "'entities' must be a list"),
    ('{"id": "a", "text": "abc", "entities": {}}', "'entities' must be a list"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "ok", "text": "fine"}], raw_lines=(line,))
    with pytest.raises(InputError) as err:
        list(read_corpus(str(path)))
    assert f"{path}:2: " in str(err.value) and message in str(err.value)


def test_duplicate_ids_invalid_utf8_and_missing_files(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": "x", "text": "one"}, {"id": "x", "text": "two"}])
    with pytest.raises(InputError, match=r"d.jsonl:2: id 'x' already used at .*d.jsonl:1"):
        list(read_corpus(str(path)))
    bad = tmp_path / "e.jsonl"
    bad.write_bytes(b'{"id": "a", "text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"e.jsonl:1: invalid UTF-8"):
        list(read_corpus(str(bad)))
    with pytest.raises(InputError, match="corpus file not found"):
        list(read_corpus(str(tmp_path / "nope.jsonl")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .jsonl or .jsonl.gz files"):
        list(read_corpus(str(tmp_path / "empty")))


def test_stable_split_is_a_stable_tenth_each_for_test_and_dev() -> None:
    splits = [stable_split(f"corpus:doc-{i}") for i in range(2000)]
    assert splits == [stable_split(f"corpus:doc-{i}") for i in range(2000)]
    assert 150 < splits.count("test") < 250 and 150 < splits.count("dev") < 250


def test_builder_labels_a_corpus_without_the_shared_data(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    pytest.importorskip("spacy")
    from odcf.training.data import BuildConfig, build_dataset

    rows = contract_rows()
    rows.append({"id": "kept", "text": "Payment is due within 30 days of the invoice date.",
                 "keep": [[0, 7], [40, 50]], "split": "test"})
    corpus = write_jsonl(tmp_path / "corpus.jsonl", rows)
    cfg = BuildConfig(data_dir="", out_dir=str(tmp_path / "run"), ontology_dir=None, sources=("corpus",),
                      corpus=(str(corpus),))
    dd = build_dataset(cfg)
    by_doc = {r["doc"]: (split, r) for split in ("train", "dev", "test") for r in dd[split]}
    assert len(by_doc) == len(rows)
    # the split is the stable hash of the id unless the line names one
    assert all(split == stable_split(f"corpus:{doc.split('/', 1)[1]}") for doc, (split, _) in by_doc.items() if doc != "corpus/kept")
    split, kept = by_doc["corpus/kept"]
    assert split == "test"
    words = kept["text"].split()
    # keep spans as given (no content-word rule), the number anchor must-keep, nothing else
    assert [w for w, lab in zip(words, kept["labels"]) if lab] == ["Payment", "30", "days", "invoice", "date."]
    assert [w for w, wt in zip(words, kept["weights"]) if wt > 1.0] == ["30", "days"]
    _, doc = by_doc["corpus/doc-0"]
    words = doc["text"].split()
    assert [w for w, e in zip(words, doc["entity"]) if e] == ["Acme", "Corp"]
    assert [w for w, wt in zip(words, doc["weights"]) if wt > 1.0] == ["Acme", "Corp", "5%"]
    # without keep spans: content words keep (spaCy part of speech), function words drop
    labelled = dict(zip(words, doc["labels"]))
    assert labelled["Liability"] == labelled["capped"] == labelled["contract"] == labelled["value."] == 1
    assert labelled["of"] == labelled["is"] == labelled["the"] == 0

    # a changed corpus file is a different build: the labelled data is rebuilt, not reused
    write_jsonl(corpus, contract_rows(12))
    assert sum(len(dd2) for dd2 in build_dataset(cfg).values()) == 12


def test_builder_errors_name_what_is_missing(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    from odcf.training.data import BuildConfig, build_dataset

    corpus = write_jsonl(tmp_path / "c.jsonl", contract_rows(3))
    with pytest.raises(InputError, match=r"data folder \(none\) not found \(pass --data PATH for the sources wnut17"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r1"), sources=("wnut17", "corpus"),
                                  corpus=(str(corpus),)))
    with pytest.raises(InputError, match="source 'corpus' needs corpus files"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r2"), sources=("corpus",)))
    with pytest.raises(InputError, match="unknown training source"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r3"), sources=("tweets",)))
    with pytest.raises(InputError, match="no training source"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r4"), sources=()))


def test_a_split_left_empty_and_non_latin_documents(tmp_path: Path, caplog) -> None:
    pytest.importorskip("datasets")
    pytest.importorskip("spacy")
    from odcf.training.data import BuildConfig, build_dataset

    rows = contract_rows(6)
    for r in rows:
        r["split"] = "train"
    rows[0]["split"] = "test"
    corpus = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError, match=r"no dev document in sources corpus: every split needs some"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r1"), ontology_dir=None, sources=("corpus",),
                                  corpus=(str(corpus),)))
    # a document not mainly in Latin script is left out, with a warning naming its line
    rows[1]["split"] = "dev"
    rows.append({"id": "zh", "text": "合同约定违约金为合同总价的百分之五。", "entities": [[0, 2]], "split": "train"})
    write_jsonl(corpus, rows)
    with caplog.at_level("WARNING"):
        dd = build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r2"), ontology_dir=None,
                                       sources=("corpus",), corpus=(str(corpus),)))
    assert "corpus/zh" not in {r["doc"] for s in dd for r in dd[s]}
    assert "1 document(s) skipped, not mainly Latin script" in caplog.text and f"{corpus}:7" in caplog.text
    only_zh = write_jsonl(tmp_path / "zh.jsonl", [rows[-1]])
    with pytest.raises(InputError, match="no document in mainly Latin script"):
        build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r3"), ontology_dir=None, sources=("corpus",),
                                  corpus=(str(only_zh),)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 6)), max_size=12),
       st.lists(st.tuples(st.integers(0, 40), st.integers(1, 10)), max_size=5))
def test_touched_is_the_overlap_rule(word_specs, span_specs) -> None:
    words = [(a, a + n) for a, n in word_specs]
    spans = [(a, a + n) for a, n in span_specs]
    assert touched(words, spans) == [any(a < e and b > s for a, b in spans) for s, e in words]


def test_empty_file_bom_and_a_file_given_twice(tmp_path: Path) -> None:
    from odcf.training.corpus import corpus_digest, read_corpus

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty.jsonl: the corpus file is empty"):
        list(read_corpus(str(empty)))
    bom = tmp_path / "bom" / "bom.jsonl"
    bom.parent.mkdir()
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": 1, "text": "Acme signed."}).encode() + b"\n")
    assert [d.text for d in read_corpus(str(bom))] == ["Acme signed."]
    for twice in ((str(bom), str(bom)), (str(bom.parent), str(bom))):
        with pytest.raises(InputError, match=r"bom.jsonl: corpus file given twice"):
            corpus_digest(twice)


def test_text_blocks_cover_a_multi_megabyte_text_in_bounded_pieces_without_splitting_words() -> None:
    from odcf.training.data import POS_BLOCK_CHARS, text_blocks

    # paragraphs, long lines with only sentence ends, and a run of characters with no space at all
    para = "Acme Corp shall not deliver goods after 3 May. The buyer pays invoice INV-7 in full.\n"
    paragraphs = (para * 5 + "\n") * 5000
    text = paragraphs + "No line ends here. " * 3000 + "x" * (POS_BLOCK_CHARS + 5) + " tail"
    assert len(text) > 2_000_000
    blocks = text_blocks(text)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(text)
    assert all(a < b <= a + POS_BLOCK_CHARS for a, b in blocks)
    assert all(b == a2 for (_, b), (a2, _) in zip(blocks, blocks[1:]))  # contiguous: offsets add up
    cuts = [b for _, b in blocks[:-1]]
    hard = [c for c in cuts if not text[c - 1].isspace()]
    assert len(hard) == 1 and set(text[hard[0] - 1:hard[0] + 1]) == {"x"}  # only inside the no-space run
    assert all(text[c - 2:c] == "\n\n" for c in cuts if c < len(paragraphs))  # at blank lines
    assert text_blocks("One two.\n\nThree four. Five six.", limit=20) == [(0, 10), (10, 22), (22, 31)]
    assert text_blocks("short", limit=20) == [(0, 5)]


def test_a_long_document_without_keep_is_tagged_in_bounded_pieces_with_the_same_labels(monkeypatch) -> None:
    spacy = pytest.importorskip("spacy")
    from spacy.language import Language

    from odcf.training import data
    from odcf.training.corpus import CorpusDoc
    from odcf.training.labels import AnchorSet

    @Language.component("odcf_test_pos")
    def _pos(doc):  # a stand-in tagger: its tags depend on the token alone, so pieces change nothing
        for t in doc:
            t.pos_ = "NUM" if t.like_num else "NOUN" if t.is_alpha and len(t.text) > 3 else "ADP"
        return doc

    class Recording:
        """spaCy's blank English with the stand-in tagger, noting the longest text and batch it got."""

        def __init__(self) -> None:
            self.nlp = spacy.blank("en")
            self.nlp.add_pipe("odcf_test_pos")
            self.longest = self.biggest_batch = 0
            self.max_length = self.nlp.max_length

        def pipe(self, items, **kw):
            items = list(items)
            texts = [t for t, _ in items] if kw.get("as_tuples") else items
            self.biggest_batch = max(self.biggest_batch, sum(map(len, texts)))
            self.longest = max([self.longest, *map(len, texts)])
            return self.nlp.pipe(items, **kw)

    text = "\n\n".join(f"The vendor Acme Corp shall not deliver goods after {i} May unless the buyer pays "
                       f"invoice INV-{i} in full.\nLate payment costs {i % 9}% a month." for i in range(2500))
    docs = [CorpusDoc("big", text, (), None, "train", "c.jsonl:1"),
            CorpusDoc("small", "Payment is not due within 30 days.", (), None, "train", "c.jsonl:2")]
    monkeypatch.setattr(data, "read_corpus", lambda *paths: iter(docs))
    cfg = data.BuildConfig(data_dir="", out_dir="unused", ontology_dir=None, sources=("corpus",), corpus=("c.jsonl",))
    anchors = AnchorSet.build(None)
    nlp = Recording()
    pieces = list(data.corpus_examples(cfg, nlp, anchors))
    assert len(text) > 10 * data.POS_BLOCK_CHARS
    assert nlp.longest <= data.POS_BLOCK_CHARS and nlp.biggest_batch <= data.POS_BATCH_CHARS
    # the same labels as the whole text tagged at once
    monkeypatch.setattr(data, "POS_BLOCK_CHARS", len(text))
    monkeypatch.setattr(data, "POS_BATCH_CHARS", 2 * len(text))
    monkeypatch.setattr(data, "text_blocks", lambda t, limit=0: [(0, len(t))])
    nlp.nlp.max_length = len(text) + 1
    whole = list(data.corpus_examples(cfg, nlp, anchors))
    assert nlp.longest == len(text)
    assert [(e.doc, e.labels, e.weights) for e in pieces] == [(e.doc, e.labels, e.weights) for e in whole]
    words = pieces[1].text.split()
    assert [w for w, lab in zip(words, pieces[1].labels) if lab] == ["Payment", "not", "30", "days."]


def test_paragraph_pieces_get_the_tagger_labels_of_the_whole_text() -> None:
    spacy = pytest.importorskip("spacy")
    from odcf.training.corpus import CorpusDoc
    from odcf.training.data import BuildConfig, content_spans

    nlp = spacy.load(BuildConfig(data_dir="", out_dir="").spacy_model, disable=["parser", "ner"])
    text = "\n\n".join(f"The vendor Acme Corp shall not deliver goods after {i} May unless the buyer pays invoice "
                       f"INV-{i} in full. Payment is due within {30 + i} days." for i in range(30))
    doc = CorpusDoc("x", text, (), None, None, "c.jsonl:1")
    pos = BuildConfig(data_dir="", out_dir="").content_pos
    whole = next(content_spans(nlp, [doc], pos, limit=len(text)))
    pieces = next(content_spans(nlp, [doc], pos, limit=400))
    assert whole == pieces and len(whole) > 300
    assert {text[a:b] for a, b in whole} >= {"vendor", "Acme", "not", "deliver", "Payment"}


def test_an_empty_keep_list_is_warned_about_with_the_document_id(tmp_path: Path, caplog) -> None:
    pytest.importorskip("datasets")
    pytest.importorskip("spacy")
    from odcf.training.data import BuildConfig, build_dataset

    rows = contract_rows(12)
    rows[3]["keep"] = []
    rows[5]["keep"] = [[0, 9]]
    rows[0]["split"], rows[1]["split"], rows[2]["split"] = "train", "dev", "test"
    corpus = write_jsonl(tmp_path / "c.jsonl", rows)
    with caplog.at_level("WARNING"):
        dd = build_dataset(BuildConfig(data_dir="", out_dir=str(tmp_path / "r"), ontology_dir=None,
                                       sources=("corpus",), corpus=(str(corpus),)))
    warned = [r.getMessage() for r in caplog.records if '"keep": []' in r.getMessage()]
    assert len(warned) == 1 and "1 document(s)" in warned[0] and f"id 'doc-3' ({corpus}:4)" in warned[0]
    rows_by_doc = {r["doc"]: r for s in dd for r in dd[s]}
    empty, absent = rows_by_doc["corpus/doc-3"], rows_by_doc["corpus/doc-4"]
    words = empty["text"].split()
    # "keep": [] = no ordinary keep word (entities and anchors only); left out = content words keep
    assert [w for w, lab in zip(words, empty["labels"]) if lab] == ["Acme", "Corp", "5%"]
    assert "Liability" in [w for w, lab in zip(words, absent["labels"]) if lab]
