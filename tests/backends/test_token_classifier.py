"""The ONNX session cache and the word-level token classifier, on the tiny fixture model."""
from __future__ import annotations

import json
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


def _type_reading_model(folder: Path, token_types: str | None) -> Path:
    """A graph whose keep logit is 4 × token_type_id − 2: it keeps exactly the words fed type 1."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Cast", ["token_type_ids"], ["t"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["input_ids"], ["ids_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids_f", "zero"], ["ids0"]),  # uses input_ids so the input stays
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["m", "zero"], ["m0"]),
        helper.make_node("Mul", ["t", "four"], ["t4"]),
        helper.make_node("Sub", ["t4", "two"], ["k0"]),
        helper.make_node("Add", ["k0", "ids0"], ["k1"]),
        helper.make_node("Add", ["k1", "m0"], ["keep"]),
        helper.make_node("Mul", ["keep", "zero"], ["drop"]),
        helper.make_node("Unsqueeze", ["drop", "axes"], ["d3"]),
        helper.make_node("Unsqueeze", ["keep", "axes"], ["k3"]),
        helper.make_node("Concat", ["d3", "k3"], ["logits"], axis=-1),
    ]
    dims = ["batch", "seq"]
    graph = helper.make_graph(
        nodes, "type_reader",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, dims + [2])],
        initializer=[numpy_helper.from_array(np.array(v, dtype=np.float32), n) for n, v in
                     (("zero", 0.0), ("four", 4.0), ("two", 2.0))] + [numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "model.onnx")
    meta = {"file": "model.onnx", "tokenizer": "minilm-uncased", "max_len": 16}
    if token_types is not None:
        meta["token_types"] = token_types
    (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_case_aware_model_gets_letter_case_through_token_types(tmp_path: Path) -> None:
    text = "Apple sued apple growers in NEW york over the iPhone name"
    case_model = TokenClassifier.load(_type_reading_model(tmp_path / "case", "uppercase"), threads=1, max_len=8)
    p = case_model.word_probs([text])[0]
    upper = [any(c.isupper() for c in w) for w in text.split()]
    assert upper.count(True) == 3  # Apple, NEW, iPhone
    # max_len 8 forces several chunks: the types must follow their words across chunk cuts
    assert np.allclose(p[np.array(upper)], 1 / (1 + np.exp(-2.0)))
    assert np.allclose(p[~np.array(upper)], 1 / (1 + np.exp(2.0)))
    # a model without the metadata key gets all-zero types (the uncased behaviour)
    plain = TokenClassifier.load(_type_reading_model(tmp_path / "plain", None), threads=1)
    assert np.allclose(plain.word_probs([text])[0], 1 / (1 + np.exp(2.0)))


def test_unknown_token_types_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="unknown token_types 'shape'"):
        TokenClassifier.load(_type_reading_model(tmp_path / "bad", "shape"), threads=1)


def test_a_texts_probabilities_do_not_depend_on_the_texts_beside_it() -> None:
    """The shipped int8 model quantizes activations per run: each chunk runs alone, so the same text
    gets the same probabilities whatever else is in the call (byte-identical output per input)."""
    clf = TokenClassifier.load(None, threads=1)
    texts = ["Liability is capped at $5 million under clause 14.2 of the Globex agreement.",
             "ok",
             "We met Sarah Connor at the Cyberdyne office in Sunnyvale on 3 May 2024 to sign it. " * 12]
    together = clf.word_probs(texts)
    for text, p in zip(texts, together):
        assert np.array_equal(clf.word_probs([text])[0], p)
    assert np.array_equal(clf.word_probs(texts[::-1])[::-1][0], together[0])


def test_a_model_file_that_is_not_the_one_its_metadata_names_is_refused(tmp_path: Path) -> None:
    import hashlib

    folder = _type_reading_model(tmp_path / "m", None)
    meta = json.loads((folder / "metadata.json").read_text())
    meta["sha256"] = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    TokenClassifier.load(folder, threads=1)  # the named file loads
    other = _type_reading_model(tmp_path / "other", "uppercase")
    (folder / "model.onnx").write_bytes((other / "model.onnx").read_bytes() + b"\0")
    with pytest.raises(StageError, match=r"model.onnx: its sha256 .* is not the .* that metadata.json names"):
        TokenClassifier.load(folder, threads=1)


def _tiny_copy(folder: Path, **meta_changes: object) -> Path:
    """The tiny fixture model in *folder*, its metadata changed (a value of None removes the key)."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TINY / "model.onnx", folder / "model.onnx")
    meta = json.loads((TINY / "metadata.json").read_text(encoding="utf-8"))
    for key, value in meta_changes.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def _own_tokenizer(folder: Path, shift: int) -> None:
    """``mytok/tokenizer.json`` beside the model: the shipped vocabulary, every ordinary id moved by *shift*."""
    from odcf.backends.token_classifier import TOKENIZERS_DIR

    data = json.loads((TOKENIZERS_DIR / "minilm-uncased" / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["vocab"] = {p: (i + shift if i > 103 else i) for p, i in data["model"]["vocab"].items()}
    (folder / "mytok").mkdir()
    (folder / "mytok" / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")


def test_a_tokenizer_larger_than_the_model_is_one_clear_error_at_load(tmp_path: Path) -> None:
    # QA: ids past the model's word embedding failed at the first text with a raw ONNX Runtime error
    folder = _tiny_copy(tmp_path / "m", tokenizer="mytok", tokenizer_sha256=None, tokenizer_vocab_size=None,
                        metadata_version=None)
    _own_tokenizer(folder, 40_000)
    with pytest.raises(StageError, match=r"tokenizer .*mytok/tokenizer.json does not match compressor model "
                                         r".*model.onnx: the model cannot read the tokenizer's highest id 70521"):
        TokenClassifier.load(folder, threads=1)


def test_a_tokenizer_other_than_the_exported_one_is_refused_by_its_sha256(tmp_path: Path) -> None:
    # QA: a same-size tokenizer with other ids ran silently with other probabilities
    folder = _tiny_copy(tmp_path / "m", tokenizer="mytok")
    _own_tokenizer(folder, 0)  # same ids, other bytes: the file is not the one the model was exported with
    with pytest.raises(StageError, match=r"does not match compressor model .*: its sha256 [0-9a-f]{16}… is not the "
                                         r"be50c3628f2bf5bb… of the tokenizer the model was exported with"):
        TokenClassifier.load(folder, threads=1)
    # an export from before the sha: the vocabulary size still counts
    other = _tiny_copy(tmp_path / "m2", tokenizer="mytok", tokenizer_sha256=None)
    _own_tokenizer(other, 0)
    data = json.loads((other / "mytok" / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["vocab"]["zzzz-extra"] = 30522
    (other / "mytok" / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StageError, match="its vocabulary has 30523 ids, the model's 30522"):
        TokenClassifier.load(other, threads=1)


def test_metadata_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="metadata_version 99 is newer than this odcf reads"):
        TokenClassifier.load(_tiny_copy(tmp_path / "m", metadata_version=99), threads=1)


@pytest.mark.parametrize(("changes", "said"), [
    ({"threshold": "high"}, '"threshold": "high" is not a number from 0 to 1'),
    ({"threshold": 1.5}, '"threshold": 1.5 is not a number from 0 to 1'),
    ({"threshold": -0.1}, '"threshold": -0.1 is not a number from 0 to 1'),
    ({"threshold": True}, '"threshold": true is not a number from 0 to 1'),
    ({"max_len": 0}, '"max_len": 0 is not an integer of at least 8'),
    ({"max_len": -5}, '"max_len": -5 is not an integer of at least 8'),
    ({"max_len": 128.5}, '"max_len": 128.5 is not an integer of at least 8'),
    ({"max_len": "256"}, '"max_len": "256" is not an integer of at least 8'),
    ({"file": 5}, '"file": 5 is not a file name'),
    ({"tokenizer_vocab_size": "30522"}, '"tokenizer_vocab_size": "30522" is not a positive integer'),
    ({"threshold": "high", "max_len": 0},  # every problem, in the file's order (max_len comes first there)
     '"max_len": 0 is not an integer of at least 8; "threshold": "high" is not a number from 0 to 1'),
])
def test_metadata_values_that_cannot_be_what_they_name_are_one_error_at_load(tmp_path: Path, changes, said) -> None:
    # QA: "threshold": "high" failed at the first text, 1.5 kept nothing silently, "max_len": 0 said
    # "compressor: max_len must be at least 8" without naming the file, 128.5 ran as 128
    folder = _tiny_copy(tmp_path / "m", **changes)
    with pytest.raises(StageError) as err:
        TokenClassifier.load(folder, threads=1)
    assert str(err.value) == f"{folder / 'metadata.json'}: {said}"


def test_missing_threshold_and_max_len_keep_their_defaults(tmp_path: Path) -> None:
    clf = TokenClassifier.load(_tiny_copy(tmp_path / "m", threshold=None, max_len=None), threads=1)
    assert (clf.threshold, clf.max_len) == (0.5, 256)
    clf = TokenClassifier.load(_tiny_copy(tmp_path / "m2", threshold=0, max_len=8), threads=1)
    assert (clf.threshold, clf.max_len) == (0.0, 8)


def test_a_max_len_beyond_the_models_position_embeddings_is_one_error_at_load(tmp_path: Path) -> None:
    """QA: "max_len": 100000 loaded, short texts ran, and a text of more than 510 sub-tokens failed with
    an ONNX Runtime error (the shipped model has 512 position embeddings)."""
    import shutil

    from odcf.backends.token_classifier import DEFAULT_MODEL_DIR

    folder = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    (folder / "metadata.json").write_text(json.dumps({**meta, "max_len": 100000}), encoding="utf-8")
    with pytest.raises(StageError, match=rf'^compressor model {folder}/model.int8.onnx: {folder}/metadata.json: '
                                         r'"max_len": 100000 is more than the model reads: a window of 100000 sub-tokens '
                                         r'does not run \(ONNX Runtime: .*\); the longest that runs is 512 .*'
                                         r'set max_len to at most 512$'):
        TokenClassifier.load(folder, threads=1)
    with pytest.raises(StageError, match=r": max_len=513 is more than the model reads: .* at most 512$"):
        TokenClassifier.load(None, threads=1, max_len=513)
    assert TokenClassifier.load(None, threads=1, max_len=512).max_len == 512
    with pytest.raises(StageError, match=r"^compressor: max_len must be an integer of at least 8, got 'abc'$"):
        TokenClassifier.load(None, threads=1, max_len="abc")


def test_unreadable_metadata_and_tokenizer_files_are_one_clear_error(tmp_path: Path) -> None:
    # QA: a tokenizer.json that is not JSON was a bare `Exception: expected ident` traceback; metadata
    # that is not UTF-8 a UnicodeDecodeError traceback; an empty metadata.json said "Expecting value"
    folder = _tiny_copy(tmp_path / "empty")
    (folder / "metadata.json").write_text("  \n", encoding="utf-8")
    with pytest.raises(StageError, match=r"^.*empty/metadata.json: cannot read model metadata: the file is empty$"):
        TokenClassifier.load(folder, threads=1)
    folder = _tiny_copy(tmp_path / "latin1")
    (folder / "metadata.json").write_bytes(b'{"note": "caf\xe9"}')
    with pytest.raises(StageError, match=r"latin1/metadata.json: cannot read model metadata: 'utf-8' codec can't decode"):
        TokenClassifier.load(folder, threads=1)
    for name, content in (("notjson", b"not json {"), ("notatokenizer", b"{}"), ("binary", b"\xff\xfe\x00\x01")):
        folder = _tiny_copy(tmp_path / name, tokenizer="mytok", tokenizer_sha256=None)
        (folder / "mytok").mkdir()
        (folder / "mytok" / "tokenizer.json").write_bytes(content)
        with pytest.raises(StageError, match=rf"^tokenizer {folder}/mytok/tokenizer.json: not a tokenizers file \(.+\)$"):
            TokenClassifier.load(folder, threads=1)


def test_an_onnx_file_that_is_not_onnx_is_one_clear_error(tmp_path: Path) -> None:
    folder = _tiny_copy(tmp_path / "m")
    (folder / "model.onnx").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(StageError, match=r"^ONNX model .*m/model.onnx: cannot be loaded: .*INVALID_PROTOBUF"):
        TokenClassifier.load(folder, threads=1)


def _graph(folder: Path, *, inputs: tuple[str, ...] = ("input_ids",), labels: int | None = 2,
           free: bool = False) -> Path:
    """A graph that gives *labels* logits per input position (None: logits [batch, seq], no label axis);
    *free*: the label axis reshaped at run time, so that its size is not known before a run."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Cast", [inputs[0]], ["f"], to=TensorProto.FLOAT)]
    if labels is None:
        nodes.append(helper.make_node("Identity", ["f"], ["logits"]))
    else:
        nodes += [helper.make_node("Unsqueeze", ["f", "axes"], ["f3"]),
                  helper.make_node("Concat", ["f3"] * labels, ["c" if free else "logits"], axis=-1)]
        if free:  # Reshape(c, Shape(f) + [-1])
            nodes += [helper.make_node("Shape", ["f"], ["s"]), helper.make_node("Concat", ["s", "axes"], ["shp"], axis=0),
                      helper.make_node("Reshape", ["c", "shp"], ["logits"])]
    axes = ["batch", "seq"] + ([] if labels is None else ["labels" if free else labels])
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(i, TensorProto.INT64, ["batch", "seq"]) for i in inputs],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, axes)],
        initializer=[numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder.mkdir(parents=True)
    onnx.save(model, folder / "model.onnx")
    (folder / "metadata.json").write_text(json.dumps({"file": "model.onnx", "max_len": 16}), encoding="utf-8")
    return folder


def test_an_onnx_graph_that_is_not_a_token_classifier_is_one_clear_error(tmp_path: Path) -> None:
    # QA: a graph without input_ids was reported as a tokenizer mismatch; logits without a label axis
    # were an IndexError traceback at the first text; three labels ran silently on the first two
    assert TokenClassifier.load(_graph(tmp_path / "ok"), threads=1).word_probs(["a b"])[0].shape == (2,)
    assert TokenClassifier.load(_graph(tmp_path / "okfree", free=True), threads=1).word_probs(["a b"])[0].shape == (2,)
    with pytest.raises(StageError, match=r"ids/model.onnx: its inputs are \['ids'\]; a token classifier takes input_ids"):
        TokenClassifier.load(_graph(tmp_path / "ids", inputs=("ids",)), threads=1)
    with pytest.raises(StageError, match=r"rank2/model.onnx: its output logits has shape \['batch', 'seq'\]; "
                                         r"a token classifier gives logits \[batch, seq, 2\]"):
        TokenClassifier.load(_graph(tmp_path / "rank2", labels=None), threads=1)
    with pytest.raises(StageError, match=r"three/model.onnx: its output logits has shape \['batch', 'seq', 3\]"):
        TokenClassifier.load(_graph(tmp_path / "three", labels=3), threads=1)
    # a label axis declared without a size: its size is checked on the first run (the load's probe)
    with pytest.raises(StageError, match=r"free/model.onnx: gave logits of shape \[1, 3, 3\] for input_ids of "
                                         r"shape \[1, 3\]; a token classifier gives \[batch, seq, 2\]"):
        TokenClassifier.load(_graph(tmp_path / "free", labels=3, free=True), threads=1)
