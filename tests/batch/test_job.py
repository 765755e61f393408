"""End-to-end jobs on the local engine: bad input, order, formats, resume, reconciliation."""
from __future__ import annotations

import base64
import errno
import json
import os
import re
import tracemalloc

import pytest

from odcf.batch import BatchConfig, BatchIntegrityError, run_batch
from odcf.batch.parts import PartStore
from odcf.errors import InputError, OdcfError

from .helpers import context_for, read_jsonl, records, write_jsonl


def config(ontology: str, **kw) -> BatchConfig:
    return BatchConfig(ontology=ontology, role="writer", timings=False, **kw)


def bad_input(tmp_path):
    """Good records mixed with every kind of bad one."""
    p = tmp_path / "in.jsonl"
    good = records(6)
    lines = [
        good[0],
        "{broken json",
        {"context": context_for(1)},                       # no id
        good[1],
        {"id": "empty", "context": "   "},
        good[2],
        {"id": good[0]["id"], "context": context_for(9)},   # duplicate id
        {"id": "srcs", "sources": [{"id": "mail", "text": context_for(3), "layer": "fact"},
                                   {"id": "rule", "text": "Always cite the clause.", "layer": "instruction"}]},
        {"id": "badlayer", "sources": [{"text": "x", "layer": "facts"}]},
        good[3],
    ]
    write_jsonl(p, lines)
    with open(p, "ab") as fh:
        fh.write(b'{"id": "latin1", "context": "caf\xe9 cr\xe8me"}\n')
        fh.write(json.dumps(good[4]).encode() + b"\n")
    return p


def test_bad_input_is_reported_and_never_fatal(tmp_path, ontology):
    out = tmp_path / "out.jsonl"
    s = run_batch(bad_input(tmp_path), out, config(ontology), workers=0, chunk_size=3)
    assert (s.records_in, s.records_out, s.records_failed) == (12, 6, 6)
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == ["r0000", "r0001", "r0002", "srcs", "r0003", "r0004"]
    for r in rows:
        assert set(r) == {"id", "text", "tokens_in", "tokens_out", "record"}
        assert r["tokens_out"] == r["record"]["tokens_out"] <= 60 < r["tokens_in"]
    assert s.tokens_in == sum(r["tokens_in"] for r in rows) and s.tokens_out == sum(r["tokens_out"] for r in rows)
    errors = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")
    by_line = {e["line"]: e for e in errors}
    assert sorted(by_line) == [2, 3, 5, 7, 9, 11]
    assert by_line[2]["error"].startswith("invalid JSON") and by_line[2]["raw"] == "{broken json"
    assert by_line[3] == {"id": None, "file": "in.jsonl", "line": 3, "error": "record has no 'id'",
                          "record": {"context": context_for(1)}}
    assert by_line[5]["error"] == "empty context: nothing to compress" and by_line[5]["id"] == "empty"
    assert by_line[7]["error"].startswith("duplicate id 'r0000'") and by_line[7]["record"]["context"] == context_for(9)
    assert "sources[0].layer 'facts'" in by_line[9]["error"]
    assert by_line[11]["error"].startswith("invalid UTF-8") and "raw_base64" in by_line[11]
    assert not (tmp_path / "out.jsonl.parts").exists()


def test_same_job_twice_is_byte_identical_and_workers_do_not_change_output(tmp_path, ontology):
    src = bad_input(tmp_path)
    run_batch(src, tmp_path / "a.jsonl", config(ontology), workers=0, chunk_size=2)
    run_batch(src, tmp_path / "b.jsonl", config(ontology), workers=2, chunk_size=2)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl.errors.jsonl").read_bytes() == (tmp_path / "b.jsonl.errors.jsonl").read_bytes()


def test_timings_are_kept_by_default(tmp_path, ontology):
    src = write_jsonl(tmp_path / "in.jsonl", records(1))
    run_batch(src, tmp_path / "t.jsonl", BatchConfig(ontology=ontology, role="writer"), workers=0)
    stages = read_jsonl(tmp_path / "t.jsonl")[0]["record"]["stages"]
    assert all("ms" in ev for ev in stages if ev["stage"] != "guard")


def test_parquet_in_and_out(tmp_path, ontology):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = records(5)
    table = pa.table({"id": [r["id"] for r in recs], "context": [r["context"] for r in recs],
                      "question": [r.get("query") for r in recs]})
    pq.write_table(table, tmp_path / "in.parquet")
    s = run_batch(tmp_path / "in.parquet", tmp_path / "out.parquet",
                  config(ontology, query_field="question"), workers=0, chunk_size=2)
    assert (s.records_in, s.records_out) == (5, 5)
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [r["id"] for r in out] == [r["id"] for r in recs]
    record = json.loads(out[0]["record"])
    assert record["query"] == "liability cap" and record["tokens_out"] == out[0]["tokens_out"]
    # the same records as JSON Lines give the same text and record
    write_jsonl(tmp_path / "in.jsonl", [{**r, "question": r.pop("query", None)} for r in recs])
    run_batch(tmp_path / "in.jsonl", tmp_path / "out.jsonl", config(ontology, query_field="question"), workers=0)
    as_jsonl = read_jsonl(tmp_path / "out.jsonl")
    assert [(r["text"], r["record"]) for r in as_jsonl] == [(r["text"], json.loads(r["record"])) for r in out]
    # the Parquet file's bytes do not depend on the chunk size (row groups of a fixed size, not a chunk each)
    run_batch(tmp_path / "in.parquet", tmp_path / "out3.parquet",
              config(ontology, query_field="question"), workers=0, chunk_size=3)
    assert (tmp_path / "out3.parquet").read_bytes() == (tmp_path / "out.parquet").read_bytes()


