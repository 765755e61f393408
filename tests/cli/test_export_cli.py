"""`odcf export` refuses option values that cannot work before it reads the run."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize(("extra", "said"), [
    (["--threads", "0"], "--threads 0: must be 1 or more"),  # QA: a torch RuntimeError traceback
    (["--tolerance", "-1"], "--tolerance -1: must be a positive number"),
    (["--tolerance", "nan"], "--tolerance nan: must be a positive number"),
    (["--min-agreement", "1.5"], "--min-agreement 1.5: must be a share from 0 to 1"),
    (["--threshold-share", "0"], "--threshold-share 0: must be a share above 0 and at most 1"),
])
def test_export_option_values_that_cannot_work_are_usage_errors(tmp_path: Path, capsys, extra, said) -> None:
    from odcf.cli.main import main

    assert main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "m"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"odcf export: error: {said}") and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m").exists()
