"""The data builder on a tiny corpus written here (WNUT-style CoNLL and QMSum-style JSONL)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from odcf.errors import InputError

pytest.importorskip("datasets")
pytest.importorskip("spacy")

WNUT = {
    "wnut17train.conll": "Empire\tB-location\nState\tI-location\nBuilding\tI-location\nlooks\tO\ngreat\tO\ntoday\tO\n.\tO\n\n"
                         "I\tO\nmet\tO\nJohn\tB-person\nat\tO\n5\tO\npm\tO\n\n",
    "emerging.dev.conll": "Paris\tB-location\nis\tO\nnice\tO\n\n",
    "emerging.test.annotated": "We\tO\nlove\tO\nNetflix\tB-corporation\n!\tO\n\n",
}


def write_corpus(root: Path) -> Path:
    (root / "ner_wnut17").mkdir(parents=True)
    for name, text in WNUT.items():
        (root / "ner_wnut17" / name).write_text(text, encoding="utf-8")
    (root / "qa_qmsum").mkdir()
    meetings = []
    for m in range(12):
        meetings.append({
            "meeting_transcripts": [
                {"speaker": "A", "content": f"Okay . Um so meeting {m} starts ."},
                {"speaker": "B", "content": "We agreed the budget is 25 euros for the remote control ."},
                {"speaker": "C", "content": "Uh yeah {vocalsound} I think so ."},
            ],
            "specific_query_list": [{"query": "What was the budget?",
                                     "answer": "The group agreed on a budget of 25 euros for the remote.",
                                     "relevant_text_span": [["1", "1"]]}],
        })
    (root / "qa_qmsum" / "val.jsonl").write_text("\n".join(json.dumps(x) for x in meetings) + "\n", encoding="utf-8")
    return root


def test_builder_labels_and_splits_by_document(tmp_path: Path) -> None:
    from odcf.training.data import BuildConfig, build_dataset

    data = write_corpus(tmp_path / "data")
    cfg = BuildConfig(data_dir=str(data), out_dir=str(tmp_path / "run"), ontology_dir=None)
    dd = build_dataset(cfg)
    wnut = {r["text"]: r for split in ("train", "dev", "test") for r in dd[split] if r["source"] == "wnut17"}
    first = wnut["Empire State Building looks great today."]
    assert first["entity"] == [1, 1, 1, 0, 0, 0]
    assert first["weights"][:3] == [3.0, 3.0, 3.0]
    assert first["labels"][:3] == [1, 1, 1]
    met = wnut["I met John at 5 pm"]
    assert met["labels"][met["text"].split().index("5")] == 1 and met["number"][4] == 1
    assert [r["text"] for r in dd["test"] if r["source"] == "wnut17"] == ["We love Netflix!"]

    q = [r for split in ("train", "dev", "test") for r in dd[split] if r["source"] == "qmsum"]
    assert len(q) == 12  # only evidence turns, one window each
    row = q[0]
    kept = [w for w, lab in zip(row["text"].split(), row["labels"]) if lab]
    assert {"budget", "25", "euros", "remote"} <= set(kept)
    assert "the" not in kept and "We" not in kept
    # a meeting is in exactly one split
    by_meeting: dict[str, set[str]] = {}
    for split in ("train", "dev", "test"):
        for r in dd[split]:
            if r["source"] == "qmsum":
                by_meeting.setdefault(r["doc"].split("/")[1], set()).add(split)
    assert all(len(s) == 1 for s in by_meeting.values())
    # same configuration: reused, not rebuilt
    assert (Path(cfg.out_dir) / "dataset" / "odcf_build.json").is_file()
    again = build_dataset(cfg)
    assert again["train"]["text"] == dd["train"]["text"]


def test_bio_spans_read_bio_tags() -> None:
    from odcf.training.data import bio_spans

    tags = ["B-person", "I-person", "O", "I-location", "B-location", "I-person"]
    assert bio_spans(tags) == [(0, 2, "person"), (3, 4, "location"), (4, 5, "location"), (5, 6, "person")]


def test_mention_swaps_add_train_copies_with_same_type_entities(tmp_path: Path) -> None:
    from odcf.training.data import BuildConfig, build_dataset

    data = write_corpus(tmp_path / "data")
    (data / "ner_wnut17" / "wnut17train.conll").write_text(
        "I\tO\nmet\tO\nJohn\tB-person\ntoday\tO\n\n"
        "Mary\tB-person\nAnn\tI-person\ncalled\tO\nfrom\tO\nBerlin\tB-location\n\n"
        "Rome\tB-location\nis\tO\nwarm\tO\n\n"
        "no\tO\nnames\tO\nhere\tO\n\n", encoding="utf-8")
    base = build_dataset(BuildConfig(data_dir=str(data), out_dir=str(tmp_path / "a"), ontology_dir=None))
    cfg = BuildConfig(data_dir=str(data), out_dir=str(tmp_path / "b"), ontology_dir=None, wnut_augment=3)
    assert cfg.fingerprint() != BuildConfig(data_dir=str(data), out_dir="x", ontology_dir=None).fingerprint()
    dd = build_dataset(cfg)
    swaps = [r for r in dd["train"] if "/swap" in r["doc"]]
    assert len(swaps) == 9  # three sentences with an entity, three copies each; none of "no names here"
    assert [r for r in dd["train"] if "/swap" not in r["doc"]] == list(base["train"])
    assert dd["dev"]["text"] == base["dev"]["text"] and dd["test"]["text"] == base["test"]["text"]
    people, places = {"John", "Mary Ann"}, {"Berlin", "Rome"}
    texts = set()
    for r in swaps:
        words = r["text"].split()
        ents = " ".join(w for w, e in zip(words, r["entity"]) if e)
        texts.add(r["text"])
        if r["doc"].startswith("wnut17/train/0/"):
            assert words[:2] == ["I", "met"] and words[-1] == "today" and ents in people
        elif r["doc"].startswith("wnut17/train/1/"):
            assert "called from" in r["text"] and any(ents == f"{p} {c}" for p in people for c in places)
        else:
            assert words[-2:] == ["is", "warm"] and ents in places
        assert all(lab == 1 and wt == 3.0 for lab, wt, e in zip(r["labels"], r["weights"], r["entity"]) if e)
    assert texts - set(base["train"]["text"])  # some copies really hold another entity
    rebuilt = build_dataset(BuildConfig(data_dir=str(data), out_dir=str(tmp_path / "c"), ontology_dir=None,
                                        wnut_augment=3))
    assert list(rebuilt["train"]) == list(dd["train"])


def test_bad_conll_line_says_where(tmp_path: Path) -> None:
    from odcf.training.data import read_conll

    f = tmp_path / "x.conll"
    f.write_text("ok\tO\nbroken-line\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"x.conll:2: expected"):
        read_conll(f)


def test_window_cuts_long_texts_at_sentence_ends() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER, Example, window

    text = " ".join(["Alpha beta gamma delta."] * 20)
    n = len(text.split())
    ex = Example("x", "d", "train", text, [1] * n, [1.0] * n, [0] * n, [0] * n)
    pieces = window(ex, load_tokenizer(DEFAULT_TOKENIZER), 24)
    assert len(pieces) > 1
    assert " ".join(p.text for p in pieces) == text
    assert all(p.text.endswith(".") for p in pieces)
    assert sum(len(p.labels) for p in pieces) == n


def corpus_run(run: Path) -> Path:
    """A run folder's labelled data from six corpus documents (two per split), no shared data."""
    from odcf.training.data import BuildConfig, build_dataset
    from tests.training.test_corpus import contract_rows, write_jsonl

    rows = contract_rows(6)
    for r, split in zip(rows, ("train", "train", "dev", "dev", "test", "test")):
        r["split"] = split
    corpus = write_jsonl(run.parent / f"{run.name}.jsonl", rows)
    build_dataset(BuildConfig(data_dir="", out_dir=str(run), ontology_dir=None, sources=("corpus",),
                              corpus=(str(corpus),)))
    return corpus


