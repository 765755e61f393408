import dataclasses

import pytest

from odcf.document import Document, Segment, Source, TraceEvent, sha256


def test_source_validates_kind_layer_and_confidence():
    with pytest.raises(ValueError, match="unknown kind"):
        Source(id="a", text="x", kind="pdf")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown layer"):
        Source(id="a", text="x", layer="notes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence"):
        Source(id="a", text="x", confidence=1.5)


def test_a_lone_surrogate_is_refused_naming_the_source_and_the_character():
    from odcf.document import unicode_problem

    # "\ud800" is valid JSON; the string it decodes to has no UTF-8 form to hash, count or write
    with pytest.raises(ValueError, match=r"^source 'x': text holds a lone surrogate \(U\+D800\) at character 3; "
                                         r"it is not valid Unicode text$"):
        Source(id="x", text="abc\ud800def")
    assert unicode_problem("caf\u00e9 \udc00") == ("holds a lone surrogate (U+DC00) at character 5; "
                                                 "it is not valid Unicode text")
    assert unicode_problem("caf\u00e9 \U0001f600 \u4e2d") is None and unicode_problem("plain") is None


def test_a_nul_character_is_refused_by_the_api_as_by_the_cli_and_batch():
    # QA: Compressor.compress("Refund \x00 $5.") delivered the NUL character, where `odcf compress` refuses the file
    # and `odcf batch` the record ("binary data, not text")
    from odcf import Compressor
    from odcf.errors import InputError

    with pytest.raises(ValueError, match=r"^source 'x': text holds a NUL character at character 7: binary data, not text$"):
        Source(id="x", text="Refund \x00 $5.")
    with pytest.raises(InputError, match=r"^source 'source-1': text holds a NUL character at character 7"):
        Compressor.from_ontology("general").compress("Refund \x00 $5.", budget=50)


def test_source_id_must_be_a_string_and_meta_a_mapping():
    with pytest.raises(ValueError, match="source id must be a string, got NoneType None"):
        Source(id=None, text="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source 'a': meta must be a mapping, got list"):
        Source(id="a", text="x", meta=[1])  # type: ignore[arg-type]
    assert dict(Source(id="a", text="x", meta={"k": 1}).meta) == {"k": 1}


def test_document_is_immutable_and_replace_appends_trace():
    doc = Document.from_sources([Source(id="a", text="Hello.")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.query = "x"  # type: ignore[misc]
    ev = TraceEvent(stage="s", data={"n": 1})
    doc2 = doc.with_event(ev, query="q")
    assert doc.trace == () and doc2.trace == (ev,) and doc2.query == "q" and doc.query is None
    with pytest.raises(TypeError):
        doc2.meta["x"] = 1  # type: ignore[index]


def test_duplicate_source_ids_rejected():
    with pytest.raises(ValueError, match="duplicate source id"):
        Document.from_sources([Source(id="a", text="1"), Source(id="a", text="2")])


def test_a_generated_source_id_never_takes_one_the_caller_gave():
    from odcf.compressor import to_sources
    from odcf.errors import InputError

    srcs = to_sources([{"text": "A."}, {"id": "source-1", "text": "B."}, "C.", {"id": "source-3-2", "text": "D."},
                       {"text": "E.", "id": None}])
    assert [s.id for s in srcs] == ["source-1-2", "source-1", "source-3", "source-3-2", "source-5"]
    with pytest.raises(InputError, match="duplicate source id 'x'"):  # two the caller gave: still an error
        to_sources([{"id": "x", "text": "A."}, {"id": "x", "text": "B."}])


def test_segment_helpers():
    seg = Segment(id="a#0", source_id="a", index=0, text="x", original="x")
    seg2 = seg.with_reason("stage: why", status="dropped")
    assert seg2.dropped and seg2.reasons == ("stage: why",) and not seg.dropped
    assert sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize("field", ["id", "origin", "speaker", "timestamp", "category", "read_range"])
def test_a_lone_surrogate_in_any_string_of_a_source_is_refused_naming_the_field(field):
    kw = {"id": "x", "text": "ok", field: "a\ud800b"}
    with pytest.raises(ValueError, match=(r"^source id 'a\\ud800b' holds a lone surrogate" if field == "id"
                                          else rf"^source 'x': {field} holds a lone surrogate \(U\+D800\) at character 1")):
        Source(**kw)


def test_a_real_number_of_any_type_is_a_confidence_and_a_bool_is_not(plan, tmp_path):
    # QA: confidence=np.float32(0.5) or Decimal("0.5") was "not a number" (numpy ints were a budget)
    import json
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np

    from odcf.compressor import Compressor
    from odcf.handoff.errors import HandoffError

    for value in (np.float32(0.5), np.float64(0.5), Decimal("0.5"), Fraction(1, 2), np.int64(1)):
        src = Source(id="a", text="x", confidence=value)
        assert src.confidence == float(value) and type(src.confidence) is float
        r = Compressor(plan).compress({"text": "The cap is $5.", "confidence": value}, budget=50,
                                      trace=tmp_path / "t.jsonl")
        assert r.document.sources[0].confidence == float(value)
        assert json.loads((tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()[0])
        h = Compressor(plan).handoff("writer", [{"id": "a", "text": "The cap is $5.", "confidence": value}], budget=100)
        assert "The cap is $5." in h.text
    assert type(Source(id="a", text="x", confidence=1).confidence) is int  # plain numbers as given
    for bad in (True, np.bool_(True), "0.5", Decimal("sNaN"), Decimal("NaN"), np.float32(1.5), None.__class__):
        with pytest.raises(ValueError, match="confidence"):
            Source(id="a", text="x", confidence=bad)
        with pytest.raises(HandoffError, match=r"\[0\]\.confidence: must be a number in \[0, 1\]"):
            Compressor(plan).handoff("writer", [{"id": "a", "text": "The cap is $5.", "confidence": bad}], budget=100)
