"""The CLI: `odcf analyze`, `odcf compress --html/--trace`, `odcf replay`, `odcf verify` (exit codes, files)."""
from __future__ import annotations

import json
import re

from odcf.cli.main import main
from odcf.document import sha256

from .conftest import missing_stage_switches

CONTRACT = ("Section 4.2 Liability. The total liability shall not exceed $50,000 in any year. "
            "This cap does not apply to gross negligence. The parties met in Paris.\n")
LOG = "\n".join(f"2024-05-15 INFO worker: processed batch {i} ok" for i in range(10)) + "\nTODO: tidy up\n"


def _disable() -> list[str]:
    out: list[str] = []
    for name in missing_stage_switches():
        out += ["--disable", name]
    return out


def _files(tmp_path):
    a = tmp_path / "msa.md"
    a.write_text(CONTRACT, encoding="utf-8")
    b = tmp_path / "worker.log"
    b.write_text(LOG, encoding="utf-8")
    return a, b


def test_analyze_json_table_and_html(tmp_path, ontology_file, capsys):
    a, b = _files(tmp_path)
    html = tmp_path / "report.html"
    rc = main(["analyze", str(a), str(b), "--ontology", str(ontology_file), "--role", "writer", "--json",
               "--html", str(html), "--no-entities", *_disable()])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in data["sources"]] == [str(a), str(b)]
    assert data["budget"] == 60 and data["role"] == "writer"
    assert data["prefixes"][0]["prefix"] == "2024-05-15 INFO worker: " and data["prefixes"][0]["lines"] == 10
    assert any(n["kind"] == "editor_mark:todo" for n in data["noise"])
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    rc = main(["analyze", str(a), str(b), "--ontology", str(ontology_file), "--table", "--no-entities", *_disable()])
    out = capsys.readouterr().out
    assert rc == 0 and "Tokens per source" in out and "What each stage saves" in out
    rc = main(["analyze", str(a), "--ontology", str(ontology_file), "--no-entities", *_disable()])
    assert rc == 0 and re.match(r"\d+ tokens in 1 sources", capsys.readouterr().out)