def test_a_parquet_binary_column_is_read_as_utf8_text(tmp_path, ontology):
    # QA: valid UTF-8 bytes in a binary 'context' column failed with "must be a string, got a JSON object"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = records(2)
    contexts = [recs[0]["context"].encode("utf-8"), b"caf\xe9 au lait", b"PDF\x00\x01", recs[1]["context"].encode()]
    sources = [None, None, None, [{"text": recs[1]["context"].encode(), "origin": b"tool:\xff"}]]
    pq.write_table(pa.table({
        "id": ["ok", "latin1", "nul", "src"],
        "context": pa.array(contexts[:3] + [None], pa.binary()),
        "sources": pa.array(sources, pa.list_(pa.struct([("text", pa.binary()), ("origin", pa.binary())]))),
        "thumbnail": pa.array([b"\x89PNG\xff"] * 4, pa.binary()),  # not text, and not read: no error
    }), tmp_path / "in.parquet")
    s = run_batch(tmp_path / "in.parquet", tmp_path / "out.jsonl", config(ontology), workers=0)
    assert (s.records_out, s.records_failed) == (1, 3)
    (row,) = read_jsonl(tmp_path / "out.jsonl")
    assert row["id"] == "ok" and row["tokens_in"] > 0
    errors = {e["id"]: e for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl")}
    assert errors["latin1"]["error"] == ("'context' is a binary column value that is not text (invalid UTF-8 at byte 3: "
                                         "invalid continuation byte); the record holds its bytes as base64")
    assert base64.b64decode(errors["latin1"]["record"]["context"]["base64"]) == b"caf\xe9 au lait"
    assert "(binary data, not text (a NUL byte at byte 3))" in errors["nul"]["error"]
    assert errors["src"]["error"].startswith("sources[0].origin is a binary column value that is not text (invalid "
                                             "UTF-8 at byte 5")


def test_a_null_context_is_named_as_null_in_jsonl_and_in_a_parquet_cell(tmp_path, ontology):
    # QA s32/F #3: `"context": null` and a null Parquet cell (how a nullable column holds a missing
    # text) were "record has neither 'context' (a string) nor 'sources' (a list)"
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = records(1)
    write_jsonl(tmp_path / "in.jsonl", [{"id": "null1", "context": None}, {"id": "num1", "context": 12345}, *recs])
    pq.write_table(pa.table({"id": ["pnull", recs[0]["id"]], "context": [None, recs[0]["context"]]}),
                   tmp_path / "in.parquet")
    for name in ("in.jsonl", "in.parquet"):
        s = run_batch(tmp_path / name, tmp_path / f"{name}.out.jsonl", config(ontology), workers=0)
        assert s.records_out == 1
    errors = read_jsonl(tmp_path / "in.jsonl.out.jsonl.errors.jsonl")
    assert [e["error"] for e in errors] == ["'context' must be a string, got null",
                                            "'context' must be a string, got a JSON number"]
    (error,) = read_jsonl(tmp_path / "in.parquet.out.jsonl.errors.jsonl")
    assert (error["id"], error["row"], error["error"]) == ("pnull", 0, "'context' must be a string, got null")


def test_a_parquet_nan_where_the_query_goes_is_refused_not_read_as_text(tmp_path, ontology):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    recs = records(2)
    pq.write_table(pa.table({"id": [r["id"] for r in recs], "context": [r["context"] for r in recs],
                             "question": [float("nan"), None]}), tmp_path / "in.parquet")
    s = run_batch(tmp_path / "in.parquet", tmp_path / "out.jsonl", config(ontology, query_field="question"), workers=0)
    assert (s.records_out, s.records_failed) == (1, 1)
    error = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")[0]
    assert error["row"] == 0 and "must be a string, got a JSON object" in error["error"]
    assert error["record"]["question"] == {"float": "nan"}  # and the error file stays valid JSON


def test_directory_input_keeps_file_then_line_order(tmp_path, ontology, caplog):
    d = tmp_path / "in"
    d.mkdir()
    write_jsonl(d / "b.jsonl", records(2, start=10))
    write_jsonl(d / "a.jsonl", records(3))
    write_jsonl(d / "part-00000.json", records(4, start=20))  # Spark's name for JSON Lines: not read, but said
    (d / "_SUCCESS").write_text("")
    (d / ".cache").mkdir()
    write_jsonl(d / ".cache" / "h.jsonl", records(1, start=30))  # hidden: not read, but said
    write_jsonl(d / ".late.jsonl", records(1, start=40))
    with caplog.at_level("WARNING", logger="odcf.batch.io"):
        s = run_batch(d, tmp_path / "out.jsonl", config(ontology), workers=0, chunk_size=2)
    assert [r["id"] for r in read_jsonl(tmp_path / "out.jsonl")] == ["r0000", "r0001", "r0002", "r0010", "r0011"]
    assert s.records_in == 5
    warned = [m for m in caplog.messages if "are not read" in m]
    assert len(warned) == 1  # once a run (the input is listed again to check it did not change)
    assert ("3 file(s) or folder(s) are not read" in warned[0] and "part-00000.json" in warned[0]
            and ".cache/ (hidden folder)" in warned[0] and ".late.jsonl (hidden)" in warned[0]
            and "_SUCCESS" not in warned[0])
    assert s.warnings == (warned[0],)  # QA: said only on stderr, not in the summary (--json)


def test_a_huge_context_is_rejected_without_holding_it(tmp_path, ontology):
    """A 50 MB context: above --max-chars (default 2,000,000) it is an error; the line is above the
    reading limit too, so it is streamed through a hash instead of being read into memory."""
    p = tmp_path / "in.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(records(1)[0]) + "\n")
        fh.write('{"id": "huge", "context": "')
        chunk = "The supplier shall deliver 500 units. " * 1000
        for _ in range(50_000_000 // len(chunk) + 1):
            fh.write(chunk)
        fh.write('"}\n')
        fh.write(json.dumps({"id": "mid", "context": "x " * 1_100_000}) + "\n")  # 2.2 M chars, readable
        fh.write(json.dumps(records(2)[1]) + "\n")
    tracemalloc.start()
    try:
        s = run_batch(p, tmp_path / "out.jsonl", config(ontology), workers=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (s.records_in, s.records_out, s.records_failed) == (4, 2, 2)
    assert peak < 40_000_000, f"peak Python memory {peak:,} bytes for a 50 MB line"
    errors = {e["id"] or e["line"]: e for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl")}
    assert errors[2]["error"].startswith("line too long: 50,0") and errors[2]["raw_bytes"] > 50_000_000
    assert errors["mid"]["error"].startswith("record too large: 2,200,000 characters")


def test_crash_then_resume_loses_nothing_and_duplicates_nothing(tmp_path, ontology, monkeypatch):
    src = tmp_path / "in.jsonl"
    recs = records(11)
    recs[8] = {"id": recs[1]["id"], "context": "a duplicate of a record in a finished part"}
    write_jsonl(src, recs + ["not json"])
    cfg = config(ontology)
    run_batch(src, tmp_path / "clean.jsonl", cfg, workers=0, chunk_size=3)

    real_write = PartStore.write_part
    written = []

    def crash_after_two(self, chunk, rows):
        if len(written) == 2:
            raise KeyboardInterrupt("simulated crash")
        written.append(chunk)
        real_write(self, chunk, rows)

    monkeypatch.setattr(PartStore, "write_part", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=3)
    monkeypatch.setattr(PartStore, "write_part", real_write)
    parts = sorted(p.name for p in (tmp_path / "out.jsonl.parts").glob("part-*.jsonl"))
    assert parts == ["part-00000-000000.jsonl", "part-00000-000001.jsonl"]
    assert not (tmp_path / "out.jsonl").exists()

    with pytest.raises(OdcfError, match="--resume"):
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=3)
    s = run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=3, resume=True)
    assert (s.records_in, s.records_out, s.records_failed, s.resumed_records) == (12, 10, 2, 6)
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()
    assert (tmp_path / "out.jsonl.errors.jsonl").read_bytes() == (tmp_path / "clean.jsonl.errors.jsonl").read_bytes()
    dup = [e for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl") if e["line"] == 9]
    assert dup[0]["error"].startswith("duplicate id 'r0001'")


def test_resume_refuses_a_changed_job_and_output_is_not_clobbered(tmp_path, ontology):
    src = write_jsonl(tmp_path / "in.jsonl", records(4))
    store = PartStore(tmp_path / "out.jsonl")
    store.dir.mkdir()
    (store.dir / "job.json").write_text(json.dumps({"odcf_batch": 1, "chunk_size": 64}))
    with pytest.raises(OdcfError, match="cannot resume: the job changed"):
        run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0, resume=True)
    run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0, overwrite=True)
    with pytest.raises(OdcfError, match="exists: pass --overwrite"):
        run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0)
    with pytest.raises(OdcfError, match="already complete"):
        run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0, resume=True)


