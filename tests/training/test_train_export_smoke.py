"""Train → export → load, end to end, on a tiny random BERT and the tiny corpus of test_data.py.

The figures of such a model mean nothing; what is checked is the plumbing: the case channel
travels from training through the ONNX export into the metadata and the inference backend,
dev rows named by ``train_dev_sources`` join training and leave the dev figures, and the export
writes a model the compress stage's backend can load.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")
pytest.importorskip("datasets")
pytest.importorskip("spacy")

from odcf.training.data import stable_split  # noqa: E402
from tests.training.test_data import write_corpus  # noqa: E402


def tiny_backbone(folder: Path) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    from odcf.backends.token_classifier import load_tokenizer
    from odcf.training.data import DEFAULT_TOKENIZER

    torch.manual_seed(0)
    vocab = load_tokenizer(DEFAULT_TOKENIZER).get_vocab_size()
    cfg = BertConfig(vocab_size=vocab, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=160, type_vocab_size=2)
    BertModel(cfg).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_train_with_case_types_and_dev_rows_then_export(tmp_path: Path) -> None:
    from odcf.backends.token_classifier import TokenClassifier
    from odcf.errors import OdcfError
    from odcf.training.export import export_run
    from odcf.training.finetune import TrainConfig, train

    data = write_corpus(tmp_path / "data")
    base = dict(data_dir=str(data), backbone=str(tiny_backbone(tmp_path / "bb")), layers=(), epochs=1,
                batch_size=4, build={"ontology_dir": None})
    with pytest.raises(OdcfError, match="--train-on-dev nope: not a source"):
        train(TrainConfig(out_dir=str(tmp_path / "bad"), train_dev_sources=("nope",), **base))

    plain = train(TrainConfig(out_dir=str(tmp_path / "plain"), train_dev_sources=(), **base))
    run = tmp_path / "run"
    report = train(TrainConfig(out_dir=str(run), train_dev_sources=("wnut17",), **base))
    # the one WNUT dev sentence joined training, and the dev figures no longer count WNUT
    assert report["train_windows"] == plain["train_windows"] + 1
    assert report["config"]["train_dev_sources"] == ["wnut17"] and report["config"]["case_types"] is True
    assert report["dev"]["rate_0.333"]["entity_kept"]["of"] == 0
    assert plain["dev"]["rate_0.333"]["entity_kept"]["of"] == 1  # "Paris"
    assert sorted(plain["dev_by_source"]) == ["qmsum", "wnut17"] and sorted(report["dev_by_source"]) == ["qmsum"]
    assert plain["dev_by_source"]["wnut17"]["words"] == 3  # "Paris is nice": WNUT's own figure, apart from QMSum

    meta = export_run(run, tmp_path / "model", min_agreement=0.0, threads=1)
    assert meta["token_types"] == "uppercase"
    assert meta["parity"]["max_abs_diff"] <= 1e-3
    saved = json.loads((tmp_path / "model" / "metadata.json").read_text())
    assert saved["token_types"] == "uppercase" and saved["train_config"]["train_dev_sources"] == ["wnut17"]
    clf = TokenClassifier.load(tmp_path / "model", threads=1)
    p_upper, p_lower = clf.word_probs(["Netflix rocks", "netflix rocks"])
    # same sub-token ids, different case: a trained-with-case model must tell them apart
    assert not np.allclose(p_upper, p_lower)


@pytest.mark.slow
def test_frozen_word_embeddings_stay_as_pretrained(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForTokenClassification

    from odcf.training.finetune import TrainConfig, train

    data = write_corpus(tmp_path / "data")
    bb = tiny_backbone(tmp_path / "bb")
    train(TrainConfig(data_dir=str(data), out_dir=str(tmp_path / "run"), backbone=str(bb), layers=(), epochs=1,
                      batch_size=4, lr=1e-2, build={"ontology_dir": None}, freeze_word_embeddings=True))
    before = AutoModelForTokenClassification.from_pretrained(bb, num_labels=2).bert.embeddings
    after = AutoModelForTokenClassification.from_pretrained(tmp_path / "run" / "model").bert.embeddings
    assert torch.equal(before.word_embeddings.weight, after.word_embeddings.weight)
    assert not torch.equal(before.token_type_embeddings.weight, after.token_type_embeddings.weight)


@pytest.mark.slow
def test_train_export_and_eval_on_your_own_corpus_alone(tmp_path: Path, capsys) -> None:
    from odcf.cli.main import main
    from tests.training.test_corpus import contract_rows, write_jsonl

    corpus = write_jsonl(tmp_path / "mine.jsonl", contract_rows(40))
    run, model = tmp_path / "run", tmp_path / "model"
    # mention replacement copies WNUT-17 sentences: asked for without that source, one clear usage error (exit 2)
    assert main(["train", "--corpus", str(corpus), "--sources", "", "--out", str(run), "--wnut-augment", "2"]) == 2
    assert "--wnut-augment 2: copies WNUT-17 train sentences, but wnut17 is not a source of this run (corpus)" \
        in capsys.readouterr().err
    # no --data: the corpus is the only source; --train-on-dev defaults to none (wnut17 is not a source)
    assert main(["train", "--corpus", str(corpus), "--sources", "", "--out", str(run), "--backbone",
                 str(tiny_backbone(tmp_path / "bb")), "--layers", "all", "--epochs", "1", "--batch-size", "4",
                 "--threads", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["dev_sources"] == ["corpus"] and set(summary["dev_entities_kept_at_3x_by_source"]) == {"corpus"}
    report = json.loads((run / "train_report.json").read_text())
    assert report["config"]["train_dev_sources"] == [] and report["config"]["build"]["sources"] == ["corpus"]
    assert main(["export", str(run), "--out", str(model), "--min-agreement", "0", "--threads", "1"]) == 0
    meta = json.loads((model / "metadata.json").read_text())
    # the corpus named by its file name, not the trainer's local folder; the lowered gate recorded
    assert list(meta["training_data"]) == ["corpus"] and list(meta["corpus_files"]) == [corpus.name]
    assert meta["train_config"]["build"]["corpus"] == [corpus.name] and str(tmp_path) not in json.dumps(meta["corpus_files"])
    assert meta["agreement_gate"]["min_agreement"] == 0 and meta["agreement_gate"]["lowered"] is True
    assert sum(meta["int8_agreement"]["threshold_kept"].values()) <= 2 * meta["int8_agreement"]["words"]
    capsys.readouterr()
    out = tmp_path / "eval.json"
    corpus.unlink()  # the run's labelled data is read back as built: the corpus file is not needed again
    assert main(["eval", "--model", str(model), "--work", str(run), "--threads", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert list(res["sources"]) == ["corpus"]
    test_docs = sum(1 for r in contract_rows(40) if stable_split(f"corpus:{r['id']}") == "test")
    assert res["sources"]["corpus"]["documents"] == test_docs
    assert res["sources"]["corpus"]["rate_0.333"]["entity_kept"]["of"] == 2 * test_docs  # "Acme Corp" each
    assert "your corpus, test split" in capsys.readouterr().out
    # the run's data is built from the corpus: asking for other sources there is one clear error
    assert main(["eval", "--model", str(model), "--work", str(run), "--sources", "wnut17", "--threads", "1"]) == 1
    assert "holds labelled data built from corpus" in capsys.readouterr().err
