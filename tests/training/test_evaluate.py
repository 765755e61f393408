"""`odcf eval` end to end on the tiny corpus and the tiny fixture model."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.test_data import write_corpus

pytest.importorskip("datasets")
pytest.importorskip("spacy")

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_token_classifier"


def test_eval_command_writes_the_table(tmp_path: Path) -> None:
    from odcf.cli.main import main

    data = write_corpus(tmp_path / "data")
    out = tmp_path / "eval.md"
    rc = main(["eval", "--data", str(data), "--model", str(TINY), "--work", str(tmp_path / "run"),
               "--threads", "1", "--out", str(out), "--json", str(tmp_path / "new" / "eval.json"),
               "--compare", f"again={TINY}"])
    assert rc == 0
    md = out.read_text(encoding="utf-8")
    assert "WNUT-17 test" in md and "| 1 |" in md
    assert "| again | " in md
    import json

    res = json.loads((tmp_path / "new" / "eval.json").read_text())  # its folder made at the end
    wnut = res["sources"]["wnut17"]
    assert wnut["words"] == 3  # "We love Netflix!"
    assert wnut["rate_0.333"]["entity_kept"]["of"] == 1
    # the budget rows: the stage's order (p / tokens ** 0.25) and probability alone, both written out
    assert wnut["tokens_0.333"]["cost_exponent"] == 0.25 and wnut["tokens_0.333_p"]["cost_exponent"] == 0.0
    assert "order p / tokens^0.25" in md and "probability order alone" in md
    # speed: the stage's way (each chunk alone) per thread count, and padded batches for comparison
    assert [(s["threads"], s["batch_size"]) for s in res["speed"]] == [(1, 1), (1, 32)]
    assert "| 1 | 32 (padded batches; not what the stage does) |" in md


def test_eval_on_a_corpus_alone_names_the_model_shows_the_peers_and_leaves_out_empty_columns(tmp_path: Path) -> None:
    from odcf.backends.token_classifier import DEFAULT_MODEL_DIR
    from odcf.cli.main import main
    from odcf.training.evaluate import model_label
    from tests.training.test_corpus import contract_rows, write_jsonl

    rows = contract_rows(6)
    for r, split in zip(rows, ("train", "train", "dev", "dev", "test", "test")):
        r["split"] = split
    corpus = write_jsonl(tmp_path / "mine.jsonl", rows)
    out = tmp_path / "eval.md"
    assert main(["eval", "--corpus", str(corpus), "--sources", "", "--model", str(TINY), "--work",
                 str(tmp_path / "run"), "--threads", "1", "--out", str(out)]) == 0
    table = out.read_text(encoding="utf-8").split("## Model comparison", 1)[1].strip().splitlines()[2:]
    # no WNUT-17 / QMSum column: the held-out data has no such rows (nor, for the tiny model, layers or
    # bytes); the corpus columns hold the model's and the peers' figures (QA S: the peers were all "—")
    assert table[0] == ("| model | corpus entities kept 3:1 words | corpus entities kept 5.2:1 words | "
                        "corpus entities kept 3:1 o200k tokens | corpus must-keep kept 3:1 words | words/s, 1 thread |")
    assert table[2].startswith(f"| model under test ({TINY}) | ")
    assert table[3].startswith("| heuristic peer (no model") and len(table) == 5
    for row in table[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(c.endswith("/4)") for c in cells[1:4]), row  # "Acme Corp" in each of the 2 test documents
        assert all(c != "—" for c in cells[1:5]), row
    assert model_label(DEFAULT_MODEL_DIR) == "shipped" == model_label(Path(DEFAULT_MODEL_DIR) / "model.int8.onnx")


def test_a_peer_row_with_nothing_in_the_columns_shown_is_left_out() -> None:
    from odcf.training.evaluate import render_comparison

    res = {"metadata": {}, "sources": {}, "speed": [{"threads": 1, "batch_size": 1, "words_per_s": 900}]}
    table = render_comparison([("model under test", res)], [("heuristic peer", {})])
    assert table[-3:] == ["| model | words/s, 1 thread |", "|---|---|", "| model under test | 900 |"]


def test_the_report_names_the_entity_words_a_model_leaves_out_by_kind() -> None:
    import numpy as np

    from odcf.training.evaluate import _wnut_checks, missed_entity_words

    rows = [{"text": "they 've seen Into the Wild", "entity": [1, 0, 0, 1, 1, 1]},
            {"text": "the democrats won", "entity": [1, 1, 0]}]
    probs = [np.array([0.1, 0.0, 0.5, 0.2, 0.3, 0.9]), np.array([0.25, 0.15, 0.8])]
    miss = missed_entity_words(rows, probs, rate=1 / 3)  # 3 of 9 words kept: Wild, won, seen
    assert miss["missed"] == 5
    assert miss["kinds"]["capitalised"]["words"] == [["Into", 0.2]]
    assert miss["kinds"]["function word or punctuation"]["words"] == [["they", 0.1], ["the", 0.3], ["the", 0.25]]
    assert miss["kinds"]["other lower-case word"]["words"] == [["democrats", 0.15]]
    lines = _wnut_checks({"rate_0.333": {"entity_kept": {"share": None}}, "rate_0.192": {"entity_kept": {"share": None}},
                          "missed_entities": miss})
    text = "\n".join(lines)
    assert ("The 5 gold entity words left out at 3:1 words, by kind: 1 capitalised, 3 function word or "
            "punctuation, 1 other lower-case word.") in text
    assert "- function word or punctuation: `they` (0.10), `the` (0.30), `the` (0.25)" in text
