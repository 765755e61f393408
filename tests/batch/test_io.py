"""Reading input lazily and in a deterministic order; bad lines come back as records with an error."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from odcf.batch.io import RawRecord, count_records, discover_inputs, dumps, read_records
from odcf.batch.local import ordered_map
from odcf.errors import InputError


def test_directory_is_read_recursively_in_sorted_order(tmp_path):
    d = tmp_path / "in"
    (d / "b").mkdir(parents=True)
    (d / "b" / "x.jsonl").write_text('{"id": "b/x"}\n')
    (d / "a.jsonl").write_text('{"id": "a"}\n')
    with gzip.open(d / "c.jsonl.gz", "wt") as fh:
        fh.write('{"id": "c"}\n')
    (d / ".hidden.jsonl").write_text('{"id": "hidden"}\n')
    (d / "notes.txt").write_text("not input\n")
    files = discover_inputs(d)
    assert [f.name for f in files] == ["a.jsonl", "b/x.jsonl", "c.jsonl.gz"]
    assert [r.record["id"] for r in read_records(files)] == ["a", "b/x", "c"]
    assert [r.key for r in read_records(files)] == [(0, 0), (1, 0), (2, 0)]


def test_missing_or_unknown_input_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        discover_inputs(tmp_path / "nope.jsonl")
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(InputError, match="unknown input format"):
        discover_inputs(tmp_path / "data.csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no input files"):
        discover_inputs(tmp_path / "empty")


def test_bad_lines_become_records_with_reasons(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(
        b'{"id": "ok"}\n'
        b"\n   \n"                                 # blank lines are not records
        b"{broken\n"
        b'{"id": "latin", "context": "caf\xe9"}\n'
        b'{"id": "crlf"}\r\n'
        b'{"id": "last"}'                          # no final newline
    )
    raws = list(read_records(discover_inputs(p)))
    assert [r.where["line"] for r in raws] == [1, 4, 5, 6, 7]
    assert count_records(discover_inputs(p)) == [5]
    ok, broken, latin, crlf, last = raws
    assert ok.record == {"id": "ok"} and crlf.record == {"id": "crlf"} and last.record == {"id": "last"}
    assert broken.error.startswith("invalid JSON:") and broken.detail == {"raw": "{broken"}
    assert latin.error == "invalid UTF-8 at byte 31: invalid continuation byte"
    assert latin.detail["raw"] == '{"id": "latin", "context": "caf\ufffd"}'
    assert base64.b64decode(latin.detail["raw_base64"]) == b'{"id": "latin", "context": "caf\xe9"}'
    assert latin.rid == "latin"  # the id was read intact: the error row names the record (QA: "id": null)


def test_a_line_above_the_reading_limit_is_hashed_not_held(tmp_path):
    p = tmp_path / "in.jsonl"
    huge = json.dumps({"id": "huge", "context": "x" * 3_000_000}).encode()
    p.write_bytes(b'{"id": "a"}\n' + huge + b'\n{"id": "b"}\n')
    raws = list(read_records(discover_inputs(p), max_chars=100))  # limit = 600 + 1 MiB bytes
    assert [r.where["line"] for r in raws] == [1, 2, 3]
    big = raws[1]
    assert big.record is None and big.error.startswith("line too long: 3,000,0")
    assert big.detail == {"raw_bytes": len(huge) + 1, "raw_sha256": hashlib.sha256(huge + b"\n").hexdigest()}
    assert raws[2].record == {"id": "b"}
    assert count_records(discover_inputs(p), max_chars=100) == [3]


def test_skipped_keys_are_counted_not_parsed(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text('{"id": "a"}\n{broken\n{"id": "c"}\n')
    out = list(read_records(discover_inputs(p), skip=lambda key: key[1] < 2))
    assert out[:2] == [(0, 0), (0, 1)]
    assert isinstance(out[2], RawRecord) and out[2].record == {"id": "c"}


def test_parquet_rows_are_records(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({
        "id": ["a", "b", None],
        "context": ["x", None, "z"],
        "sources": [None, [{"id": "s", "text": "y", "layer": "fact"}], None],
        "blob": [b"\x00\x01", None, None],
    })
    p = tmp_path / "in.parquet"
    pq.write_table(table, p, row_group_size=2)
    files = discover_inputs(p)
    raws = list(read_records(files, batch_rows=2))
    assert count_records(files) == [3]
    assert [r.where for r in raws] == [{"file": "in.parquet", "row": i} for i in range(3)]
    assert raws[0].record == {"id": "a", "context": "x", "sources": None, "blob": {"base64": "AAE="}}
    assert raws[1].record["sources"] == [{"id": "s", "text": "y", "layer": "fact"}]


def test_dumps_is_compact_and_keeps_lone_surrogates_valid_utf8():
    assert dumps({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'
    text = dumps({"a": "\ud800"})
    text.encode("utf-8")
    assert json.loads(text) == {"a": "\ud800"}


def test_ordered_map_keeps_order_and_reads_lazily():
    consumed = 0
    lock = threading.Lock()

    def units():
        nonlocal consumed
        for i in range(50):
            with lock:
                consumed += 1
            yield i

    with ThreadPoolExecutor(4) as ex:
        def submit(i: int) -> Future[int]:
            return ex.submit(lambda: i * i)

        out = []
        for value in ordered_map(submit, units(), max_inflight=3):
            out.append(value)
            assert consumed - len(out) <= 3  # never more than max_inflight units ahead
    assert out == [i * i for i in range(50)]


def test_a_corrupt_or_truncated_gzip_is_one_error_naming_the_file(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").write_text('{"id": "a"}\n')
    whole = gzip.compress("".join(json.dumps({"id": f"r{i}", "text": "x" * 200}) + "\n" for i in range(300)).encode())
    (d / "t.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    files = discover_inputs(d)
    with pytest.raises(InputError, match=r"t\.jsonl\.gz: not a readable gzip file \(.*\); it breaks after line \d+"):
        count_records(files)
    with pytest.raises(InputError, match=r"t\.jsonl\.gz: not a readable gzip file"):
        list(read_records(files))
    (d / "t.jsonl.gz").write_bytes(b"plain text, not gzip\n")
    with pytest.raises(InputError, match=r"t\.jsonl\.gz: not a readable gzip file .*; no line could be read"):
        count_records(discover_inputs(d))
    (d / "t.jsonl.gz").write_bytes(b"")  # a failed upload: gzip.open reads it as no lines
    with pytest.raises(InputError, match=r"t\.jsonl\.gz: not a readable gzip file \(it is empty: 0 bytes\)"):
        count_records(discover_inputs(d))


def test_a_utf16_file_is_one_error_and_a_lone_bom_line_is_no_record(tmp_path):
    p = tmp_path / "u.jsonl"
    p.write_bytes('{"id": "a", "context": "x"}\n{"id": "b", "context": "y"}\n'.encode("utf-16"))
    with pytest.raises(InputError, match=r"u\.jsonl: is UTF-16 .* must be UTF-8"):
        count_records(discover_inputs(p))
    p.write_bytes(b'\xef\xbb\xbf\n{"id": "a", "context": "x"}\n')
    assert count_records(discover_inputs(p)) == [1]
    (rec,) = read_records(discover_inputs(p))
    assert rec.error is None and rec.record == {"id": "a", "context": "x"}


def test_cr_only_line_endings_say_so(tmp_path):
    p = tmp_path / "mac.jsonl"
    p.write_bytes(b'{"id": "a", "context": "one"}\r{"id": "b", "context": "two"}\r')
    (raw,) = list(read_records(discover_inputs(p)))
    assert raw.error.startswith("invalid JSON: Extra data at column")
    assert "end its lines with CR alone" in raw.error
    assert raw.detail["raw"].count('"id"') == 2  # both records are in the error file, nothing lost
    p.write_bytes(b'{"id": "a"} {"id": "b"}\n')  # extra data without a CR: no such hint
    (raw,) = list(read_records(discover_inputs(p)))
    assert "CR" not in raw.error


def _bad_utf8_strings(pa, values):
    """A string array holding *values* (bytes) unchecked: pyarrow writes such arrays to Parquet as
    they are, as other writers do."""
    data = b"".join(values)
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return pa.StringArray.from_buffers(len(values), pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(data))


def test_invalid_utf8_in_a_parquet_string_is_an_error_for_its_row_only(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    context = _bad_utf8_strings(pa, [b"fine", b"ok text\xff\xfe bad", b"also fine"])
    speaker = _bad_utf8_strings(pa, [b"ann", b"bob", b"c\xe9cile"])
    sources = pa.ListArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), pa.StructArray.from_arrays(
        [pa.array(["a", "b", "c"]), speaker], names=["text", "speaker"]))
    p = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "context": context, "sources": sources}), p)
    raws = list(read_records(discover_inputs(p)))
    assert [r.where for r in raws] == [{"file": "in.parquet", "row": i} for i in range(3)]
    assert raws[0].error is None and raws[0].record["context"] == "fine"
    assert raws[1].error == ("invalid UTF-8 in column 'context' at byte 7: invalid start byte "
                             "(the record holds its bytes as base64)")
    assert raws[1].rid == "b" and raws[1].record is None
    kept = raws[1].detail["record"]
    assert base64.b64decode(kept["context"]["base64"]) == b"ok text\xff\xfe bad"
    assert kept["sources"] == [{"text": "b", "speaker": "bob"}]  # the rest of the row is kept as read
    assert raws[2].error.startswith("invalid UTF-8 in column 'sources' (sources[0].speaker) at byte 1: ")
    assert raws[2].detail["record"]["context"] == "also fine"


def _corrupt_middle_row_group(pa, pq, path):
    """Three row groups of 3 rows; the second one's first page header overwritten."""
    table = pa.table({"id": [f"r{i}" for i in range(9)], "context": [f"Pay ${i}." for i in range(9)]})
    pq.write_table(table, path, row_group_size=3, compression="none")
    col = pq.ParquetFile(path).metadata.row_group(1).column(1)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + 8] = b"\xff" * 8
    path.write_bytes(bytes(data))