def test_a_refused_resume_names_only_the_fields_that_changed(tmp_path, ontology, monkeypatch):
    # QA s32/F #4: "(inputs: was [{"format": "jsonl", "mtime_ns": 1796215548148198049, "name": "tinyc.jsonl",
    # "si, now [{"name": …": each side cut mid-key, in its own key order, hiding that only mtime_ns changed
    src = write_jsonl(tmp_path / "in.jsonl", records(4))
    cfg = config(ontology)

    def crash(self, chunk, rows):
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(PartStore, "write_part", crash)
    with pytest.raises(KeyboardInterrupt):
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=2)
    monkeypatch.undo()
    before = src.stat().st_mtime_ns
    text = src.read_text(encoding="utf-8")
    src.write_text(text.replace("Paris", "PARIS", 1), encoding="utf-8")  # one word, same size
    os.utime(src, ns=(before + 10**9, before + 10**9))
    with pytest.raises(OdcfError) as info:
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=2, resume=True)
    assert str(info.value) == (f"cannot resume: the job changed since the interrupted run (inputs[0].mtime_ns: was "
                               f"{before}, now {before + 10**9}); rerun with the same input and options, or pass "
                               "--overwrite to start again")

    # the fields in sorted order whatever the order the job file holds them in; lists entry by entry
    store = PartStore(tmp_path / "out.jsonl")
    job = json.loads((store.dir / "job.json").read_text(encoding="utf-8"))
    job["config"] = dict(reversed(job["config"].items()), budget=500, strict=True)
    job["inputs"] = [{"size": 3, "name": "a.jsonl", "format": "jsonl", "mtime_ns": 7}, *job["inputs"]]
    (store.dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
    with pytest.raises(OdcfError) as info:
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=2, resume=True)
    assert ("(config.budget: was 500, now null; config.strict: was true, now false; inputs: was a list of 2, "
            "now a list of 1; and 4 more)") in str(info.value)


