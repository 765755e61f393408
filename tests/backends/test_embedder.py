import numpy as np
import pytest

from odcf.backends.embedder import (
    TOKENIZER_PATH, CachedEmbedder, HashEmbedder, OnnxEmbedder, get_embedder,
)
from odcf.errors import StageError


def test_hash_embedder_is_deterministic_normalized_and_word_sensitive():
    e = HashEmbedder()
    a = e.encode(["The liability cap is five thousand dollars.", "The liability cap is five thousand dollars.",
                  "Cats sleep most of the afternoon.", ""])
    assert a.shape == (4, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a[:3], axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a[0], a[1])
    assert not a[3].any()  # empty text: zero vector, not NaN
    related = HashEmbedder().encode(["liability cap dollars"])[0]
    assert related @ a[0] > related @ a[2]


def test_unknown_embedder_name_is_one_clear_error():
    with pytest.raises(StageError, match="unknown embedder 'bert'"):
        get_embedder("bert")


def test_cached_embedder_matches_inner_and_reuses_vectors():
    inner = HashEmbedder()
    calls = []
    orig = inner.encode
    inner.encode = lambda texts: calls.append(list(texts)) or orig(texts)  # type: ignore[method-assign]
    cached = CachedEmbedder(inner, max_entries=10)
    texts = ["alpha beta", "gamma", "alpha beta"]
    first = cached.encode(texts)
    second = cached.encode(texts[::-1])
    assert np.array_equal(first, orig(texts))
    assert np.array_equal(second, first[::-1])
    assert calls == [["alpha beta", "gamma"]]  # duplicates and repeats are not re-encoded


def test_tokenizer_file_ships_with_the_package():
    assert TOKENIZER_PATH.is_file()
    assert (TOKENIZER_PATH.parent / "LICENSE").is_file() and (TOKENIZER_PATH.parent / "NOTICE").is_file()


@pytest.mark.slow
def test_onnx_embedder_batches_by_length_without_changing_results():
    e = OnnxEmbedder(threads=1, batch_size=2)
    texts = ["short one", "a considerably longer sentence about the termination notice period of the lease",
             "mid length text about payment", "x"]
    batched = e.encode(texts)
    single = np.vstack([e.encode([t]) for t in texts])
    assert batched.shape == (4, 384)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    # per-batch padding is masked out: same vectors as one-by-one
    assert np.allclose(batched, single, atol=2e-3)


@pytest.mark.slow
def test_onnx_embedder_truncates_at_256_tokens_and_knows_meaning():
    e = OnnxEmbedder(threads=1)
    assert max(e.token_lengths(["word " * 600])) == 256
    v = e.encode(["The tenant must pay rent monthly.", "Rent is due from the lessee every month.",
                  "Penguins live in Antarctica."])
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


@pytest.mark.slow
def test_onnx_session_is_shared_per_process():
    from odcf.backends import embedder as mod

    a, b = OnnxEmbedder(threads=1), OnnxEmbedder(threads=1)
    a.warm_up(), b.warm_up()
    assert a._session is b._session
    assert len([k for k in mod._SESSIONS if k[1] == 1]) == 1


@pytest.mark.slow
def test_static_embedder_is_a_cached_distillation(tmp_path, monkeypatch):
    from odcf.backends.embedder import StaticEmbedder, cache_dir

    monkeypatch.setenv("ODCF_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("ODCF_CACHE")  # the real cache: built once per machine (about 30 s)
    e = StaticEmbedder(threads=1)
    v = e.encode(["The tenant must pay rent monthly.", "Rent is due from the lessee every month.",
                  "Penguins live in Antarctica.", ""])
    assert e._cache_path().is_file() and e._cache_path().parent == cache_dir()
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0, atol=1e-5) and not v[3].any()
    assert v[0] @ v[1] > v[0] @ v[2]
    again = StaticEmbedder(threads=1).encode(["The tenant must pay rent monthly."])
    assert np.allclose(again[0], v[0], atol=1e-6)


