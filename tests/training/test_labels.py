"""Label rules: joining tokens into words, anchors, token-to-word label merging, global selection."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from odcf.training.labels import AnchorSet, join_tokens, merge_token_labels, words_of
from odcf.training.metrics import keep_metrics, select_global, select_global_tokens


def test_join_tokens_attaches_punctuation_and_clitics() -> None:
    text, owner = join_tokens(["I", "do", "n't", "pay", "$", "5", "(", "net", ")", ",", "ok", "."])
    assert text == "I don't pay $5 (net), ok."
    assert [text.split()[w] for w in owner] == ["I", "don't", "don't", "pay", "$5", "$5", "(net),", "(net),",
                                                 "(net),", "(net),", "ok.", "ok."]
    assert len(words_of(text)) == max(owner) + 1


def test_join_tokens_rejoins_an_apostrophe_split_from_its_clitic() -> None:
    # WNUT-17 test writes "Mina's" as three tokens; inference sees one word
    text, owner = join_tokens(["Mina", "'", "s", "show", "I", "’", "ll", "go", "'", "quote", "'"])
    assert text == "Mina's show I’ll go ' quote '"
    assert owner == [0, 0, 0, 1, 2, 2, 2, 3, 4, 5, 6]


def test_word_label_is_the_strongest_token_label() -> None:
    labels, weights = merge_token_labels([0, 0, 1], 2, [0, 1, 0], [1.0, 3.0, 1.0])
    assert labels == [1, 0]
    assert weights == [3.0, 1.0]


def test_builtin_anchors_mark_numbers_money_dates_and_codes() -> None:
    anchors = AnchorSet.build(None)
    text = "Pay $ 5 by March 3 , ref AB-1234 , see https://x.org now please"
    words = words_of(text)
    hits = [text[s:e] for (s, e), hit in zip(words, anchors.word_hits(text, words)) if hit]
    assert hits == ["$", "5", "March", "3", "AB-1234", "https://x.org"]


def test_ontology_terms_and_anchors_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "protect:\n  anchors:\n    - {name: icd, pattern: '[A-Z]\\d\\d\\.\\d'}\n  terms: [force majeure]\n"
        "  bad: 1\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("protect:\n  anchors:\n    - {name: broken, pattern: '(unclosed'}\n", encoding="utf-8")
    anchors = AnchorSet.build(tmp_path)
    text = "Code E11.9 and Force Majeure apply; majeure alone does not"
    words = words_of(text)
    hits = [text[s:e] for (s, e), hit in zip(words, anchors.word_hits(text, words)) if hit]
    assert hits == ["E11.9", "Force", "Majeure"]


def test_select_global_ranks_all_texts_together_and_keeps_forced() -> None:
    probs = [np.array([0.9, 0.1, 0.5]), np.array([0.2, 0.8, 0.7])]
    forced = [np.array([False, True, False]), np.zeros(3, dtype=bool)]
    keep = select_global(probs, rate=0.5, forced=forced)
    assert keep.tolist() == [True, True, False, False, True, False]


def test_select_global_tokens_orders_by_value_per_token_and_keeps_forced() -> None:
    probs = [np.array([0.9, 0.6, 0.6]), np.array([0.5, 0.95])]
    costs = [np.array([9, 1, 1]), np.array([1, 2])]
    forced = [np.zeros(3, dtype=bool), np.array([True, False])]
    # probability alone: 0.95 (2 tokens) then 0.9 (9 tokens) does not fit 5 - 1 - 2, then 0.6, 0.6
    by_p = select_global_tokens(probs, costs, limit=5, forced=forced, cost_exponent=0)
    assert by_p.tolist() == [False, True, True, True, True]
    # with the whole cost (exponent 1) the order is 0.6, 0.6, 0.475, 0.1: the same set here
    assert select_global_tokens(probs, costs, limit=5, forced=forced, cost_exponent=1).tolist() == by_p.tolist()
    # with room for the long word, probability alone takes it; per token it comes last
    assert select_global_tokens(probs, costs, limit=12, cost_exponent=0).tolist() == [True, True, False, False, True]
    assert select_global_tokens(probs, costs, limit=12, cost_exponent=1).tolist() == [False, True, True, True, True]
    with pytest.raises(ValueError, match="cost_exponent"):
        select_global_tokens(probs, costs, limit=5, cost_exponent=-0.5)


def test_whole_entity_spans_count_only_when_every_word_is_kept() -> None:
    rows = [{"labels": [1, 1, 0, 1], "entity": [1, 1, 0, 1], "number": [0] * 4, "weights": [3.0, 3.0, 1.0, 3.0]}]
    # keep half the words: 0.9 and 0.8 -> "Bank" kept, "America" (0.1) not; the one-word entity (0.8) kept
    m = keep_metrics([np.array([0.9, 0.1, 0.2, 0.8])], rows, rates=(0.5,))
    assert m["rate_0.500"]["entity_kept"] == {"kept": 2, "of": 3, "share": round(2 / 3, 4)}
    assert m["rate_0.500"]["entity_spans_kept"] == {"kept": 1, "of": 2, "share": 0.5}


def test_keep_metrics_counts_entity_retention() -> None:
    rows = [{"labels": [1, 0, 1], "entity": [1, 0, 0], "number": [0, 0, 1], "weights": [3.0, 1.0, 3.0]}]
    m = keep_metrics([np.array([0.9, 0.2, 0.4])], rows, threshold=0.5, rates=(1 / 3,))
    assert m["threshold"]["entity_kept"] == {"kept": 1, "of": 1, "share": 1.0}
    assert m["threshold"]["number_kept"]["share"] == 0.0
    assert m["rate_0.333"]["recall"] == 0.5