def test_a_corrupt_parquet_row_group_makes_its_rows_errors_and_the_next_group_is_read(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "in.parquet"
    _corrupt_middle_row_group(pa, pq, p)
    files = discover_inputs(p)
    assert count_records(files) == [9]
    raws = list(read_records(files, batch_rows=2))
    assert [r.key for r in raws] == [(0, i) for i in range(9)]
    assert [r.record["id"] for r in raws[:3] + raws[6:]] == ["r0", "r1", "r2", "r6", "r7", "r8"]
    for r in raws[3:6]:
        assert r.record is None and r.detail == {"row_group": 1}
        assert r.error.startswith("row group 1 of the Parquet file cannot be read from row 3 on "
                                  "(rows 3 to 5, the rest of the group): OSError: ")
        assert "\n" not in r.error and r.error.isprintable()
    # resumed past the bad group: its rows are skipped without reading it
    out = list(read_records(files, skip=lambda key: key[1] < 6))
    assert out[:6] == [(0, i) for i in range(6)] and [r.record["id"] for r in out[6:]] == ["r6", "r7", "r8"]


def test_parquet_nanosecond_times_read_the_same_with_or_without_pandas(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    ns = 1_704_067_200_000_000_001
    table = pa.table({
        "id": ["a", "b"],
        "ts": pa.array([ns, ns - 1], pa.timestamp("ns")),
        "tz": pa.array([ns, -1], pa.timestamp("ns", tz="+01:00")),
        "tm": pa.array([1_001, 5_000_000_000], pa.time64("ns")),
        "du": pa.array([1, 1_000], pa.duration("ns")),
        "nested": pa.array([[{"at": ns}], None], pa.list_(pa.struct([("at", pa.timestamp("ns"))]))),
    })
    p = tmp_path / "ns.parquet"
    pq.write_table(table, p)
    expected = [
        {"id": "a", "ts": "2024-01-01T00:00:00.000000001", "tz": "2024-01-01T01:00:00.000000001+01:00",
         "tm": "00:00:00.000001001", "du": 1e-09, "nested": [{"at": "2024-01-01T00:00:00.000000001"}]},
        {"id": "b", "ts": "2024-01-01T00:00:00", "tz": "1970-01-01T00:59:59.999999999+01:00",
         "tm": "00:00:05", "du": 1e-06, "nested": None},
    ]
    assert [r.record for r in read_records(discover_inputs(p))] == expected
    pd = pytest.importorskip("pandas")  # where pandas is there, its own rendering agrees
    assert expected[0]["tz"] == pd.Timestamp(ns, tz="+01:00").isoformat()
    # pyarrow needs pandas for such values unless odcf converts them itself: read with pandas blocked
    script = (
        "import json, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pandas': raise ImportError('blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from odcf.batch.io import discover_inputs, read_records\n"
        "print(json.dumps([[r.record, r.error] for r in read_records(discover_inputs(sys.argv[1]))]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", script, str(p)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[r, None] for r in expected]


def test_parquet_columns_named_twice_are_one_error(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    schema = pa.schema([("id", pa.string()), ("context", pa.string()), ("context", pa.string())])
    p = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["x"]), pa.array(["y"])], schema=schema), p)
    with pytest.raises(InputError, match=r"twice\.parquet: two columns are named 'context'; .*rename one"):
        count_records(discover_inputs(p))
    with pytest.raises(InputError, match="two columns are named 'context'"):
        list(read_records(discover_inputs(p)))
    inner = pa.StructArray.from_arrays([pa.array(["t"]), pa.array(["u"])], names=["text", "text"])
    pq.write_table(pa.table({"id": ["a"], "sources": pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), inner)}),
                   p)
    with pytest.raises(InputError, match="two fields of column 'sources' are named 'text'"):
        count_records(discover_inputs(p))


