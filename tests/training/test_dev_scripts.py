"""The dev scripts of training/ (budget_order.py, dev_compare.py) read a run's labelled data as the CLI does."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("datasets")
pytest.importorskip("spacy")

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "tiny_token_classifier"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_dev_{name}", ROOT / "training" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dev_scripts_refuse_damaged_labelled_data_in_one_line(tmp_path: Path, capsys) -> None:
    """QA: both scripts read the data with plain `datasets.load_from_disk`, so a data file overwritten
    since the build was read (or failed with a pyarrow traceback) instead of being named."""
    from tests.training.test_data import corpus_run

    run = tmp_path / "run"
    corpus_run(run)
    data = run / "dataset"
    budget_order = _script("budget_order")
    budget_order.main(["--dataset", str(data), "--model", str(TINY), "--split", "dev", "--exponents", "0"])
    table = capsys.readouterr().out.splitlines()
    assert table[2].startswith("| corpus | 3.0:1 | 0 | ") and len(table) == 4  # the sound data are read
    for split in ("dev", "test"):
        arrow = next((data / split).glob("*.arrow"))
        arrow.write_bytes(arrow.read_bytes()[:-8] + b"\0" * 8)  # same size, other bytes
    with pytest.raises(SystemExit) as err:
        budget_order.main(["--dataset", str(data), "--model", str(TINY), "--split", "dev"])
    assert str(err.value).startswith(f"budget_order.py: error: {data}/dev/") and "sha256 differs" in str(err.value)
    with pytest.raises(SystemExit) as err:
        _script("dev_compare").main([str(run), "--dataset", str(data)])
    assert str(err.value).startswith(f"dev_compare.py: error: {data}/dev/") and "sha256 differs" in str(err.value)
