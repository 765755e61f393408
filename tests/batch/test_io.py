"""Reading input lazily and in a deterministic order; bad lines come back as records with an error."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

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
