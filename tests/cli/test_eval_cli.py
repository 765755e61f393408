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
