"""A run folder never ships weights it does not describe: stale models, resumes of other settings,
failed exports and user mistakes are one clear error, and nothing loadable is left behind."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")
pytest.importorskip("datasets")
pytest.importorskip("spacy")

from odcf.errors import OdcfError
from tests.training.test_data import write_corpus
from tests.training.test_train_export_smoke import tiny_backbone


def _base(tmp_path: Path) -> dict:
    return {"data_dir": str(write_corpus(tmp_path / "data")), "backbone": str(tiny_backbone(tmp_path / "bb")),
            "layers": (), "epochs": 1, "batch_size": 4, "build": {"ontology_dir": None}, "train_dev_sources": ()}


@pytest.mark.slow
def test_export_refuses_a_model_the_run_data_no_longer_describe(tmp_path: Path, monkeypatch) -> None:
    import odcf.training.finetune as ft
    from odcf.training.export import export_run

    base = _base(tmp_path)
    run = tmp_path / "run"
    ft.train(ft.TrainConfig(out_dir=str(run), **base))
    stamp = (run / "dataset" / "odcf_build.json").read_text()
    # bad options are refused before the labelled data is touched
    with pytest.raises(OdcfError, match=r"--layers 5: the backbone has layers 0..1"):
        ft.train(ft.TrainConfig(out_dir=str(run), **{**base, "layers": (0, 5)}))
    with pytest.raises(OdcfError, match=r"--max-len 1000: the backbone has 160 position embeddings"):
        ft.train(ft.TrainConfig(out_dir=str(run), max_len=1000, **base))
    assert (run / "dataset" / "odcf_build.json").read_text() == stamp

    # a retrain on other data that fails after rebuilding RUN/dataset: the old RUN/model stays
    def boom(*a, **k):
        raise RuntimeError("killed")
    monkeypatch.setattr(ft, "load_model", boom)
    with pytest.raises(RuntimeError):
        ft.train(ft.TrainConfig(out_dir=str(run), max_len=64, **base))
    monkeypatch.undo()
    assert (run / "dataset" / "odcf_build.json").read_text() != stamp
    with pytest.raises(OdcfError, match=r"run/model has no record of the data it was trained on.*retrain"):
        export_run(run, tmp_path / "model", min_agreement=0.0, threads=1)
    assert not (tmp_path / "model").exists()


@pytest.mark.slow
def test_resume_refuses_other_settings_and_a_missing_checkpoint(tmp_path: Path) -> None:
    from odcf.training.finetune import TrainConfig, train

    base = _base(tmp_path)
    with pytest.raises(OdcfError, match=r"--resume: no checkpoint to resume from"):
        train(TrainConfig(out_dir=str(tmp_path / "fresh"), **base), resume=True)
    run = tmp_path / "run"
    train(TrainConfig(out_dir=str(run), **base))
    with pytest.raises(OdcfError, match=r"configuration differs.*epochs: 1 -> 2; lr: 8e-05 -> 0.001"):
        train(TrainConfig(out_dir=str(run), **{**base, "epochs": 2}, lr=1e-3), resume=True)
    with pytest.raises(OdcfError, match=r"--resume: the training data differ from the checkpoint's"):
        train(TrainConfig(out_dir=str(run), max_len=64, **base), resume=True)
    # the same settings resume (all epochs done: nothing more to train) and still export
    report = train(TrainConfig(out_dir=str(run), threads=1, **base), resume=True)
    assert [e["epoch"] for e in report["epochs"]] == [1]


@pytest.mark.slow
def test_a_failed_export_leaves_nothing_loadable_and_bad_paths_are_refused_first(tmp_path: Path) -> None:
    from odcf.training.export import export_run
    from odcf.training.finetune import TrainConfig, train

    run = tmp_path / "run"
    train(TrainConfig(out_dir=str(run), **_base(tmp_path)))
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(OdcfError, match=r"--out .*afile: is a file, not a folder"):
        export_run(run, afile, threads=1)
    with pytest.raises(OdcfError, match=r"--max-len 1000: must be between 8 and the model's 160"):
        export_run(run, tmp_path / "m", max_len=1000, threads=1)
    with pytest.raises(OdcfError, match=r"on the \d+ held-out words compared \(\d+ disagree at the threshold"):
        export_run(run, tmp_path / "m", min_agreement=1.01, threads=1)
    assert not (tmp_path / "m").exists()
    assert not list((run / "export").rglob("*.onnx")) and not list((run / "export").rglob("metadata.json"))


def test_export_of_a_folder_that_is_not_a_run_is_one_clear_error(tmp_path: Path) -> None:
    from odcf.training.export import export_run

    with pytest.raises(OdcfError, match="not a run folder written by `odcf train` \\(no dataset/odcf_build.json\\)"):
        export_run(tmp_path, tmp_path / "out")
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "odcf_build.json").write_text(json.dumps({"fingerprint": "x"}))
    (tmp_path / "model").mkdir()
    with pytest.raises(OdcfError, match=r"no trained model \(no model/config.json"):
        export_run(tmp_path, tmp_path / "out")


def test_train_out_that_is_a_file_is_one_clear_error(tmp_path: Path, capsys) -> None:
    from odcf.cli.main import main
    from tests.training.test_corpus import contract_rows, write_jsonl

    corpus = write_jsonl(tmp_path / "mine.jsonl", contract_rows(5))
    afile = tmp_path / "afile"
    afile.write_text("x")
    bb = str(tiny_backbone(tmp_path / "bb"))
    capsys.readouterr()
    for out, said in ((afile, "is a file, not a folder"), (afile / "run", "which is a file, not a folder")):
        assert main(["train", "--corpus", str(corpus), "--sources", "", "--out", str(out), "--backbone", bb,
                     "--layers", "all"]) == 1
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _untrained_run(run: Path) -> Path:
    """A run folder as `odcf train` leaves it, without the training: labelled data from a corpus,
    a model configuration and the record that the model was trained on those data."""
    from transformers import BertConfig

    from odcf.training.finetune import TRAINED_RECORD
    from tests.training.test_data import corpus_run

    corpus_run(run)
    BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=160).save_pretrained(run / "model")
    fingerprint = json.loads((run / "dataset" / "odcf_build.json").read_text())["fingerprint"]
    (run / "model" / TRAINED_RECORD).write_text(json.dumps({"dataset_fingerprint": fingerprint}))
    return run


def test_export_and_eval_of_a_run_with_damaged_labelled_data_are_one_clear_error(tmp_path: Path, capsys) -> None:
    """QA S: `odcf export` and `odcf eval --work` of a run whose dataset/ lost its test split, or whose
    test data file was overwritten, printed a Python traceback."""
    import shutil

    from odcf.cli.main import main
    from tests.training.test_evaluate import TINY

    run = _untrained_run(tmp_path / "run")
    arrow = next((run / "dataset" / "test").glob("*.arrow"))
    for damage, damaged in ((lambda: arrow.write_bytes(b"garbage"), str(arrow)),
                            (lambda: shutil.rmtree(run / "dataset" / "test"), f"{run}/dataset/test/")):
        damage()
        capsys.readouterr()
        assert main(["export", str(run), "--out", str(tmp_path / "m"), "--threads", "1"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("odcf export: error: ") and damaged in err, err
        assert f"retrain with `odcf train --out {run}`" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert main(["eval", "--work", str(run), "--model", str(TINY), "--threads", "1"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("odcf eval: error: ") and damaged in err and f"`odcf train --out {run}`" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m").exists()


def test_export_of_a_file_says_it_is_a_file(tmp_path: Path) -> None:
    from odcf.training.export import export_run

    afile = tmp_path / "afile.txt"
    afile.write_text("x")
    with pytest.raises(OdcfError, match=r"afile.txt: is a file, not a run folder$"):
        export_run(afile, tmp_path / "out")
    with pytest.raises(OdcfError, match=r"nothere: not a run folder \(no such folder\)"):
        export_run(tmp_path / "nothere", tmp_path / "out")


def test_a_failed_train_leaves_no_folder_it_made_and_keeps_the_users(tmp_path: Path, capsys) -> None:
    """QA S: every rejected corpus left an empty --out folder (runs/miss2/) behind."""
    from odcf.cli.main import main

    bb = str(tiny_backbone(tmp_path / "bb"))
    nope = tmp_path / "nope.jsonl"
    mine = tmp_path / "mine"
    mine.mkdir()
    for out in (tmp_path / "runs" / "miss2", mine):
        assert main(["train", "--corpus", str(nope), "--sources", "", "--out", str(out), "--backbone", bb,
                     "--layers", "all"]) == 1
        assert "nope.jsonl: corpus file not found" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # both folders it made are gone
    assert mine.is_dir()  # the user's own folder stays, empty as it was
