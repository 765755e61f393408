"""The ONNX session cache and the word-level token classifier, on the tiny fixture model."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from odcf.backends import onnx as onnx_backend
from odcf.backends.token_classifier import TokenClassifier, split_words
from odcf.errors import StageError

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_token_classifier"


def test_session_is_created_once_per_path() -> None:
    onnx_backend.clear_sessions()
    before = onnx_backend.load_count
    a = onnx_backend.get_session(TINY / "model.onnx", threads=1)
    b = onnx_backend.get_session(TINY / "model.onnx", threads=1)
    assert a is b
    assert onnx_backend.load_count == before + 1
    TokenClassifier.load(TINY, threads=1)
    assert onnx_backend.load_count == before + 1


def test_missing_model_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="no such file"):
        TokenClassifier.load(tmp_path / "nope")
    with pytest.raises(StageError, match="metadata.json"):
        TokenClassifier.load(tmp_path)


def test_split_words_keeps_offsets() -> None:
    text = "  Net  30 days,\n$5.2m  "
    assert [text[s:e] for s, e in split_words(text)] == ["Net", "30", "days,", "$5.2m"]


def test_word_probabilities_average_sub_tokens() -> None:
    clf = TokenClassifier.load(TINY, threads=1)
    probs = clf.word_probs(["the 2024 indemnification", ""])
    assert probs[1].shape == (0,)
    p = probs[0]
    assert p.shape == (3,)
    # tiny model: stop word -3, a digit piece +3 (see build.py)
    assert p[0] == pytest.approx(1 / (1 + np.exp(3.0)))
    assert p[1] == pytest.approx(1 / (1 + np.exp(-3.0)))


def test_chunking_gives_same_probabilities_as_one_window() -> None:
    """The tiny model has no context, so cutting a long text into windows must not change a word's probability."""
    words = " ".join(f"word{i % 10} alpha beta." for i in range(60))
    small = TokenClassifier.load(TINY, threads=1, max_len=16)
    large = TokenClassifier.load(TINY, threads=1, max_len=512)
    assert np.allclose(small.word_probs([words])[0], large.word_probs([words])[0])
    assert len(small._chunks(0, words.split())) > 1