def test_a_key_given_twice_in_a_json_line_is_an_error_naming_it(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(
        '{"id": "dupk", "context": "A", "context": "B"}\n'
        '{"id": "x1", "id": "x2", "context": "A"}\n'
        '{"id": "n", "sources": [{"text": "a"}, {"text": "b", "layer": "fact", "text": "c"}]}\n'
        '{"id": "ok", "context": "A", "meta": {"a": {"b": 1}, "c": [{"b": 2}]}}\n'
    )
    dupk, ids, nested, ok = read_records(discover_inputs(p))
    assert dupk.error == ("duplicate key 'context' in the record: it is given twice, and which value is meant "
                          "cannot be told")
    assert dupk.rid == "dupk" and dupk.detail == {"raw": '{"id": "dupk", "context": "A", "context": "B"}'}
    assert ids.error.startswith("duplicate key 'id' in the record") and ids.rid is None
    assert nested.error.startswith("duplicate key 'text' in sources[1]:") and nested.rid == "n"
    assert ok.error is None and ok.record["meta"] == {"a": {"b": 1}, "c": [{"b": 2}]} and type(ok.record) is dict


def test_a_fifo_or_a_device_as_input_says_what_it_is(tmp_path):
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"in\.jsonl: is not a regular file or folder \(a FIFO: .*\).*to a file"):
        discover_inputs(fifo)
    with pytest.raises(InputError, match=r"is not a regular file or folder \(a device\)"):
        discover_inputs("/dev/null")
    d = tmp_path / "dir"
    d.mkdir()
    (d / "a.jsonl").write_text('{"id": "a"}\n')
    os.mkfifo(d / "b.jsonl")  # reading it would block the job forever
    with pytest.raises(InputError, match=r"dir: b\.jsonl is not a regular file or folder \(a FIFO"):
        discover_inputs(d)