def test_compress_trace_replay_verify(tmp_path, ontology_file, capsys):
    a, b = _files(tmp_path)
    out, rec, trace, html = (tmp_path / n for n in ("out.txt", "rec.json", "run.trace.jsonl", "run.html"))
    rc = main(["compress", str(a), str(b), "--ontology", str(ontology_file), "--budget", "100", "--out", str(out),
               "--record", str(rec), "--trace", str(trace), "--html", str(html), *_disable()])
    assert rc == 0 and out.exists() and rec.exists() and trace.exists() and html.exists()
    record = json.loads(rec.read_text(encoding="utf-8"))
    page = html.read_text(encoding="utf-8")
    for status, n in record["segments"].items():
        assert f'<li data-status="{status}" data-count="{n}">' in page
    capsys.readouterr()

    assert main(["replay", str(trace)]) == 0
    assert capsys.readouterr().out.startswith("identical:")
    assert main(["verify", str(rec), "--text", str(out), "--trace", str(trace)]) == 0
    assert capsys.readouterr().out.startswith("ok: 2 source(s) re-read")

    # tamper with the delivered text: verify fails, one line per problem
    out.write_text(out.read_text(encoding="utf-8").replace("$50,000", "$5,000"), encoding="utf-8")
    assert main(["verify", str(rec), "--text", str(out), "--trace", str(trace)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines and all(line.startswith("FAIL ") for line in lines) and any("text-changed" in x for x in lines)

    # change a source: replay and verify both fail
    a.write_text(CONTRACT.replace("$50,000", "$70,000"), encoding="utf-8")
    assert main(["replay", str(trace)]) == 1
    said = capsys.readouterr().out
    assert "input changed" in said and "DIFFERENT" in said and "first difference at character" in said
    assert main(["verify", str(rec), "--trace", str(trace), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert not result["ok"] and [p["code"] for p in result["problems"]] == ["source-changed"]


def test_user_mistakes_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n", encoding="utf-8")
    assert main(["replay", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.jsonl:1: not JSON" in err[0]
    assert main(["verify", str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read" in err[0]


def test_replay_of_a_delivery_record_says_it_is_no_trace(tmp_path, capsys):
    # QA s31 F3: the record of the same run, pretty-printed, was "r3.json:1: not JSON", though it is JSON
    a, _ = _files(tmp_path)
    rec, out = tmp_path / "rec.json", tmp_path / "out.json"
    assert main(["compress", str(a), "--budget", "100", "--record", str(rec), *_disable()]) == 0
    capsys.readouterr()
    assert main(["compress", str(a), "--budget", "100", "--json", *_disable()]) == 0
    out.write_text(capsys.readouterr().out, encoding="utf-8")
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(json.loads(rec.read_text(encoding="utf-8"))), encoding="utf-8")
    for path, what in ((rec, "a delivery record"), (compact, "a delivery record"),
                       (out, "the --json output of odcf compress")):
        assert main(["replay", str(path)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{path}: {what}" in err[0] and "not JSON" not in err[0], err
        assert "not a trace" in err[0] and "JSON Lines" in err[0] and "--trace" in err[0]


def test_verify_names_the_folders_it_looked_in_and_keeps_their_documented_order(tmp_path, monkeypatch, capsys):
    run_dir, rec_dir, base, elsewhere = (tmp_path / n for n in ("run", "records", "base", "elsewhere"))
    for folder in (run_dir, rec_dir, base, elsewhere):
        folder.mkdir()
    (run_dir / "msa.md").write_text(CONTRACT, encoding="utf-8")
    rec = rec_dir / "rec.json"
    monkeypatch.chdir(run_dir)
    assert main(["compress", "msa.md", "--budget", "100", "--record", str(rec), *_disable()]) == 0
    capsys.readouterr()
    # the current folder comes before the record's folder (docs/inspect.md, --help): a same-named file
    # beside the record is not the source
    (rec_dir / "msa.md").write_text(CONTRACT.replace("$50,000", "$70,000"), encoding="utf-8")
    assert main(["verify", str(rec), "--sources-only"]) == 0, capsys.readouterr().out
    capsys.readouterr()
    # QA s31 F4: "m4.md: cannot read: No such file or directory" named none of the folders verify searched
    (rec_dir / "msa.md").unlink()
    monkeypatch.chdir(elsewhere)
    assert main(["verify", str(rec), "--base", str(base), "--sources-only"]) == 1
    said = capsys.readouterr().out
    assert said.startswith("FAIL msa.md: source-unreadable: msa.md: cannot read")
    assert f"not found in any of {base}, {elsewhere}, {rec_dir} (tried in this order)" in said, said


def test_verify_passes_on_untouched_output_of_a_crlf_source(tmp_path, ontology_file, capsys):
    rows = "".join(f"| CLM-{1000 + k} | {'denied' if k == 27 else 'paid'} | ${k * 13},00 |\r\n" for k in range(40))
    src = tmp_path / "claims.md"
    src.write_bytes(("Claims this week.\r\n\r\n| claim | status | amount |\r\n|---|---|---|\r\n" + rows).encode())
    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    assert main(["compress", str(src), "--ontology", str(ontology_file), "--budget", "120", "-q", "denied claim",
                 "--out", str(out), "--record", str(rec), *_disable()]) == 0
    assert b"\r\n" in out.read_bytes()  # the source's line endings are delivered as they are
    capsys.readouterr()
    assert main(["verify", str(rec), "--text", str(out), "--ontology", str(ontology_file), *_disable()]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 source(s) re-read")


def test_an_unchanged_file_with_a_utf8_bom_verifies(tmp_path, ontology_file, capsys):
    # QA: compress hashed the file with its BOM, verify without: an unchanged file was "source-changed"
    plain = tmp_path / "plain.txt"
    plain.write_text("The supplier met the buyer.\n", encoding="utf-8")
    bom = tmp_path / "bom.md"
    bom.write_bytes(b"\xef\xbb\xbf# Title\n\nSection 1. The supplier shall pay $1,000 within 30 days.\n")
    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    for annotate in ([], ["--no-annotate"]):
        assert main(["compress", str(plain), str(bom), "--ontology", str(ontology_file), "--budget", "80",
                     "--out", str(out), "--record", str(rec), "--no-timings", *annotate, *_disable()]) == 0
        assert "\ufeff" not in out.read_text(encoding="utf-8")  # the BOM is no text: not delivered mid-output
        record = json.loads(rec.read_text(encoding="utf-8"))
        body = "# Title\n\nSection 1. The supplier shall pay $1,000 within 30 days.\n"
        assert record["sources"][1]["source_sha256"] == sha256(body)
        capsys.readouterr()
        assert main(["verify", str(rec), "--text", str(out), "--ontology", str(ontology_file), *_disable()]) == 0, \
            capsys.readouterr().out
        assert capsys.readouterr().out.startswith("ok: 2 source(s) re-read")
    bom.write_bytes(b"\xef\xbb\xbf# Title\n\nSection 1. The supplier shall pay $9,000 within 30 days.\n")
    assert main(["verify", str(rec), "--ontology", str(ontology_file), *_disable()]) == 1
    assert "source-changed" in capsys.readouterr().out


def test_verify_fails_with_another_plan_and_when_no_segment_could_be_checked(tmp_path, ontology_file, capsys):
    src = tmp_path / "contract.md"
    src.write_text(CONTRACT, encoding="utf-8")
    rec = tmp_path / "rec.json"
    assert main(["compress", str(src), "--ontology", str(ontology_file), "--budget", "80",
                 "--record", str(rec), *_disable()]) == 0
    capsys.readouterr()
    # the record's own plan: the segments are re-cut and checked
    assert main(["verify", str(rec), "--ontology", str(ontology_file), *_disable()]) == 0
    assert re.match(r"ok: 1 source\(s\) re-read, [1-9]\d* segment\(s\) re-checked", capsys.readouterr().out)
    # another ontology's plan: it proves nothing about this record
    assert main(["verify", str(rec), "--ontology", "legal_contract", *_disable()]) == 1
    assert "plan-mismatch" in capsys.readouterr().out
    # no plan at all (a custom ontology not named): not an "ok" unless asked for
    assert main(["verify", str(rec), *_disable()]) == 1
    assert "segments-unchecked" in capsys.readouterr().out
    assert main(["verify", str(rec), "--sources-only", *_disable()]) == 0
    assert "0 segment(s) re-checked" in capsys.readouterr().out


def test_verify_of_a_record_whose_sources_are_no_files_is_not_ok(tmp_path, capsys):
    # a batch or API record: nothing can be re-read, so an "ok" would have verified nothing
    from odcf import Compressor

    r = Compressor.from_ontology("general").compress("The fee is $5 per unit, payable within 30 days.", budget=40)
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(r.record), encoding="utf-8")
    assert main(["verify", str(rec)]) == 1
    assert "nothing-checked" in capsys.readouterr().out
    assert main(["verify", str(rec), "--sources-only"]) == 1  # sources-only still needs a source


def _compressed(tmp_path, ontology_yaml_path, budget="80"):
    src = tmp_path / "contract.md"
    src.write_text(CONTRACT, encoding="utf-8")
    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    assert main(["compress", str(src), "--ontology", str(ontology_yaml_path), "--budget", budget,
                 "--out", str(out), "--record", str(rec), *_disable()]) == 0
    return out, rec


def test_verify_of_a_record_whose_segment_entries_were_removed_fails(tmp_path, ontology_file, capsys):
    out, rec = _compressed(tmp_path, ontology_file)
    record = json.loads(rec.read_text(encoding="utf-8"))
    assert sum(record["segments"].values()) > 0
    for src in record["sources"]:
        src["segments"] = []
    rec.write_text(json.dumps(record), encoding="utf-8")
    capsys.readouterr()
    for extra in ([], ["--sources-only"]):
        assert main(["verify", str(rec), "--text", str(out), "--ontology", str(ontology_file), *_disable(), *extra]) == 1
        said = capsys.readouterr().out
        assert said.startswith("FAIL record: segments-missing: the record lists no segment, but its summary counts")


def test_verify_of_a_record_written_without_segment_details(tmp_path, ontology_file, capsys):
    # a genuine record without the per-segment entries says so: not an "ok" unless --sources-only accepts it
    ontology = tmp_path / "no_details.yaml"
    ontology.write_text(ontology_file.read_text(encoding="utf-8") + "pipeline:\n  assemble:\n    segment_details: false\n",
                        encoding="utf-8")
    out, rec = _compressed(tmp_path, ontology)
    assert json.loads(rec.read_text(encoding="utf-8"))["segment_details"] is False
    capsys.readouterr()
    args = ["verify", str(rec), "--text", str(out), "--ontology", str(ontology), *_disable()]
    assert main(args) == 1
    assert "segments-unchecked: the record lists no segment (it was written with segment_details=False)" \
        in capsys.readouterr().out
    assert main([*args, "--sources-only"]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 source(s) re-read, 0 segment(s) re-checked")


def test_verify_of_a_malformed_record_names_each_field(tmp_path, capsys):
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"sources": [{"id": "a", "status": "verbatim", "origin": 5, "read_range": {"a": 1},
                                            "segments": [1, 2]}]}), encoding="utf-8")
    assert main(["verify", str(rec)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "FAIL record: record-invalid: sources[0].origin: expected a string or null, got a number (5)",
        "FAIL record: record-invalid: sources[0].read_range: expected a string or null, got an object",
        "FAIL record: record-invalid: sources[0].segments[0]: expected an object, got a number (1)",
        "FAIL record: record-invalid: sources[0].segments[1]: expected an object, got a number (2)",
    ]
    assert "Traceback" not in captured.err


def test_replay_fails_without_stage_events_on_a_plan_mismatch_and_on_a_malformed_header(tmp_path, ontology_file, capsys):
    a, _ = _files(tmp_path)
    trace = tmp_path / "run.trace.jsonl"
    assert main(["compress", str(a), "--ontology", str(ontology_file), "--budget", "100", "--trace", str(trace),
                 *_disable()]) == 0
    lines = [json.loads(x) for x in trace.read_text(encoding="utf-8").splitlines()]
    capsys.readouterr()

    def write(name, edited):
        path = tmp_path / name
        path.write_text("".join(json.dumps(x) + "\n" for x in edited), encoding="utf-8")
        return str(path)

    assert main(["replay", write("no_events.jsonl", [lines[0], lines[-1]])]) == 1
    assert "NOT REPRODUCED" in capsys.readouterr().out
    other = write("plan_hash.jsonl", [{**lines[0], "plan_hash": "ab"}, *lines[1:]])
    assert main(["replay", other]) == 1
    assert "plan-mismatch" in capsys.readouterr().out
    assert main(["replay", other, "--ignore-plan-hash"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert "ignored (--ignore-plan-hash)" in said[0] and said[-1].startswith("identical:")
    for field, value in (("plan", "x"), ("stages", [1]), ("trace_format", "abc")):
        assert main(["replay", write("bad.jsonl", [{**lines[0], field: value}, *lines[1:]])]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"header.{field}: expected" in err[0]


def test_analyze_json_and_table_are_one_or_the_other(tmp_path, capsys):
    # QA1 finding 7: docs/inspect.md writes [--json | --table]; both were accepted and --table was ignored
    import pytest

    a, _ = _files(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(a), "--json", "--table", "--no-entities"])
    assert exc.value.code == 2
    assert "argument --table: not allowed with argument --json" in capsys.readouterr().err


def test_replay_reproduces_a_run_whose_budget_left_the_source_lines_out(tmp_path, ontology_file, capsys):
    # QA s32 J1 (repro/replay_fails.sh): at --budget 15 the [source 1/1] line is left out; replay said
    # NOT REPRODUCED (the header held annotate=false), and verify blamed a --no-annotate never given
    a = tmp_path / "noeol.txt"
    a.write_text("Liability is capped at $5,000. Payment is due within 30 days.", encoding="utf-8")
    out, rec, trace = (tmp_path / n for n in ("out.txt", "rec.json", "run.trace.jsonl"))
    rc = main(["compress", str(a), "--ontology", str(ontology_file), "-q", "liability cap", "--budget", "15",
               "--out", str(out), "--record", str(rec), "--trace", str(trace), "--no-timings", *_disable()])
    assert rc == 0 and "the source lines were left out" in capsys.readouterr().err
    assert main(["replay", str(trace)]) == 0
    assert capsys.readouterr().out.startswith("identical:")
    assert main(["verify", str(rec), "--text", str(out), "--trace", str(trace)]) == 0
    said = capsys.readouterr()
    assert "--no-annotate" not in said.out + said.err and "the budget stage left them out" in said.out + said.err
