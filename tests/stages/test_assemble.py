import json

from odcf.compressor import Compressor
from odcf.document import sha256


def test_record_per_source_and_segment(plan, contract_text):
    c = Compressor(plan, stages={"rules": False, "fold": False})
    r = c.compress([{"id": "msa", "text": contract_text, "origin": "contracts/msa.md"}], query="liability", budget=60)
    rec = r.record
    assert rec["tokens_in"] == r.tokens_in and rec["tokens_out"] == r.tokens_out
    assert rec["plan_hash"] == plan.hash and rec["sha256"] == sha256(r.text)
    src = rec["sources"][0]
    assert src["origin"] == "contracts/msa.md" and src["source_sha256"] == sha256(contract_text)
    assert src["status"] == "compressed" and src["read_range"] == "whole"
    body = r.text.split("\n", 1)[1]
    assert src["sha256"] == sha256(body)
    statuses = {g["status"] for g in src["segments"]}
    assert statuses == {"verbatim", "dropped"}
    for g in src["segments"]:
        if g["status"] == "verbatim":
            assert g["tokens_out"] == g["tokens_in"] and g["text" if False else "sha256"] != sha256("")
        else:
            assert g["tokens_out"] == 0 and g["reason"]
    assert r.text.startswith("[source 1/1] contracts/msa.md | fact | relevance ")
    json.dumps(rec)  # JSON-ready


def test_everything_fits_is_verbatim_and_unannotated_text_is_the_source(plan):
    text = "First sentence here. Second sentence there.\n\nA new paragraph."
    r = Compressor(plan, stages={"rules": False, "fold": False}).compress(text, budget=1000, annotate=False)
    assert r.text == text
    assert r.record["sources"][0]["status"] == "verbatim"


def test_a_source_the_rules_stage_edited_is_compressed_not_verbatim(plan, tmp_path):
    from odcf.reverify import verify_record

    text = "Intro [draft] text.\n<!-- editor note -->\nTODO: check the cap\n\nThe cap is $5,000."
    path = tmp_path / "notes.md"
    path.write_text(text, encoding="utf-8")
    r = Compressor(plan).compress([{"id": "notes", "text": text, "origin": str(path)},
                                   {"id": "plain", "text": "Nothing to clean here."}], budget=1000, timings=False)
    edited, plain = r.record["sources"]
    assert (edited["status"], plain["status"]) == ("compressed", "verbatim")
    assert edited["tokens_out"] < edited["tokens_in"] and "[draft]" not in r.text and "TODO" not in r.text
    assert {g["status"] for g in edited["segments"]} == {"verbatim"}  # verbatim cuts of the cleaned text
    assert not verify_record(r.record, text=r.text, plan=plan)  # and `odcf verify` agrees


def test_records_are_byte_identical_without_timings(plan, contract_text):
    c = Compressor(plan, stages={"rules": False, "fold": False})
    a = c.compress(contract_text, query="liability", budget=60, timings=False)
    b = Compressor(plan, stages={"rules": False, "fold": False}).compress(contract_text, query="liability", budget=60,
                                                                          timings=False)
    assert a.record_json() == b.record_json()
    assert all("ms" not in ev for ev in a.record["stages"])