def test_damaged_labelled_data_are_named_and_built_again_not_reused(tmp_path: Path, caplog) -> None:
    """QA S: a run copied in part (a split removed, a data file overwritten, dataset_dict.json
    removed) had a matching fingerprint, so `odcf train` reused it and failed with a traceback."""
    import shutil

    from odcf.training.data import BuildConfig, build_dataset

    run = tmp_path / "run"
    corpus = corpus_run(run)
    data = run / "dataset"
    cfg = BuildConfig(data_dir="", out_dir=str(run), ontology_dir=None, sources=("corpus",), corpus=(str(corpus),))
    arrow = next((data / "test").glob("*.arrow")).relative_to(data).as_posix()
    damages = [
        (lambda: shutil.rmtree(data / "test"), f"{data}/test/"),
        (lambda: (data / arrow).write_text("garbage"), f"{data / arrow}: changed since the labelled data were built"),
        (lambda: (data / "dataset_dict.json").unlink(), f"{data}/dataset_dict.json: missing"),
    ]
    for damage, said in damages:
        damage()
        caplog.clear()
        with caplog.at_level("WARNING"):
            dd = build_dataset(cfg)
        assert [len(dd[s]) for s in ("train", "dev", "test")] == [2, 2, 2]
        warned = [r.getMessage() for r in caplog.records if "building them again" in r.getMessage()]
        assert len(warned) == 1 and said in warned[0], (said, warned)
        caplog.clear()
        with caplog.at_level("INFO"):
            build_dataset(cfg)  # whole again: reused
        assert any("reusing labelled data" in r.getMessage() for r in caplog.records)
    # the stamp records the sha256 of every file the build wrote (the fingerprint stays as it was)
    stamp = json.loads((data / "odcf_build.json").read_text())
    assert {"dataset_dict.json", "test/state.json", arrow} <= set(stamp["data_files"])


def test_load_labelled_names_the_damaged_part_also_for_an_older_stamp(tmp_path: Path) -> None:
    import shutil

    from odcf.training.data import load_labelled

    run = tmp_path / "run"
    corpus_run(run)
    data = run / "dataset"
    assert sorted(load_labelled(data)) == ["dev", "test", "train"]
    stamp = json.loads((data / "odcf_build.json").read_text())
    del stamp["data_files"]  # as an older odcf wrote it: no sha256 of the files to check
    (data / "odcf_build.json").write_text(json.dumps(stamp))
    arrow = next((data / "test").glob("*.arrow"))
    arrow.write_text("garbage")
    with pytest.raises(InputError, match=rf"^{data}/test: split test of the labelled data does not load \(Arrow"):
        load_labelled(data)
    shutil.rmtree(data / "dev")
    with pytest.raises(InputError, match=rf"^{data}/dev: split dev missing or incomplete \(no state.json\)"):
        load_labelled(data)
