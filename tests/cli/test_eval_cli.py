"""`odcf eval` checks its options and output paths before the (long) evaluation."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("datasets")


def test_eval_checks_its_options_and_outputs_before_evaluating(tmp_path: Path, capsys, monkeypatch) -> None:
    import odcf.training.evaluate as ev
    from odcf.cli.main import main

    def never(*a, **k):
        raise AssertionError("evaluated before checking the options")
    monkeypatch.setattr(ev, "evaluate", never)
    afile = tmp_path / "afile"
    afile.write_text("x")
    # a malformed option value is a usage error, exit 2; an output path that cannot be written, 1 (QA s33 R1)
    for extra, said, code in ((["--threads", "a"], "--threads: expected comma-separated thread counts", 2),
                              (["--compare", "nomodel"], "--compare: expected NAME=MODEL, got 'nomodel'", 2),
                              (["--out", str(tmp_path)], "is a folder; name a file", 1),
                              (["--json", str(afile / "x.json")], "afile is a file, not a folder", 1)):
        assert main(["eval", "--work", str(tmp_path / "w"), *extra]) == code
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1


def test_a_failed_evaluation_leaves_no_output_folder_behind(tmp_path: Path, capsys) -> None:
    """QA: `--out DIR/x.md` and `--json DIR/x.json` made DIR before evaluating and left it when the
    evaluation failed (here: a --work folder whose build stamp does not read)."""
    from odcf.cli.main import main

    work = tmp_path / "run"
    (work / "dataset").mkdir(parents=True)
    (work / "dataset" / "odcf_build.json").write_text("not json", encoding="utf-8")
    had = tmp_path / "had"
    had.mkdir()
    assert main(["eval", "--work", str(work), "--threads", "1", "--out", str(tmp_path / "new" / "deep" / "x.md"),
                 "--json", str(had / "sub" / "x.json")]) == 1
    err = capsys.readouterr().err
    assert "odcf_build.json: cannot read the build stamp" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "new").exists() and not (had / "sub").exists()
    assert had.is_dir() and list(had.iterdir()) == []  # the folder that was there stays


def test_a_model_that_does_not_load_is_refused_before_any_evaluation(tmp_path: Path, capsys, monkeypatch) -> None:
    """QA: a wrong --model path was found only after the labelled data were built (minutes on the
    shared data), and a wrong --compare model only after the first model's whole evaluation."""
    import odcf.training.evaluate as ev
    from odcf.cli.main import main
    from odcf.errors import StageError
    from tests.training.test_evaluate import TINY

    def never(*a, **k):
        raise AssertionError("evaluated before the models loaded")
    with monkeypatch.context() as m:
        m.setattr(ev, "evaluate", never)
        for extra in (["--model", str(tmp_path / "nothere")], ["--model", str(TINY), "--compare", f"b={tmp_path / 'nothere'}"]):
            assert main(["eval", "--work", str(tmp_path / "w"), "--threads", "1", *extra]) == 1
            err = capsys.readouterr().err
            assert f"compressor model {tmp_path / 'nothere'}: no such file or folder" in err
            assert len(err.strip().splitlines()) == 1
    # the library too: the model loads before any labelled data are built in the work folder
    with pytest.raises(StageError, match="no such file or folder"):
        ev.evaluate(tmp_path / "nothere", data_dir=str(tmp_path / "data"), work_dir=str(tmp_path / "w"), threads=(1,))
    assert not (tmp_path / "w").exists()