def test_altered_parts_fail_loudly(tmp_path, ontology, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", records(4))
    real_write = PartStore.write_part

    def drop_a_row(self, chunk, rows):
        real_write(self, chunk, rows[:-1] if chunk == (0, 1) else rows)

    monkeypatch.setattr(PartStore, "write_part", drop_a_row)
    with pytest.raises(BatchIntegrityError, match=r"1 row\(s\), expected 2"):
        run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0, chunk_size=2)
    assert not (tmp_path / "out.jsonl").exists() and (tmp_path / "out.jsonl.parts").exists()


def test_bad_job_settings_fail_before_any_work(tmp_path, ontology):
    src = write_jsonl(tmp_path / "in.jsonl", records(2))
    with pytest.raises(OdcfError, match="role"):
        run_batch(src, tmp_path / "o.jsonl", BatchConfig(ontology=ontology, role="nobody"), workers=0)
    with pytest.raises(OdcfError, match="cannot tell the output format"):
        run_batch(src, tmp_path / "o.txt", config(ontology), workers=0)
    with pytest.raises(OdcfError, match="inside the input folder"):
        run_batch(tmp_path, tmp_path / "o.jsonl", config(ontology), workers=0)
    assert not (tmp_path / "o.jsonl.parts").exists()


def test_records_that_broke_the_job_are_error_rows_with_any_worker_count(tmp_path, ontology):
    good = records(3)
    src = tmp_path / "in.jsonl"
    with open(src, "wb") as fh:
        fh.write(b"\xef\xbb\xbf" + json.dumps(good[0]).encode() + b"\n")  # a BOM before the first record
        fh.write(b'{"id": "big", "context": "x", "n": ' + b"9" * 5000 + b"}\n")  # int past Python's 4,300 digits
        fh.write(b'{"id": "deep", "context": "Pay $5.", "x": ' + b"[" * 900 + b"]" * 900 + b"}\n")
        fh.write(b'{"id": "nan", "context": "Pay $5.", "score": NaN}\n')
        fh.write(json.dumps({"id": "mand", "sources": [{"text": context_for(1), "mandatory": "false"}]}).encode() + b"\n")
        fh.write(json.dumps(good[1]).encode() + b"\n")
    outputs = []
    for workers in (0, 1):
        out = tmp_path / f"out{workers}.jsonl"
        s = run_batch(src, out, config(ontology), workers=workers, chunk_size=2)
        assert (s.records_in, s.records_out, s.records_failed) == (6, 2, 4)
        errors = {e["line"]: e["error"] for e in read_jsonl(tmp_path / f"out{workers}.jsonl.errors.jsonl")}
        assert errors[2].startswith("invalid JSON: Exceeds the limit") and "NaN is not valid JSON" in errors[4]
        # QA s31: "record nested 101 levels deep, above the limit of 100 (…)" gave no column, unlike the README's
        column = len('{"id": "deep", "context": "Pay $5.", "x": ') + 100  # the record's brace is level 1
        assert errors[3] == f"record nested more than 100 levels deep (the limit) at column {column}: too deep to read"
        assert {e["line"]: e["id"] for e in read_jsonl(tmp_path / f"out{workers}.jsonl.errors.jsonl")}[3] == "deep"
        assert "mandatory must be true or false, got 'false'" in errors[5]
        outputs.append((out.read_bytes(), (tmp_path / f"out{workers}.jsonl.errors.jsonl").read_bytes()))
        assert [r["id"] for r in read_jsonl(out)] == ["r0000", "r0001"]
    assert outputs[0] == outputs[1]