def test_an_invalid_utf8_line_is_named_by_its_id_only_when_the_id_was_read_intact(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b'{"id": "caf\xe9", "context": "x"}\n{"id": 7, "context": "\xff"}\n{broken \xff\n')
    raws = list(read_records(discover_inputs(p)))
    assert [r.rid for r in raws] == [None, "7", None]
    assert all(r.error.startswith("invalid UTF-8") for r in raws)


def test_an_unterminated_string_says_where_it_starts_once(tmp_path):
    # QA: the error read "invalid JSON: Unterminated string starting at at column 22"
    p = tmp_path / "cut.jsonl"
    p.write_text('{"id": "a", "context": "the line was cut\n', encoding="utf-8")
    (raw,) = list(read_records(discover_inputs(p)))
    assert raw.error == "invalid JSON: Unterminated string starting at column 24"


def test_a_file_that_cannot_be_read_is_named_by_the_path_given(tmp_path, monkeypatch):
    # QA s29/qa3 #5: 'utf16.jsonl: is UTF-16' for 'b/utf16.jsonl', where a missing file kept its folder;
    # error records still name a file from the input folder ("sub/b.jsonl"), its own name when given alone
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b" / "sub").mkdir(parents=True)
    (tmp_path / "b" / "u.jsonl").write_bytes('{"id": "a", "context": "x"}\n'.encode("utf-16"))
    with pytest.raises(InputError, match=r"^b/u\.jsonl: is UTF-16 "):
        count_records(discover_inputs("b/u.jsonl"))
    (tmp_path / "b" / "u.jsonl").unlink()
    (tmp_path / "b" / "sub" / "t.jsonl.gz").write_bytes(b"")
    with pytest.raises(InputError, match=r"^b/sub/t\.jsonl\.gz: not a readable gzip file \(it is empty"):
        count_records(discover_inputs("b"))
    (tmp_path / "b" / "sub" / "t.jsonl.gz").unlink()
    (tmp_path / "b" / "sub" / "c.jsonl").write_text('{"id": "c"}\n')
    (rec,) = read_records(discover_inputs("b"))
    assert rec.where == {"file": "sub/c.jsonl", "line": 1}
    (rec,) = read_records(discover_inputs("b/sub/c.jsonl"))
    assert rec.where == {"file": "c.jsonl", "line": 1}


