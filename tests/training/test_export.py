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
    # how many words each model keeps at the threshold, beside the agreement: 100% with every word
    # on one side would say nothing
    named = decision_agreement(a, b, threshold=0.5, rate=0.4, names=("fp32", "int8"))
    assert named["threshold_kept"] == {"fp32": 3, "int8": 2} and named["words"] == 5
    assert decision_agreement(a, b, threshold=0.05, rate=0.4)["threshold_kept"] == {"a": 5, "b": 5}


def test_the_agreement_gate_and_portable_corpus_paths_in_the_metadata() -> None:
    from odcf.training.export import _portable_config, agreement_gate, portable_paths

    lowered = agreement_gate({"threshold": 1.0, "rate": 0.97842}, 0.95)
    assert lowered == {"agreement": 0.97842, "min_agreement": 0.95, "default": 0.98, "lowered": True,
                       "passes_default": False}
    assert agreement_gate({"threshold": 0.99, "rate": 0.985}, 0.98)["lowered"] is False
    assert portable_paths(["/home/me/corpus/good.jsonl"]) == ["good.jsonl"]
    assert portable_paths(["/home/me/c/a.jsonl", "/home/me/c/more/b.jsonl.gz"]) == ["a.jsonl", "more/b.jsonl.gz"]
    config = {"epochs": 1, "build": {"corpus": ["/home/me/corpus_dir"], "sources": ["corpus"]}}
    assert _portable_config(config) == {"epochs": 1, "build": {"corpus": ["corpus_dir"], "sources": ["corpus"]}}
    assert config["build"]["corpus"] == ["/home/me/corpus_dir"]  # the run's own report is left as it is
    assert _portable_config({"epochs": 1}) == {"epochs": 1} and _portable_config(None) is None