def test_a_lone_surrogate_is_an_error_row_with_a_clear_reason(tmp_path, ontology):
    good = records(2)
    src = tmp_path / "in.jsonl"
    with open(src, "wb") as fh:  # "\ud800" is valid JSON: it decodes to a string no stage can encode
        fh.write(json.dumps(good[0]).encode() + b"\n")
        fh.write(b'{"id": "lone", "context": "abc\\ud800def Pay $5."}\n')
        fh.write(b'{"id": "src", "sources": [{"id": "m", "text": "Pay $5.\\udc00"}]}\n')
        fh.write(json.dumps(good[1]).encode() + b"\n")
    out = tmp_path / "out.jsonl"
    s = run_batch(src, out, config(ontology), workers=0, chunk_size=2)
    assert (s.records_in, s.records_out, s.records_failed) == (4, 2, 2)
    errors = {e["id"]: e["error"] for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl")}
    assert errors == {
        "lone": "'context' holds a lone surrogate (U+D800) at character 3; it is not valid Unicode text",
        "src": "sources[0].text holds a lone surrogate (U+DC00) at character 7; it is not valid Unicode text",
    }


def test_the_error_file_or_a_bad_place_for_the_output_is_refused_before_any_work(tmp_path, ontology):
    src = write_jsonl(tmp_path / "x.jsonl.errors.jsonl", records(2))
    before = src.read_bytes()
    with pytest.raises(OdcfError, match="the error file .* is also an input file"):
        run_batch(src, tmp_path / "x.jsonl", config(ontology), workers=0)
    assert src.read_bytes() == before
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with pytest.raises(OdcfError, match="is a file, not a folder"):
        run_batch(src, tmp_path / "afile" / "o.jsonl", config(ontology), workers=0)
    (tmp_path / "adir.jsonl").mkdir()
    with pytest.raises(OdcfError, match="is a folder"):
        run_batch(src, tmp_path / "adir.jsonl", config(ontology), workers=0, overwrite=True)
    with pytest.raises(OdcfError, match="workers must be 0"):
        run_batch(src, tmp_path / "o.jsonl", config(ontology), workers=-3)
    assert not (tmp_path / "o.jsonl.parts").exists()


def test_the_paths_beside_the_output_are_checked_before_any_work(tmp_path, ontology, monkeypatch):
    # QA s32/F #5: a folder at OUTPUT.errors.jsonl passed the checks, the job compressed every record,
    # then died in the assembly with IsADirectoryError; a file at OUTPUT.parts was told "pass --resume",
    # and --resume then failed with "Not a directory"
    src = write_jsonl(tmp_path / "in.jsonl", records(3))
    monkeypatch.setattr(PartStore, "begin", lambda *a, **k: pytest.fail("the job started"))
    (tmp_path / "y.jsonl.errors.jsonl").mkdir()
    for resume, overwrite in ((False, False), (False, True), (True, False)):
        with pytest.raises(OdcfError) as info:
            run_batch(src, tmp_path / "y.jsonl", config(ontology), workers=0, resume=resume, overwrite=overwrite)
        assert str(info.value) == (f"{tmp_path / 'y.jsonl'}: {tmp_path / 'y.jsonl.errors.jsonl'} is a folder, where "
                                   "odcf writes the error file; move it away")
    (tmp_path / "x.jsonl.parts").write_text("", encoding="utf-8")
    for resume, overwrite in ((False, False), (False, True), (True, False)):
        with pytest.raises(OdcfError) as info:
            run_batch(src, tmp_path / "x.jsonl", config(ontology), workers=0, resume=resume, overwrite=overwrite)
        assert str(info.value) == (f"{tmp_path / 'x.jsonl'}: {tmp_path / 'x.jsonl.parts'} is a file, where odcf "
                                   "keeps its parts folder; remove it")


def _refuse(monkeypatch, name, where, err=errno.EACCES):
    """Make ``os.NAME`` fail with *err* for *where* and the paths in it (no root tricks: root writes anywhere)."""
    real = getattr(os, name)

    def fake(path, *args, **kwargs):
        if os.fspath(path) == os.fspath(where) or os.path.dirname(os.fspath(path)) == os.fspath(where):
            raise OSError(err, os.strerror(err), os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, fake)


def test_an_output_folder_that_cannot_be_written_is_one_line_before_any_work(tmp_path, ontology, monkeypatch, capsys):
    # QA s32/F #1: a folder the job cannot write in (EACCES; EPERM under `chattr +i`) was a PermissionError
    # traceback from the lock file's os.open in output_lock
    from odcf.cli.main import main

    src = write_jsonl(tmp_path / "in.jsonl", records(3))
    (tmp_path / "ro").mkdir()
    out = tmp_path / "ro" / "o.jsonl"
    _refuse(monkeypatch, "open", tmp_path / "ro")
    monkeypatch.setattr(PartStore, "begin", lambda *a, **k: pytest.fail("the job started"))
    assert main(["batch", str(src), str(out), "--ontology", ontology, "--workers", "0", "--no-progress"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"odcf batch: error: {out}: cannot write in folder {tmp_path / 'ro'}: Permission denied"]


def test_every_write_of_a_job_that_fails_is_one_clear_error(tmp_path, ontology, monkeypatch):
    # QA s32/F #1: the lock, the parts folder, a part, the output and the error file: an OSError in any
    # of them is "PATH: cannot write WHAT: REASON", never a traceback
    from odcf.batch.parts import output_lock

    src = write_jsonl(tmp_path / "in.jsonl", records(4))
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as m:
        _refuse(m, "open", tmp_path, errno.EPERM)
        with pytest.raises(InputError, match=re.escape(f"{tmp_path / '.out.jsonl.lock'}: cannot write the lock "
                                                       "file: Operation not permitted")):
            with output_lock(out):
                pass
    with monkeypatch.context() as m:
        _refuse(m, "mkdir", tmp_path / "out.jsonl.parts")
        with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'out.jsonl.parts'}: cannot write the parts "
                                                       "folder: Permission denied")):
            run_batch(src, out, config(ontology), workers=0, chunk_size=2)
    with monkeypatch.context() as m:
        real = PartStore.write_part
        m.setattr(PartStore, "write_part", lambda self, chunk, rows: (
            _refuse(m, "open", self.dir, errno.ENOSPC) if chunk == (0, 1) else None, real(self, chunk, rows)))
        with pytest.raises(InputError) as info:
            run_batch(src, out, config(ontology), workers=0, chunk_size=2)
    assert str(info.value) == (f"{tmp_path / 'out.jsonl.parts' / 'part-00000-000001.jsonl'}: cannot write a part: "
                               "No space left on device; the parts written before it stay: rerun with --resume once "
                               "it can be written")
    for target, what in ((out, "the output"), (tmp_path / "out.jsonl.errors.jsonl", "the error file")):
        with monkeypatch.context() as m:
            real_replace = os.replace

            def replace(src_path, dst, *, target=target):
                if os.fspath(dst) == os.fspath(target):
                    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(src_path))
                return real_replace(src_path, dst)

            m.setattr(os, "replace", replace)
            with pytest.raises(InputError) as info:
                run_batch(src, out, config(ontology), workers=0, chunk_size=2, resume=True)
        assert str(info.value) == (f"{target}: cannot write {what}: Read-only file system; the parts stay in "
                                   f"{tmp_path / 'out.jsonl.parts'}: rerun with --resume once it can be written")
    s = run_batch(src, out, config(ontology), workers=0, chunk_size=2, resume=True)
    assert (s.records_out, s.resumed_records) == (4, 4)