def test_a_line_too_deep_to_read_keeps_its_id_and_says_the_limit_and_column(tmp_path):
    # QA s29/qa3 #6: '{"id":"deep",…,"meta":[[[[…100000 levels…' gave id null and "invalid JSON: nested too deeply"
    p = tmp_path / "deep.jsonl"
    deep = '"meta": ' + "[" * 100_000 + "]" * 100_000
    p.write_text('{"id": "deep", "context": "x", ' + deep + "}\n" + '{"context": "y", "id": 7, ' + deep + "}\n"
                 + '{"id": 7.5, ' + deep + "}\n")
    first, second, third = read_records(discover_inputs(p))
    column = len('{"id": "deep", "context": "x", "meta": ') + 100  # the record's brace is level 1
    assert (first.rid, first.where, first.error) == (
        "deep", {"file": "deep.jsonl", "line": 1},
        f"record nested more than 100 levels deep (the limit) at column {column}: too deep to read")
    assert second.rid is None and third.rid is None  # "id" not the first key; not an id at all


@pytest.mark.parametrize("levels", [101, 500])
def test_a_line_read_whole_but_too_deep_gets_the_same_error_with_its_column(tmp_path, levels):
    # QA s31: 101 to about 1,000 levels (read by Python's JSON reader) were "record nested 101 levels deep, above
    # the limit of 100 (it could not be handed to a worker process)", without the column the README promises
    p = tmp_path / "deep.jsonl"
    deep = '"meta":' + "[" * levels + "]" * levels
    p.write_text('{"id":"deep","context":"x",' + deep + "}\n" + '{"context":"y",' + deep + ',"id":7}\n'
                 + '{"id":"ok","meta":' + "[" * 99 + "]" * 99 + "}\n")
    first, second, third = read_records(discover_inputs(p))
    error = "record nested more than 100 levels deep (the limit) at column {}: too deep to read"
    assert (first.rid, first.error) == ("deep", error.format(len('{"id":"deep","context":"x","meta":') + 100))
    # read whole, so its id is found wherever it stands
    assert (second.rid, second.error) == ("7", error.format(len('{"context":"y","meta":') + 100))
    assert third.error is None
