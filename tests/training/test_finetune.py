"""The training loss and batching (no backbone needed)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_weighted_loss_ignores_special_tokens_and_weights_must_keep_words() -> None:
    from odcf.training.finetune import weighted_loss

    logits = torch.tensor([[[0.0, 0.0], [0.0, 0.0], [2.0, 0.0]]])
    labels = torch.tensor([[-100, 1, 0]])
    hard = weighted_loss(logits, labels, torch.tensor([[0.0, 3.0, 1.0]]))
    ce1, ce2 = math.log(2), math.log(1 + math.exp(-2))
    assert float(hard) == pytest.approx((3 * ce1 + ce2) / 4, rel=1e-6)
    # a soft target of 0.5 on a word predicted at exactly 0.5 costs log 2, whatever its label
    soft = weighted_loss(logits, labels, torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([[0.0, 0.5, 0.0]]))
    assert float(soft) == pytest.approx(math.log(2), rel=1e-6)


def test_rank_loss_averages_softplus_over_must_keep_against_other_pairs() -> None:
    from odcf.training.finetune import rank_loss

    # keep-minus-drop margins: special token (ignored), must 2.0, other 0.0, other 3.0
    logits = torch.tensor([[[0.0, 9.0], [0.0, 2.0], [0.0, 0.0], [0.0, 3.0]]])
    labels = torch.tensor([[-100, 1, 0, 1]])
    must = torch.tensor([[True, True, False, False]])  # the special token never counts, even if marked
    sp = lambda x: math.log1p(math.exp(x))  # noqa: E731
    assert float(rank_loss(logits, labels, must)) == pytest.approx((sp(0 - 2) + sp(3 - 2)) / 2, rel=1e-6)
    # ranking the must-keep word higher lowers the loss; no pair at all gives 0 (and still a graph)
    higher = logits.clone()
    higher[0, 1, 1] = 5.0
    assert float(rank_loss(higher, labels, must)) < float(rank_loss(logits, labels, must))
    none = rank_loss(logits.requires_grad_(), labels, torch.zeros_like(must))
    assert float(none) == 0.0 and none.requires_grad


def test_encode_rows_marks_must_keep_sub_tokens() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import _collate, encode_rows

    row = {"doc": "d", "text": "Globex signed", "labels": [1, 1], "weights": [3.0, 1.0]}
    (item,) = encode_rows([row], load_tokenizer(DEFAULT_TOKENIZER), 16)
    by_word = {int(w): bool(m) for w, m in zip(item["wid"], item["must"]) if w >= 0}
    assert by_word == {0: True, 1: False} and not item["must"][0] and not item["must"][-1]
    assert _collate([item], torch)["must"].dtype == torch.bool


def test_encode_rows_gives_soft_targets_by_tier() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows

    row = {"doc": "d", "text": "Globex signed the deal", "labels": [1, 1, 0, 1], "weights": [3.0, 1.0, 1.0, 1.0]}
    (item,) = encode_rows([row], load_tokenizer(DEFAULT_TOKENIZER), 16, keep_target=0.6)
    by_word = {int(w): float(t) for w, t in zip(item["wid"], item["tgt"]) if w >= 0}
    assert by_word == {0: 1.0, 1: pytest.approx(0.6), 2: 0.0, 3: pytest.approx(0.6)}
    assert item["lab"][0] == -100 and item["lab"][-1] == -100


def test_training_batches_are_length_bucketed_and_seeded() -> None:
    from odcf.training.finetune import _batches

    items = [{"ids": np.zeros(n)} for n in (5, 50, 6, 49)]
    a = _batches(items, 2, random.Random(1))
    b = _batches(items, 2, random.Random(1))
    assert a == b
    assert sorted(i for batch in a for i in batch) == list(range(4))
    assert all(abs(len(items[x]["ids"]) - len(items[y]["ids"])) <= 2 for x, y in a)


def test_must_weight_overrides_the_labelled_weight() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows

    row = {"doc": "d", "text": "Globex signed", "labels": [1, 1], "weights": [3.0, 1.0]}
    (item,) = encode_rows([row], load_tokenizer(DEFAULT_TOKENIZER), 16, must_weight=6.0)
    assert sorted({float(w) for w in item["wt"]}) == [0.0, 1.0, 6.0]


def test_encode_rows_marks_upper_case_words_in_token_types_when_asked() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows

    row = {"doc": "d", "text": "Globex sold iPhones to acme", "labels": [1, 1, 1, 0, 1], "weights": [1.0] * 5}
    tok = load_tokenizer(DEFAULT_TOKENIZER)
    (cased,) = encode_rows([row], tok, 32, case_types=True)
    by_word = {int(w): int(t) for w, t in zip(cased["wid"], cased["typ"]) if w >= 0}
    assert by_word == {0: 1, 1: 0, 2: 1, 3: 0, 4: 0}
    assert cased["typ"][0] == 0 and cased["typ"][-1] == 0  # [CLS] / [SEP]
    (plain,) = encode_rows([row], tok, 32)
    assert not plain["typ"].any()
    assert plain["ids"].tolist() == cased["ids"].tolist()  # the ids themselves are uncased either way


def test_inner_weight_applies_to_function_words_inside_entities_only() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows

    row = {"doc": "d", "text": "Bank of America said of course", "labels": [1, 1, 1, 1, 0, 1],
           "weights": [3.0, 3.0, 3.0, 1.0, 1.0, 1.0], "entity": [1, 1, 1, 0, 0, 0]}
    (item,) = encode_rows([row], load_tokenizer(DEFAULT_TOKENIZER), 32, must_weight=20.0, inner_weight=60.0)
    by_word = {int(w): float(x) for w, x in zip(item["wid"], item["wt"]) if w >= 0}
    # "of" inside the name gets the inner weight; the "of" outside it stays ordinary
    assert by_word == {0: 20.0, 1: 60.0, 2: 20.0, 3: 1.0, 4: 1.0, 5: 1.0}


def test_case_dropout_drops_the_case_channel_for_a_stable_share_of_rows() -> None:
    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER
    from odcf.training.finetune import encode_rows

    rows = [{"doc": f"d{i}", "text": "Globex hired Ann", "labels": [1, 1, 1], "weights": [1.0] * 3} for i in range(200)]
    tok = load_tokenizer(DEFAULT_TOKENIZER)
    all_off = encode_rows(rows, tok, 16, case_types=True, case_dropout=1.0)
    assert not any(it["typ"].any() for it in all_off)
    half = encode_rows(rows, tok, 16, case_types=True, case_dropout=0.5)
    cased = [bool(it["typ"].any()) for it in half]
    assert 70 < sum(cased) < 130  # about half, by a hash of the document id
    assert cased == [bool(it["typ"].any()) for it in encode_rows(rows, tok, 16, case_types=True, case_dropout=0.5)]


def test_bad_training_settings_are_one_clear_error() -> None:
    from odcf.errors import OdcfError
    from odcf.training.finetune import TrainConfig

    with pytest.raises(OdcfError, match=r"case_dropout must be in \[0, 1\], got 1.5; wnut_augment must be 0 or more, got -1"):
        TrainConfig(data_dir="d", out_dir="o", wnut_augment=-1, case_dropout=1.5)
    with pytest.raises(OdcfError, match="rank_weight must be 0 or more"):
        TrainConfig(data_dir="d", out_dir="o", rank_weight=-0.5)
    cfg = TrainConfig(data_dir="d", out_dir="o", wnut_augment=2)
    assert cfg.build_config().wnut_augment == 2
    assert TrainConfig(data_dir="d", out_dir="o", wnut_augment=2, build={"wnut_augment": 0}).build_config().wnut_augment == 0