def test_a_second_run_on_the_same_output_is_refused_while_the_first_holds_it(tmp_path, ontology):
    from odcf.batch.parts import output_lock

    src = write_jsonl(tmp_path / "in.jsonl", records(3))
    out = tmp_path / "out.jsonl"
    with output_lock(out):  # the first run, still going
        for resume in (False, True):
            with pytest.raises(OdcfError, match="another batch run is writing this output"):
                run_batch(src, out, config(ontology), workers=0, resume=resume, overwrite=not resume)
        assert not (tmp_path / "out.jsonl.parts").exists() and not out.exists()
    s = run_batch(src, out, config(ontology), workers=0)  # once it is done, the output is free again
    assert s.records_out == 3 and not (tmp_path / ".out.jsonl.lock").exists()


def test_a_run_that_locked_the_file_the_last_run_removed_takes_the_lock_again(tmp_path, monkeypatch):
    # B opened the lock file just before A removed it on release, then locked that removed file:
    # it held a lock that guards nothing, and a third run C could lock a new file beside it
    import os

    import odcf.batch.parts as parts

    out = tmp_path / "out.jsonl"
    lock = tmp_path / ".out.jsonl.lock"
    real_open = os.open
    calls = []

    def open_removed_file_first(path, flags, mode=0o777):
        calls.append(path)
        fd = real_open(path, flags, mode)
        if len(calls) == 1:
            os.unlink(path)  # A's release, between B's open and B's lock
        return fd

    monkeypatch.setattr(parts.os, "open", open_removed_file_first)
    with parts.output_lock(out):  # B
        assert len(calls) == 2 and lock.exists()  # it opened the file that is there now, and holds that
        monkeypatch.setattr(parts.os, "open", real_open)
        with pytest.raises(OdcfError, match="another batch run is writing this output"):
            with parts.output_lock(out):  # C
                pass


def test_an_input_changed_while_the_job_ran_is_one_clear_error(tmp_path, ontology, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", records(4))
    real_write = PartStore.write_part

    def append_during_the_run(self, chunk, rows):
        real_write(self, chunk, rows)
        if chunk == (0, 0):
            with open(src, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"id": "late", "context": "appended while the job ran"}) + "\n")

    monkeypatch.setattr(PartStore, "write_part", append_during_the_run)
    with pytest.raises(OdcfError, match=re.escape(f"the input changed while the job ran ({src} was modified)")):
        run_batch(src, tmp_path / "out.jsonl", config(ontology), workers=0, chunk_size=2)
    assert not (tmp_path / "out.jsonl").exists()


def test_batch_config_values_are_checked_once_before_any_work(ontology):
    import numpy as np

    assert BatchConfig(ontology=ontology, budget=np.int64(120)).budget == 120
    assert type(BatchConfig(ontology=ontology, budget=np.int64(120)).budget) is int
    for bad, match in (({"budget": 1.5}, "budget must be a positive integer, got 1.5"),
                       ({"budget": True}, "budget must be a positive integer, got True"),
                       ({"max_chars": "10"}, "max_chars must be a positive integer"),
                       ({"role": 3}, "role must be a string or None"),
                       ({"stages": ["compress"]}, "stages must be a mapping"),
                       ({"strict": "yes"}, "strict must be true or false"),
                       ({"plan": 42}, "plan must be a Plan or its to_dict")):
        with pytest.raises(ValueError, match=match):
            BatchConfig(ontology=ontology, **bad)
    with pytest.raises(OdcfError, match="config must be a BatchConfig, got dict"):
        run_batch("in.jsonl", "out.jsonl", {"ontology": ontology})
    with pytest.raises(OdcfError, match="chunk size must be an integer"):
        run_batch("in.jsonl", "out.jsonl", BatchConfig(ontology=ontology), chunk_size=2.5)


def test_a_compiled_plan_may_be_given_as_is(tmp_path, ontology):
    from odcf.plan.compiler import compile_file

    src = write_jsonl(tmp_path / "in.jsonl", records(2))
    plan = compile_file(ontology)
    s = run_batch(src, tmp_path / "out.jsonl", BatchConfig(plan=plan, role="writer", timings=False), workers=0)
    assert s.records_out == 2


def test_a_context_of_invisible_characters_or_an_empty_page_is_an_error(tmp_path, ontology):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, [{"id": "zw", "context": "\u200b\ufeff"}, {"id": "shy", "context": "\u00ad \u2060"},
                    {"id": "bidi", "context": "\u200e\u200f \u202a\u202c"},
                    {"id": "bidi2", "sources": [{"text": "\u2066\u2069"}, {"text": " "}]},
                    {"id": "page", "sources": [{"text": "<html><body><script>x()</script></body></html>",
                                                "kind": "html"}]},
                    records(1)[0]])
    s = run_batch(p, tmp_path / "out.jsonl", config(ontology), workers=0)
    assert (s.records_in, s.records_out, s.records_failed) == (6, 1, 5)
    errors = {e["id"]: e["error"] for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl")}
    assert set(errors) == {"zw", "shy", "bidi", "bidi2", "page"}
    assert all(e.startswith("empty context") for e in errors.values())


def test_a_context_the_rules_leave_without_text_is_an_error_naming_the_rule_and_emoji_are_text(tmp_path, ontology):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, [{"id": "notes", "context": "TODO: fix\n<!-- editor note -->"},
                    {"id": "emoji", "context": "😀🎉🔥" * 3 + " 🇩🇪🇫🇷"}])
    s = run_batch(p, tmp_path / "out.jsonl", config(ontology), workers=0)
    assert (s.records_out, s.records_failed) == (1, 1)
    [error] = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")
    assert error["error"] == ("empty context: source source-1: rules removed all text "
                              "(noise: html_comments, todo_lines): nothing to compress")
    [row] = read_jsonl(tmp_path / "out.jsonl")
    assert row["id"] == "emoji" and "🇩🇪🇫🇷" in row["text"] and row["tokens_out"] >= row["tokens_in"]


