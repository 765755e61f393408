"""Export parity: a tiny randomly initialised BERT token classifier, exported and compared."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from odcf.errors import ExportParityError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")


def tiny_model():
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=120, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64, num_labels=2)
    return BertForTokenClassification(cfg).eval()


def batches():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 120, size=(3, 12)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    types = (ids % 3 == 0).astype(np.int64)  # a case-aware model reads token types: they must travel
    return [{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}]


@pytest.mark.slow
def test_parity_passes_for_a_faithful_export_and_raises_on_mismatch(tmp_path: Path) -> None:
    from odcf.training.export import check_parity, export_onnx

    model = tiny_model()
    path = export_onnx(model, tmp_path / "m.onnx")
    ok = check_parity(model, path, batches(), tolerance=1e-4)
    assert ok["max_abs_diff"] <= 1e-4
    assert ok["positions"] == 3 * 12 - 4

    with torch.no_grad():
        model.classifier.bias += 0.05  # the ONNX file no longer matches the PyTorch weights
    with pytest.raises(ExportParityError, match=r"differ from PyTorch by 0.05"):
        check_parity(model, path, batches(), tolerance=1e-3)


def test_decision_agreement_and_threshold_calibration() -> None:
    from odcf.training.export import calibrate_threshold, decision_agreement

    a = [np.array([0.9, 0.2, 0.6]), np.array([0.1, 0.7])]
    b = [np.array([0.9, 0.2, 0.4]), np.array([0.1, 0.7])]
    agr = decision_agreement(a, b, threshold=0.5, rate=0.4)
    assert agr["threshold"] == pytest.approx(0.8)
    assert agr["rate"] == 1.0
    assert calibrate_threshold(a, 0.4) == 0.7