def _concepts(n: int) -> list[str]:
    return [f"concept {i}: liability cap, indemnity and termination notice {i * 7}" for i in range(n)]


def test_a_long_query_list_is_embedded_once_per_model_and_read_back_exactly(monkeypatch, tmp_path):
    """2,000 concept queries took 31 s to embed on every `odcf compress`: they are kept on disk."""
    from odcf.backends.embedder import LASTING_MIN_TEXTS, CachedEmbedder, OnnxEmbedder, encode_lasting

    monkeypatch.setenv("ODCF_CACHE", str(tmp_path))
    texts = _concepts(LASTING_MIN_TEXTS + 6)
    first = encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), texts)
    files = list(tmp_path.glob("vectors-*.npy"))
    assert len(files) == 1
    assert first.tobytes() == CachedEmbedder(OnnxEmbedder(threads=1)).encode(texts).tobytes()

    fresh = CachedEmbedder(OnnxEmbedder(threads=1))

    def no_model(_texts):
        raise AssertionError("the model ran although the vectors were on disk")

    monkeypatch.setattr(fresh.inner, "encode", no_model)
    assert encode_lasting(fresh, texts).tobytes() == first.tobytes()
    # other texts are another file: never read back for the wrong list
    other = encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), texts[:-1] + ["a different concept"])
    assert len(list(tmp_path.glob("vectors-*.npy"))) == 2
    assert other[:-1].tobytes() == first[:-1].tobytes()  # a vector does not depend on its batch
    assert not np.array_equal(other[-1], first[-1])


def test_a_short_query_list_and_a_broken_cache_are_encoded_as_usual(monkeypatch, tmp_path, caplog):
    from odcf.backends.embedder import LASTING_MIN_TEXTS, CachedEmbedder, OnnxEmbedder, encode_lasting

    monkeypatch.setenv("ODCF_CACHE", str(tmp_path))
    short = _concepts(LASTING_MIN_TEXTS - 1)
    encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), short)
    assert not list(tmp_path.glob("vectors-*.npy"))

    texts = _concepts(LASTING_MIN_TEXTS)
    want = CachedEmbedder(OnnxEmbedder(threads=1)).encode(texts)
    encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), texts)
    (path,) = tmp_path.glob("vectors-*.npy")
    path.write_bytes(b"not an array")
    with caplog.at_level("WARNING", logger="odcf"):
        got = encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), texts)
    assert got.tobytes() == want.tobytes()
    assert "unreadable" in caplog.text
    # an unwritable cache costs the encoding, nothing else
    monkeypatch.setenv("ODCF_CACHE", str(path / "under-a-file"))
    assert encode_lasting(CachedEmbedder(OnnxEmbedder(threads=1)), texts).tobytes() == want.tobytes()


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_odcf_threads_is_one_rule_for_every_onnx_model(value, monkeypatch):
    # QA3 finding 7: the embedder ignored ODCF_THREADS=abc (the token compressor refused it), and both
    # took 0 and -2 though the message says "positive integer"
    from odcf.backends.onnx import default_threads

    monkeypatch.setenv("ODCF_THREADS", value)
    for make in (default_threads, OnnxEmbedder):
        with pytest.raises(StageError, match=f"ODCF_THREADS must be a positive integer .*got '{value}'"):
            make()
    monkeypatch.setenv("ODCF_THREADS", "3")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert default_threads() == 3 and OnnxEmbedder().threads == 3
    monkeypatch.delenv("ODCF_THREADS")
    assert default_threads() == 2 and OnnxEmbedder().threads == 2  # OMP_NUM_THREADS, as before, for both
    monkeypatch.setenv("OMP_NUM_THREADS", "abc")  # another library's variable: left to it
    assert default_threads() == OnnxEmbedder().threads >= 1