def test_format_contradicting_the_extension_is_refused(tmp_path, ontology):
    p = tmp_path / "in.jsonl"
    write_jsonl(p, records(1))
    for name, fmt in (("o.jsonl.gz", "jsonl"), ("o.parquet", "jsonl"), ("o.jsonl", "parquet")):
        with pytest.raises(OdcfError, match="--format says"):
            run_batch(p, tmp_path / name, config(ontology), workers=0, output_fmt=fmt)
        assert not (tmp_path / (name + ".parts")).exists()
    run_batch(p, tmp_path / "o.out", config(ontology), workers=0, output_fmt="jsonl")  # no extension: --format says
    assert len(read_jsonl(tmp_path / "o.out")) == 1


def test_an_unreachable_ray_address_is_one_quick_error_before_any_part(tmp_path, ontology):
    import socket

    p = tmp_path / "in.jsonl"
    write_jsonl(p, records(1))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OdcfError, match=rf"--ray-address 127.0.0.1:{port}: no Ray head answers there"):
        run_batch(p, tmp_path / "o.jsonl", config(ontology), engine="ray", workers=1,
                  ray_address=f"127.0.0.1:{port}")
    assert not (tmp_path / "o.jsonl.parts").exists()


def test_a_lone_surrogate_in_an_id_fails_its_record_not_a_parquet_output(tmp_path, ontology):
    pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    good = records(2)
    src = tmp_path / "in.jsonl"
    with open(src, "wb") as fh:
        fh.write(json.dumps(good[0]).encode() + b"\n")
        fh.write(b'{"id": "a\\ud800b", "context": "Pay $5."}\n')  # once broke the output's assembly
        fh.write(b'{"id": "o", "sources": [{"text": "Pay $5.", "origin": "/mail/\\udc00"}]}\n')
        fh.write(json.dumps(good[1]).encode() + b"\n")
    out = tmp_path / "out.parquet"
    s = run_batch(src, out, config(ontology), workers=0, chunk_size=2)
    assert (s.records_in, s.records_out, s.records_failed) == (4, 2, 2)
    assert pq.read_table(out).column("id").to_pylist() == ["r0000", "r0001"]
    errors = read_jsonl(tmp_path / "out.parquet.errors.jsonl")
    assert [e["error"] for e in errors] == [
        "'id' holds a lone surrogate (U+D800) at character 1; it is not valid Unicode text",
        "sources[0].origin holds a lone surrogate (U+DC00) at character 6; it is not valid Unicode text",
    ]
    assert errors[0]["id"] == "a\ud800b"


def test_unreadable_parquet_rows_are_error_rows_and_the_job_reconciles(tmp_path, ontology):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from .test_io import _bad_utf8_strings, _corrupt_middle_row_group

    d = tmp_path / "in"
    d.mkdir()
    _corrupt_middle_row_group(pa, pq, d / "a.parquet")
    context = _bad_utf8_strings(pa, [context_for(1).encode(), b"caf\xe9 " + context_for(2).encode()])
    pq.write_table(pa.table({"id": ["u1", "u2"], "context": context}), d / "b.parquet")
    s = run_batch(d, tmp_path / "out.jsonl", config(ontology), workers=0, chunk_size=2)
    assert (s.records_in, s.records_out, s.records_failed) == (11, 7, 4)
    errors = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")
    assert [(e["file"], e["row"]) for e in errors] == [("a.parquet", 3), ("a.parquet", 4), ("a.parquet", 5),
                                                        ("b.parquet", 1)]
    assert errors[0]["error"].startswith("row group 1 of the Parquet file cannot be read")
    assert errors[3]["id"] == "u2" and errors[3]["error"].startswith("invalid UTF-8 in column 'context' at byte 3")


def test_a_chunk_is_written_as_soon_as_its_last_record_is_done(tmp_path, ontology, monkeypatch):
    from odcf.batch.worker import Worker

    src = write_jsonl(tmp_path / "in.jsonl", records(5))
    cfg = config(ontology)
    run_batch(src, tmp_path / "clean.jsonl", cfg, workers=0, chunk_size=2)
    real_run_many = Worker.run_many
    units = []

    def hang_on_the_second_chunk(self, items):
        units.append(len(items))
        if len(units) == 2:  # a worker that hangs, then the job is killed
            raise KeyboardInterrupt("killed while the second chunk is compressed")
        return real_run_many(self, items)

    monkeypatch.setattr(Worker, "run_many", hang_on_the_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=2)
    monkeypatch.setattr(Worker, "run_many", real_run_many)
    # the first chunk was finished before the second began: it must not wait for the second's results
    assert [p.name for p in (tmp_path / "out.jsonl.parts").glob("part-*.jsonl")] == ["part-00000-000000.jsonl"]
    s = run_batch(src, tmp_path / "out.jsonl", cfg, workers=0, chunk_size=2, resume=True)
    assert s.resumed_records == 2
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


