"""`odcf batch`: thin CLI over run_batch — summary on stdout, one-line errors."""
from __future__ import annotations

import hashlib
import json

from odcf.cli.main import main

from .helpers import read_jsonl, records, write_jsonl


def test_summary_lines_and_json(tmp_path, ontology, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", records(3) + [{"id": "e", "context": ""}])
    out = tmp_path / "out.jsonl"
    code = main(["batch", str(src), str(out), "-O", ontology, "--role", "writer", "--workers", "0"])
    text = capsys.readouterr().out
    assert code == 0
    assert "records: 4 in, 3 out, 1 failed" in text and f"errors:  {out}.errors.jsonl" in text
    assert len(read_jsonl(out)) == 3

    code = main(["batch", str(src), str(out), "-O", ontology, "--role", "writer", "--workers", "0",
                 "--overwrite", "--json", "--format", "jsonl", "--budget", "30"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0
    assert summary["records_in"] == summary["records_out"] + summary["records_failed"] == 4
    assert summary["tokens_saved"] == summary["tokens_in"] - summary["tokens_out"] > 0
    assert all(r["tokens_out"] <= 30 for r in read_jsonl(out))


def test_user_mistakes_are_one_line(tmp_path, ontology, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", records(1))
    assert main(["batch", str(src), str(tmp_path / "o.jsonl"), "-O", str(tmp_path / "missing.yaml"),
                 "--workers", "0"]) == 2  # as `odcf ontology check` exits on it
    err = capsys.readouterr().err
    assert err.startswith("odcf batch: error:") and "Traceback" not in err
    assert main(["batch", str(tmp_path / "nope.jsonl"), str(tmp_path / "o.jsonl"), "-O", ontology]) == 1
    assert "nope.jsonl: no such file or directory" in capsys.readouterr().err
    assert main(["batch", str(src), str(tmp_path / "o.jsonl"), "-O", ontology, "--max-chars", "0"]) == 1
    assert "max_chars must be a positive integer, got 0" in capsys.readouterr().err


def test_a_truncated_gzip_input_stops_the_job_before_it_starts(tmp_path, ontology, capsys):
    import gzip

    whole = gzip.compress("".join(json.dumps(r) + "\n" for r in records(40)).encode())
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "o.jsonl"
    assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0"]) == 1
    err = capsys.readouterr().err
    assert "in.jsonl.gz: not a readable gzip file" in err and "Traceback" not in err
    assert not out.exists()


def test_a_malformed_tokenizer_is_one_line(tmp_path, ontology, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", records(1))
    tok = tmp_path / "badtok.json"
    tok.write_text("{}")
    assert main(["batch", str(src), str(tmp_path / "o.jsonl"), "-O", ontology, "--workers", "0",
                 "--tokenizer", f"hf:{tok}"]) == 1
    err = capsys.readouterr().err
    assert "is not a readable Hugging Face tokenizer.json (Model missing." in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_fifo_input_says_what_it_is(tmp_path, ontology, capsys):
    import os

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert main(["batch", str(fifo), str(tmp_path / "o.jsonl"), "-O", ontology, "--workers", "0"]) == 1
    err = capsys.readouterr().err
    assert "fifo.jsonl: is not a regular file or folder (a FIFO" in err and "no input files" not in err


def test_stdin_as_input_says_why_it_cannot_be_read(tmp_path, ontology, capsys):
    # QA1 finding 3: `odcf batch - OUT` said "-: no such file or directory"
    assert main(["batch", "-", str(tmp_path / "o.jsonl"), "-O", ontology, "--workers", "0"]) == 2  # usage (QA s33 R1)
    err = capsys.readouterr().err
    assert ("-: stdin is not a regular file or folder; a batch job reads its input more than once (to count, to "
            "compress, and on --resume): write it to a file first") in err and "no such file" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_misspelled_query_field_is_a_warning_in_the_summary(tmp_path, ontology, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", records(2))
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(src), str(out), "-O", ontology, "--role", "writer", "--workers", "0",
                 "--query-field", "qeury", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["records_out"] == 2 and len(summary["warnings"]) == 1
    assert "--query-field 'qeury': no record of the job has this field" in summary["warnings"][0]


def test_a_job_warning_on_stderr_reads_as_the_commands_own_lines(tmp_path, ontology):
    # QA s31: the warnings came out as Python logging lines, "WARNING odcf.batch.job: --query-field 'question': …",
    # beside "odcf batch: error: …" and "odcf compress: warning: …"; run as a user runs it (logging is set up once)
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = write_jsonl(tmp_path / "in.jsonl", records(1))
    none = tmp_path / "none.jsonl"
    none.write_text("", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    errs = []
    for argv in ([str(src), str(tmp_path / "o.jsonl"), "--query-field", "qeury"], [str(none), str(tmp_path / "n.jsonl")]):
        run = subprocess.run([sys.executable, "-m", "odcf", "batch", *argv, "-O", ontology, "--role", "writer",
                              "--workers", "0", "--no-progress"], capture_output=True, text=True, env=env,
                             timeout=300, check=False)
        assert run.returncode == 0, run.stderr
        errs += run.stderr.splitlines()
    assert errs == [
        ("odcf batch: warning: --query-field 'qeury': no record of the job has this field, so every record was "
         "compressed without a query; is the name misspelled?"),
        f"odcf batch: warning: {none}: the input holds no records (no JSON line, no Parquet row), so the output is empty"]


def test_the_cli_log_formatter_keeps_the_logger_name_for_info_and_debug():
    import logging

    from odcf.cli.main import CliLogFormatter

    f = CliLogFormatter("odcf batch")
    def rec(level: int) -> logging.LogRecord:
        return logging.makeLogRecord({"levelno": level, "levelname": logging.getLevelName(level), "name": "odcf.batch.job",
                                      "msg": "%d left", "args": (2,)})
    assert [f.format(rec(level)) for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)] == [
        "DEBUG odcf.batch.job: 2 left", "INFO odcf.batch.job: 2 left", "odcf batch: warning: 2 left",
        "odcf batch: error: 2 left"]


def test_an_input_without_records_is_a_warning_not_a_silent_empty_output(tmp_path, ontology, capsys):
    for name, body in (("empty.jsonl", ""), ("blank.jsonl", "\n  \n\n")):
        src = tmp_path / name
        src.write_text(body, encoding="utf-8")
        out = tmp_path / f"{name}.out.jsonl"
        assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0", "--json"]) == 0
        captured = capsys.readouterr()
        summary = json.loads(captured.out)
        assert summary["records_in"] == 0 and out.read_text(encoding="utf-8") == ""
        assert summary["warnings"] == [f"{src}: the input holds no records (no JSON line, no Parquet row), so the "
                                       "output is empty"]
        assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0", "--overwrite"]) == 0
        assert f"warning: {summary['warnings'][0]}" in capsys.readouterr().out


def test_summary_counts_empty_over_budget_and_warned_records(tmp_path, ontology, capsys):
    # QA: "records: 300 in, 300 out, 0 failed" while 278 rows had "text": "" (each with a record warning)
    long_sentence = "The supplier shall deliver " + " ".join(f"crate{k} of widgets" for k in range(30)) + " by May."
    rows = records(2) + [
        # a blob no part of which fits (a sentence would now be delivered in part)
        {"id": "empty", "context": "".join(hashlib.sha256(str(k).encode()).hexdigest() for k in range(8))},
        {"id": "over", "sources": [{"id": "task", "layer": "instruction", "text": long_sentence}]},
        {"id": "state", "sources": [{"id": "f", "text": "Invoices are payable within 30 days."},
                                    {"id": "s", "layer": "state", "text": "not json"}]},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(src), str(out), "-O", ontology, "--role", "writer", "--workers", "0",
                 "--budget", "30", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    by_id = {r["id"]: r for r in read_jsonl(out)}
    assert by_id["empty"]["text"] == "" and by_id["over"]["record"]["over_budget"]
    assert summary["records_out"] == 5 and summary["records_failed"] == 0
    assert summary["records_empty"] == 1 and summary["records_over_budget"] == 1
    assert summary["records_with_warnings"] == sum(bool(r["record"]["warnings"]) for r in by_id.values()) >= 3
    assert summary["hint"].startswith("1 record(s) delivered empty text")
    assert main(["batch", str(src), str(out), "-O", ontology, "--role", "writer", "--workers", "0",
                 "--budget", "30", "--overwrite"]) == 0
    text = capsys.readouterr().out
    assert (f"delivered: 1 empty, 1 over budget, {summary['records_with_warnings']} with warnings (of 5 out)"
            in text), text
    assert "hint:    1 record(s) delivered empty text: each one's record.warnings says why" in text


def test_a_nul_character_is_an_error_row_as_in_compress(tmp_path, ontology, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", records(1) + [{"id": "bin", "context": "a\u0000b"}])
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records_failed"] == 1 and [r["id"] for r in read_jsonl(out)] == ["r0000"]
    (error,) = read_jsonl(tmp_path / "out.jsonl.errors.jsonl")
    assert error["id"] == "bin" and error["line"] == 2 and "binary data, not text (a NUL character" in error["error"]


def test_a_job_in_which_every_record_failed_exits_4_and_fail_on_errors_makes_any_failure_exit_4(
        tmp_path, ontology, capsys):
    # QA: 2 of 2 records failed and the job exited 0, like a clean run
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "context": ""}, {"id": "b"}])
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(bad), str(out), "-O", ontology, "--workers", "0"]) == 4
    cap = capsys.readouterr()
    assert "records: 2 in, 0 out, 2 failed" in cap.out
    assert f"odcf batch: every record failed; the reasons are in {out}.errors.jsonl" in cap.err
    assert len(read_jsonl(tmp_path / "out.jsonl.errors.jsonl")) == 2

    mixed = write_jsonl(tmp_path / "mixed.jsonl", records(2) + [{"id": "e", "context": ""}])
    argv = ["batch", str(mixed), str(out), "-O", ontology, "--workers", "0", "--overwrite"]
    assert main(argv) == 0  # some records out: the summary says what failed
    capsys.readouterr()
    assert main([*argv, "--fail-on-errors"]) == 4
    assert "odcf batch: 1 of 3 records failed" in capsys.readouterr().err
    assert len(read_jsonl(out)) == 2


def test_without_role_or_budget_the_summary_says_the_default_role_compressed_nothing(tmp_path, ontology, capsys):
    # QA: the output was larger than the input and nothing said a 4000-token default role was used
    src = write_jsonl(tmp_path / "in.jsonl", records(2))
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0", "--no-progress", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tokens_saved"] <= 0
    assert [w for w in summary["warnings"] if w.startswith("no --role or --budget: every record used the `default` "
                                                           "role's budget of ")] != []
    assert [(r["record"]["role"], r["record"]["budget"]) for r in read_jsonl(out)] == [("default", 4000)] * 2
    assert main(["batch", str(src), str(out), "-O", ontology, "--workers", "0", "--no-progress", "--overwrite",
                 "--budget", "4000"]) == 0
    assert "no --role or --budget" not in capsys.readouterr().out


def test_a_role_budget_in_bytes_counted_in_tokens_is_a_summary_warning_and_the_hint_names_it(tmp_path, capsys):
    # QA s28/qa1 #6: a 2500-byte role counted in cl100k_base delivered ~7,800 bytes, and the summary's hint
    # blamed "e.g. a state that does not validate against the plan's schema"
    from .helpers import ONTOLOGY

    ont = tmp_path / "bytes.yaml"
    ont.write_text(ONTOLOGY + "  byter:\n    budget: 300\n    unit: bytes\n", encoding="utf-8")
    src = write_jsonl(tmp_path / "in.jsonl", records(2))
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(src), str(out), "-O", str(ont), "--role", "byter", "--tokenizer", "o200k_base",
                 "--workers", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    told = ("role 'byter' gives its budget of 300 in bytes; it is counted in o200k_base here, the tokenizer this call "
            "was given: 300 o200k_base tokens, about 3 to 4 times the text the role's contract allows (to count it "
            "in bytes, give the tokenizer bytes or none)")
    assert summary["warnings"] == [f"every record: {told}"]
    assert summary["hint"] == f"2 record(s) carry warnings (the first: {told}): see record.warnings in the output"
