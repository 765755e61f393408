"""The same text in NFC and in NFD (combining accents, as macOS file names and text copied from a
PDF are) scores and is selected the same, and is delivered with the characters it came with."""
import unicodedata
from pathlib import Path

import pytest

import odcf

from odcf.compressor import Compressor

FILLER = [
    "Order #W48170{n:02d} shipped with gateway GW-77{n:02d}. The device shows error E0{n:02d} after firmware 5.1.{n}. "
    "Please do not roll back to 5.1; we tried that on ticket INC-903{n:02d} and it failed.",
    "Customer asked whether the courier could leave parcel {n} with a neighbour. The agent said yes.",
]


def _document() -> str:
    parts = []
    for n in range(1, 13):
        parts.append(f"Message {n} — Customer — 2025-04-{n:02d} 09:00\n\n" + FILLER[n % 2].format(n=n))
        if n == 7:
            parts.append("Message 40 — Customer (Renée Müller-Şahin) — 2025-04-30 10:00\n\n"
                         "Señor Ortiz at Hamnvägen 12, Göteborg confirmed the café order. "
                         "Renée approved a refund of $45.00, unless the parcel is replaced within 3 days.")
    return "\n\n---\n\n".join(parts) + "\n"


#: A counter that costs both spellings the same (its normaliser strips accents): with o200k_base an NFD
#: text costs more tokens, and a fill to the edge of the budget may then take one piece less.
TOKENIZER = "hf:" + str(Path(odcf.__file__).parent / "data" / "tokenizers" / "minilm-uncased" / "tokenizer.json")


def _run(text: str, query: str, stages=None, tokenizer=TOKENIZER):
    comp = Compressor.from_ontology("customer_service", stages=stages)
    return comp.compress([{"id": "thread.md", "text": text}], query=query, budget=150, timings=False,
                         tokenizer=tokenizer)


@pytest.mark.parametrize("stages", [None, {"rerank": {"embedder": "hash", "first_pass": "lexical"}}],
                         ids=["default", "hash-embedder"])
@pytest.mark.parametrize("query_form", ["NFC", "NFD"])
def test_nfd_document_is_scored_and_selected_as_its_nfc_spelling(stages, query_form):
    nfc_text = _document()
    nfd_text = unicodedata.normalize("NFD", nfc_text)
    assert nfd_text != nfc_text
    query = unicodedata.normalize(query_form, "what did Renée say about the café order refund")
    a, b = _run(nfc_text, query, stages), _run(nfd_text, query, stages)
    assert {s.id: s.score for s in a.document.segments} == {s.id: s.score for s in b.document.segments}
    assert [s.id for s in a.document.segments if not s.dropped] == [s.id for s in b.document.segments if not s.dropped]
    assert unicodedata.normalize("NFC", b.text) == a.text
    # delivered as written: the NFD characters, not a rewritten (composed) copy
    assert b.text == unicodedata.normalize("NFD", b.text)
    if stages is None:  # the message the query names, its header first
        assert "Message 40 — Customer (Renée Müller-Şahin)" in a.text
        assert "Message 40 — Customer (Rene\u0301e Mu\u0308ller-S\u0327ahin)" in b.text
    assert b.record["query"] == query


def test_protected_spans_found_in_nfd_point_at_the_characters_as_written():
    text = unicodedata.normalize("NFD", _document())
    r = _run(text, "refund", tokenizer=None)
    spans = [(s, sp) for s in r.document.segments for sp in s.protected]
    assert spans
    for seg, sp in spans:
        assert seg.original[sp.start:sp.end] == sp.text
    assert any(sp.text == "$45.00" for _, sp in spans)


def test_nfc_map_offsets_point_into_the_text_as_written():
    from odcf.textutil import nfc_map

    norm, pos = nfc_map("cafe\u0301 Mu\u0308ller")
    assert norm == "café Müller"
    assert len(pos) == len(norm) + 1
    i = norm.index("Müller")
    assert "cafe\u0301 Mu\u0308ller"[pos[i]:pos[i + len("Müller")]] == "Mu\u0308ller"


@pytest.mark.parametrize("text, n", [
    ("임대차 계약은 2025년 3월 1일부터 2년간 유효하다. 임차인은 매월 5일까지 월세를 지급해야 한다. 보증금은 반환한다.", 3),
    ("Hợp đồng có hiệu lực. Ông Nam ký. Ấn định ngày 5. Ở Hà Nội.", 4),
    ("Договор вступает в силу. Арендатор платит 5 числа.", 2),
])
def test_sentences_split_the_same_in_nfc_and_nfd(text, n):
    # QA4: NFD Korean (jamo) was one sentence, and NFC Vietnamese did not split before "Ấn", "Ở"
    from odcf.textutil import split_sentences

    for form in ("NFC", "NFD"):
        t = unicodedata.normalize(form, text)
        spans = split_sentences(t)
        assert len(spans) == n, (form, [t[a:b] for a, b in spans])
        assert "".join(t[a:b] for a, b in spans).replace(" ", "") == t.replace(" ", "")