def test_an_engine_that_repeats_or_cuts_a_chunk_fails_loudly(tmp_path):
    from odcf.batch.job import _write_parts
    from odcf.batch.progress import Progress
    from odcf.batch.worker import Outcome

    store = PartStore(tmp_path / "out.jsonl")
    store.begin({}, [3], chunk_size=2, resume=False, overwrite=False)

    def run(keys):
        _write_parts(store, [Outcome((0, k), json.dumps({"k": [0, k]}), False) for k in keys], [3], 2,
                     Progress(3, enabled=False))

    with pytest.raises(BatchIntegrityError, match=r"record \(0, 1\) after its chunk \(0, 0\) was written"):
        run([0, 1, 1])
    with pytest.raises(BatchIntegrityError, match=r"engine returned record \(0, 0\) after its chunk"):
        run([0, 1, 0, 1])
    short = r"chunk \(0, 0\) of the input has 2 record\(s\) but the engine returned 1"
    with pytest.raises(BatchIntegrityError, match=short):
        run([0, 2])
    with pytest.raises(BatchIntegrityError, match=r"engine returned record \(0, 3\), expected \(0, 2\)"):
        run([0, 1, 3])
    with pytest.raises(BatchIntegrityError, match=short):
        run([0])
    run([0, 1, 2])
    assert sorted(p.name for p in store.dir.glob("part-*")) == ["part-00000-000000.jsonl", "part-00000-000001.jsonl"]


def test_a_query_field_no_record_has_is_warned_about_once(tmp_path, ontology, caplog):
    src = write_jsonl(tmp_path / "in.jsonl", records(3))  # two of them have "query"
    with caplog.at_level("WARNING", logger="odcf.batch"):
        s = run_batch(src, tmp_path / "a.jsonl", config(ontology, query_field="qeury"), workers=0, chunk_size=2)
    assert s.records_out == 3
    assert s.warnings == (("--query-field 'qeury': no record of the job has this field, so every record was "
                           "compressed without a query; is the name misspelled?"),)
    assert "warning: --query-field 'qeury': no record" in "\n".join(s.lines())
    assert [r.getMessage() for r in caplog.records] == list(s.warnings)
    caplog.clear()
    # the default field, or a field some record has (null counts: the name is right), warns of nothing
    write_jsonl(src, [{"id": "x", "context": context_for(0), "question": None}] + records(2, start=1, query=False))
    for field in ("query", "question"):
        s = run_batch(src, tmp_path / f"{field}.jsonl", config(ontology, query_field=field), workers=0)
        assert s.warnings == () and not caplog.records


def test_a_parquet_input_without_the_query_column_is_warned_about_at_the_start(tmp_path, ontology, caplog):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "context": [context_for(0), context_for(1)],
                             "query": ["liability cap", None]}), src)
    with caplog.at_level("WARNING", logger="odcf.batch"):
        s = run_batch(src, tmp_path / "out.jsonl", config(ontology, query_field="querry"), workers=0)
    assert [r.getMessage() for r in caplog.records] == [
        ("--query-field 'querry': no input file has this column (columns: context, id, query), so every record "
         "is compressed without a query; is the name misspelled?")]
    assert len(s.warnings) == 1 and "no record of the job has this field" in s.warnings[0]
    caplog.clear()
    s = run_batch(src, tmp_path / "out2.jsonl", config(ontology, query_field="query"), workers=0)
    assert s.warnings == () and not caplog.records


def test_a_duplicate_id_names_the_earlier_record_and_says_when_it_failed(tmp_path, ontology):
    # QA s28/qa1 #6: a duplicate of an id whose first record failed was refused as "an earlier record has the
    # same id", so neither reached the output and nothing said the first one had failed
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "context": "   "}, {"id": "b", "context": context_for(1)},
                                              {"id": "a", "context": context_for(2)},
                                              {"id": "b", "context": context_for(3)}])
    out = tmp_path / "out.jsonl"
    s = run_batch(src, out, config(ontology), workers=0)
    assert (s.records_out, s.records_failed) == (1, 3)
    by_line = {e["line"]: e["error"] for e in read_jsonl(tmp_path / "out.jsonl.errors.jsonl")}
    assert by_line[1] == "empty context: nothing to compress"
    assert by_line[3] == ("duplicate id 'a': the earlier record with this id (in.jsonl line 1) failed, and this one "
                          "is refused too: ids are unique, and the first record with an id claims it even when it fails")
    # QA s29/qa3 #3: the place is named whether the first record failed or not, and an integer id said
    assert by_line[4] == "duplicate id 'b': an earlier record (in.jsonl line 2) has the same id"
    src = write_jsonl(tmp_path / "in2.jsonl", [{"id": 5, "context": context_for(1)}, {"id": "5", "context": context_for(2)},
                                               {"id": "7", "context": context_for(3)}, {"id": 7, "context": context_for(4)}])
    run_batch(src, tmp_path / "out2.jsonl", config(ontology), workers=0)
    assert [e["error"] for e in read_jsonl(tmp_path / "out2.jsonl.errors.jsonl")] == [
        "duplicate id '5': an earlier record (in2.jsonl line 1) has the same id; its id 5 on line 1, an integer, "
        "is the same id once written as a string",
        "duplicate id '7': an earlier record (in2.jsonl line 3) has the same id; this record's id 7, an integer, "
        "is the same id once written as a string"]
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"id": ["p1", "p2", "p1"], "context": [context_for(k) for k in range(3)]}),
                   tmp_path / "in.parquet")
    run_batch(tmp_path / "in.parquet", tmp_path / "out3.jsonl", config(ontology), workers=0)
    (err,) = read_jsonl(tmp_path / "out3.jsonl.errors.jsonl")
    assert (err["row"], err["error"]) == (2, "duplicate id 'p1': an earlier record (in.parquet row 0) has the same id")
