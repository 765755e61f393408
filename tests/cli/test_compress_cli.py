import json

import pytest

from odcf.cli.main import main
from odcf.tokens import get_counter

TEXT = """# Supply agreement

Section 9.1 Cap. Each party's total liability shall not exceed $250,000 in any contract year.
The kick-off meeting took place in Berlin. Coffee was served. The weather was warm.
Section 12.1 Term. Either party may terminate on 90 days' written notice.
"""


@pytest.fixture
def contract(tmp_path):
    p = tmp_path / "msa.md"
    p.write_text(TEXT, encoding="utf-8")
    return p


def test_plain_text_to_stdout_and_record_file(contract, tmp_path, capsys):
    rec = tmp_path / "rec.json"
    code = main(["compress", str(contract), "--query", "liability cap", "--budget", "80", "--record", str(rec)])
    out = capsys.readouterr().out
    assert code == 0
    assert "$250,000" in out and out.startswith(f"[source 1/1] {contract}")
    record = json.loads(rec.read_text())
    assert record["tokens_out"] <= 80 and record["sources"][0]["origin"] == str(contract)
    assert get_counter("o200k_base").count(out.rstrip("\n")) == record["tokens_out"]


def test_json_output_shape(contract, capsys):
    assert main(["compress", str(contract), "--budget", "40", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"text", "tokens_in", "tokens_out", "record"}
    assert payload["tokens_out"] <= 40 < payload["tokens_in"]


def test_stdin_and_out_file(contract, tmp_path, capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEXT.encode())))
    out = tmp_path / "out.txt"
    assert main(["compress", "-", "--budget", "1000", "--out", str(out), "--no-annotate"]) == 0
    assert out.read_text() == TEXT.rstrip("\n")  # exactly the delivered text, no newline added
    assert capsys.readouterr().out == ""


def test_out_dash_writes_to_stdout_and_another_output_named_dash_is_refused(contract, tmp_path, capsys, monkeypatch):
    # QA1 finding 3: `--out -` wrote a file named "-"
    monkeypatch.chdir(tmp_path)
    assert main(["compress", str(contract), "--budget", "50"]) == 0
    plain = capsys.readouterr().out
    assert main(["compress", str(contract), "--budget", "50", "--out", "-"]) == 0
    assert capsys.readouterr().out == plain and plain.strip() and not (tmp_path / "-").exists()
    assert main(["compress", str(contract), "--budget", "50", "--json", "--out", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == plain.rstrip("\n")
    assert main(["compress", str(contract), "--budget", "50", "--record", "-"]) == 2  # a usage error (QA s33 R1)
    err = capsys.readouterr().err
    assert "--record -: stdout holds the run's output; give --record a file name" in err
    assert not (tmp_path / "-").exists()


def test_out_file_is_exactly_the_measured_text_and_verifies(contract, tmp_path, capsys):
    import hashlib

    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    assert main(["compress", str(contract), "--budget", "50", "--out", str(out), "--record", str(rec)]) == 0
    record = json.loads(rec.read_text())
    assert hashlib.sha256(out.read_bytes()).hexdigest() == record["sha256"]
    assert get_counter("o200k_base").count(out.read_text()) == record["tokens_out"] <= 50
    assert main(["verify", str(rec), "--text", str(out)]) == 0
    out.write_bytes(out.read_bytes() + b"\n")  # a file from before: the old trailing newline is still accepted
    assert main(["verify", str(rec), "--text", str(out)]) == 0
    out.write_bytes(out.read_bytes() + b"x")
    assert main(["verify", str(rec), "--text", str(out)]) != 0


def test_a_record_with_an_instruction_verifies(contract, tmp_path, capsys):
    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    assert main(["compress", str(contract), "--budget", "60", "--instruction", "Report the liability cap.",
                 "--out", str(out), "--record", str(rec)]) == 0
    assert main(["verify", str(rec), "--text", str(out)]) == 0
    err = capsys.readouterr().err
    assert "origin '--instruction' is not a file" in err


@pytest.mark.parametrize("flag", ["--out", "--record", "--trace", "--html"])
def test_an_output_naming_an_input_file_is_refused_and_the_input_kept(contract, tmp_path, capsys, flag):
    link = tmp_path / "alias.md"
    link.symlink_to(contract)
    for target in (contract, link):
        assert main(["compress", str(contract), "--budget", "40", flag, str(target)]) == 1
        assert "is a file this run reads" in capsys.readouterr().err
        assert contract.read_text(encoding="utf-8") == TEXT


def test_outputs_into_a_missing_folder_are_written(contract, tmp_path, capsys):
    out = tmp_path / "new" / "dir" / "out.txt"
    rec = tmp_path / "new" / "rec.json"
    assert main(["compress", str(contract), "--budget", "40", "--out", str(out), "--record", str(rec)]) == 0
    assert out.exists() and json.loads(rec.read_text())["tokens_out"] <= 40


def test_bundled_ontology_by_name(contract, tmp_path, capsys):
    rec = tmp_path / "rec.json"
    assert main(["compress", str(contract), "--ontology", "legal_contract", "--budget", "80", "--record", str(rec)]) == 0
    out = capsys.readouterr().out
    assert json.loads(rec.read_text())["domain"] == "legal_contract"
    # with no query, 80 tokens (the long tmp path in the header takes 20) hold one of the two clauses with a
    # figure, whichever ranks first ("$250,000" did until 9.1 and 12.1 swapped places in c0959e1), never the coffee
    assert "$250,000" in out or "90 days' written notice" in out
    assert "Coffee" not in out


@pytest.mark.parametrize("argv, message", [
    (["compress", "missing-file.txt"], "missing-file.txt: cannot read"),
    (["compress", "{contract}", "--ontology", "no_such_ontology"], "no_such_ontology"),
    (["compress", "{contract}", "--role", "ghost"], "unknown role 'ghost'"),
    (["compress", "{contract}", "--budget", "0"], "budget must be a positive integer"),
    (["compress", "{contract}", "--tokenizer", "gpt9"], "unknown tokenizer 'gpt9'"),
    (["compress", "{contract}", "--enable", "compress", "--disable", "compress"],
     "--enable and --disable both name compress"),
])
def test_user_mistakes_are_one_line_errors(contract, capsys, argv, message):
    argv = [a.replace("{contract}", str(contract)) for a in argv]
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0 and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_invalid_utf8_names_the_byte(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok text \xff\xfe more")
    assert main(["compress", str(bad)]) == 1
    assert "invalid UTF-8 at byte 8" in capsys.readouterr().err


def test_invalid_utf8_names_the_line_and_column(tmp_path, capsys):
    # QA s28/qa1 #7: only the byte offset was named; a 10,000-line log needed a hex editor to find it
    bad = tmp_path / "bad.txt"
    bad.write_bytes("Claim CLM-2025-00001 — café\nPayable \xff\xfe $1,000.\n".encode("utf-8").replace(b"\xc3\xbf\xc3\xbe", b"\xff\xfe"))
    assert main(["compress", str(bad)]) == 1
    assert f"{bad}:2: invalid UTF-8 at byte 39 (line 2, column 9): b'\\xff\\xfe $'" in capsys.readouterr().err


def test_binary_and_utf16_files_are_one_clear_error(tmp_path, capsys):
    png = tmp_path / "fake.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert main(["compress", str(png)]) == 1
    err = capsys.readouterr().err
    assert f"{png}: binary data, not text (a NUL byte at offset 8)" in err and len(err.splitlines()) == 1
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"text\x00" * 50)  # valid UTF-8, still not text
    assert main(["compress", str(nul)]) == 1
    assert "binary data, not text (a NUL byte at offset 4)" in capsys.readouterr().err
    u16 = tmp_path / "u16.txt"
    u16.write_bytes("The fee is 5%.".encode("utf-16"))
    assert main(["compress", str(u16)]) == 1
    assert f"{u16}: a UTF-16 file (it starts with a byte-order mark); odcf reads UTF-8" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["compress", "analyze"])
def test_an_unknown_layer_is_a_usage_error_naming_the_layers(contract, capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, str(contract), "--layer", "facts"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --layer: invalid choice: 'facts' (choose from 'instruction', 'fact'" in err and "Traceback" not in err


def test_an_empty_input_is_an_error_and_one_empty_file_among_others_a_warning(contract, tmp_path, capsys):
    empty, blank, bom = tmp_path / "empty.txt", tmp_path / "blank.txt", tmp_path / "bom.txt"
    empty.write_bytes(b"")
    blank.write_text(" \n\t\n", encoding="utf-8")
    bom.write_bytes(b"\xef\xbb\xbf\n\xe2\x80\x8b\n")  # a byte order mark and a zero-width space: no text either
    assert main(["compress", str(empty), str(blank), str(bom)]) == 1
    err = capsys.readouterr().err
    assert f"{empty}, {blank}, {bom}: empty input (no text): nothing to compress" in err and len(err.splitlines()) == 1
    # with text beside it, the empty file is compressed around, named on stderr and in the record
    assert main(["compress", str(empty), str(contract), "--budget", "80", "--json"]) == 0
    captured = capsys.readouterr()
    assert f"{empty}: empty input" in captured.err
    record = json.loads(captured.out)["record"]
    entry = record["sources"][0]
    assert (entry["id"], entry["status"], entry["reason"]) == (str(empty), "dropped", "empty input: no text to compress")
    assert f"source {empty}: empty input: no text to compress" in record["warnings"]
    text = json.loads(captured.out)["text"]
    assert "reason" not in record["sources"][1] and ("$250,000" in text or "90 days' written notice" in text)


def test_an_input_the_rules_leave_without_text_is_an_error_naming_the_rule_as_in_the_record(contract, tmp_path,
                                                                                           capsys):
    notes, emoji = tmp_path / "notes.md", tmp_path / "emoji.txt"
    notes.write_text("TODO: fix\n<!-- editor note -->\n", encoding="utf-8")
    emoji.write_text("😀🎉🔥" * 40 + "\n", encoding="utf-8")
    reason = "rules removed all text (noise: html_comments, todo_lines): nothing to compress"
    assert main(["compress", str(notes)]) == 1
    err = capsys.readouterr().err
    assert f"{notes}: {reason}" in err and len(err.strip().splitlines()) == 1
    assert main(["compress", str(notes), str(contract), "--json"]) == 0  # beside text: a warning
    captured = capsys.readouterr()
    assert f"{notes}: {reason}" in captured.err
    assert json.loads(captured.out)["record"]["sources"][0]["reason"] == reason
    assert main(["compress", str(emoji), "--json"]) == 0  # emoji are text
    out = json.loads(capsys.readouterr().out)
    assert "😀🎉🔥" * 40 in out["text"] and out["tokens_out"] >= out["tokens_in"] > 0


def test_json_nested_too_deeply_is_compressed_as_text_with_the_reason_recorded(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    assert main(["compress", str(deep), "--budget", "100", "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    record = json.loads(captured.out)["record"]
    rules = next(e for e in record["stages"] if e["stage"] == "rules")["data"]
    assert rules["sources"][str(deep)]["json_minify"]["error"] == "line 1 column 1: nested too deeply to decode"
    assert record["segments"]["dropped"] > 0 and not record["over_budget"]


def test_strict_budget_error(contract, capsys):
    code = main(["compress", str(contract), "--instruction", "Read everything carefully. " * 20,
                 "--budget", "30", "--strict"])
    assert code == 1 and "over by" in capsys.readouterr().err


def test_a_layer_the_role_takes_nothing_of_is_said_on_stderr_and_in_the_record(contract, tmp_path, capsys):
    rec = tmp_path / "rec.json"
    assert main(["compress", str(contract), "--layer", "reasoning", "--budget", "200", "--record", str(rec)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "nothing delivered: role default takes no segment of layer(s) reasoning" in captured.err
    assert any("nothing delivered" in w for w in json.loads(rec.read_text())["warnings"])


def test_bytes_given_to_the_api_are_one_clear_error(plan):
    from odcf.compressor import Compressor
    from odcf.errors import InputError

    with pytest.raises(InputError, match="sources are bytes: decode them first"):
        Compressor(plan).compress(b"hello world", budget=50)


def test_outputs_never_replace_the_ontology_the_items_or_each_other(contract, tmp_path, capsys):
    ont = tmp_path / "o.yaml"
    ont.write_text("odcf: 1\ndomain: t\nconcepts: [{name: a}]\n", encoding="utf-8")
    before = ont.read_text(encoding="utf-8")
    assert main(["compress", str(contract), "-O", str(ont), "--out", str(ont)]) == 1
    assert "is a file this run reads" in capsys.readouterr().err and ont.read_text(encoding="utf-8") == before
    same = tmp_path / "same.txt"
    assert main(["compress", str(contract), "--out", str(same), "--record", str(same)]) == 1
    assert "one output would replace the other" in capsys.readouterr().err and not same.exists()
    items = tmp_path / "items.json"
    items.write_text(json.dumps({"instruction": "Reply.", "items": [{"id": "a", "text": "Refund is $5."}]}),
                     encoding="utf-8")
    assert main(["handoff", str(items), "--role", "writer", "--record", str(items)]) == 1
    assert "is a file this run reads" in capsys.readouterr().err and json.loads(items.read_text())["items"]
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    assert main(["compress", str(contract), "--out", str(tmp_path / "afile" / "x.txt")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err


def test_a_malformed_hf_tokenizer_file_is_one_clear_error(contract, tmp_path, capsys):
    bad = tmp_path / "tokenizer.json"
    for text, reason in (("{}", "Model missing"), ("not json", "expected")):
        bad.write_text(text)
        for spec in (f"hf:{bad}", f"hf:{tmp_path}"):  # the file, or the folder holding it
            code = main(["compress", str(contract), "--tokenizer", spec])
            err = capsys.readouterr().err
            assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
            assert "is not a readable Hugging Face tokenizer.json" in err and reason in err


def test_json_mode_prints_the_record_warnings_on_stderr_and_over_budget_once(tmp_path, capsys):
    # QA: `compress --json` printed no record warning (plain mode did), and plain mode said over budget twice
    instr = tmp_path / "instr.txt"
    instr.write_text("Do it now. Do not stop.", encoding="utf-8")
    argv = ["compress", str(instr), "--layer", "instruction", "--budget", "2"]
    assert main(argv) == 0
    plain = capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    as_json = capsys.readouterr()
    record = json.loads(as_json.out)["record"]  # stdout is the JSON alone
    assert record["over_budget"] and record["warnings"]
    for err in (plain.err, as_json.err):
        assert err.splitlines() == [f"odcf compress: warning: {w}" for w in record["warnings"]]
        assert err.count("over budget") == 1


def test_a_bad_ontology_exits_2_in_every_command(contract, tmp_path, capsys):
    """`odcf ontology check` exits 2 on an ontology that does not validate; so does every command given it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("domain: x\nconcepts: [\n", encoding="utf-8")
    records = tmp_path / "in.jsonl"
    records.write_text('{"id": "1", "context": "Payment is due in 30 days."}\n', encoding="utf-8")
    items = tmp_path / "items.json"
    items.write_text('{"items": [{"id": "a", "kind": "text", "text": "Payment is due in 30 days."}]}', encoding="utf-8")
    for argv in (["ontology", "check", str(bad)], ["compress", str(contract), "-O", str(bad)],
                 ["analyze", str(contract), "-O", str(bad)], ["plan", str(bad)],
                 ["batch", str(records), str(tmp_path / "out.jsonl"), "-O", str(bad)],
                 ["handoff", str(items), "--role", "writer", "-O", str(bad)]):
        assert main(argv) == 2, argv
        assert f"{bad}:3:" in capsys.readouterr().err, argv


def test_without_role_or_budget_the_default_role_is_said_when_nothing_was_compressed(contract, tmp_path, capsys):
    # QA: a first run without --role/--budget used a 4000-token "default" role and nothing said why
    # the output was the whole input
    assert main(["compress", str(contract), "--no-timings"]) == 0
    captured = capsys.readouterr()
    assert "$250,000" in captured.out and "Coffee was served." in captured.out  # delivered whole
    assert captured.err.startswith("odcf compress: note: no --role or --budget: the `default` role's budget of "
                                   "4000 tokens was used and the input (")
    assert "fits it, so nothing was compressed" in captured.err
    # a role or a budget given: no note
    assert main(["compress", str(contract), "--budget", "4000", "--no-timings"]) == 0
    assert "note:" not in capsys.readouterr().err
    # a near miss of a role name gets a suggestion
    assert main(["compress", str(contract), "--role", "writr"]) != 0
    assert "unknown role 'writr' for domain 'general' (did you mean 'writer'? declared: none; shipped presets: " in capsys.readouterr().err


def test_compress_help_names_the_default_role(capsys):
    with pytest.raises(SystemExit):
        main(["compress", "--help"])
    assert "`default` role, 4000 tokens" in " ".join(capsys.readouterr().out.split())


def test_without_role_or_budget_the_note_says_what_dedup_did_to_an_input_that_fits(tmp_path, capsys):
    # QA1 finding 2: "fits it, so nothing was compressed" while dedup had merged a third of the text
    p = tmp_path / "notes.md"
    para = ("The insured stated that the water heater in the basement was installed in 2014 by a licensed plumber, "
            "that it was never serviced since then, and that the supply line burst on March 3, 2026 while nobody "
            "was at home, so the water ran for about six hours before the neighbour called.\n\n")
    p.write_text("# Notes\n\nThe roof was inspected on March 3, 2026.\n\n" + para * 3 + "Payment is due in 30 days.\n",
                 encoding="utf-8")
    assert main(["compress", str(p), "--json", "--no-timings"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)["record"]
    merged = sum(seg["status"] == "merged" for src in record["sources"] for seg in src["segments"])
    assert merged and record["tokens_out"] < record["tokens_in"]
    assert "nothing was compressed" not in captured.err
    assert (f"fits it, so nothing was cut for the budget, but {merged} segments were merged as duplicates; "
            f"{record['tokens_out']} tokens delivered with the source header; give --role or --budget") in captured.err


def test_without_role_or_budget_the_note_gives_the_rules_stage_its_own_figures(capsys):
    # QA s33 R2: "the rules stage removed 20 tokens (530 -> 528 tokens)" read as 530 - 20 = 528: the
    # stage took 530 to 510, and the delivered 528 hold the [source 1/1] line
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for extra, delivered in (([], "with the source header"), (["--no-annotate"], "")):
        assert main(["compress", str(root / "examples" / "msa_excerpt.md"), "-O",
                     str(root / "examples" / "my_contracts.yaml"), "--json", "--no-timings", *extra]) == 0
        captured = capsys.readouterr()
        record = json.loads(captured.out)["record"]
        rules = next(e for e in record["stages"] if e["stage"] == "rules")
        removed = rules["tokens_in"] - rules["tokens_out"]
        assert removed > 0
        said = (f"so nothing was cut for the budget, but the rules stage removed {removed} tokens "
                f"({rules['tokens_in']} -> {rules['tokens_out']}); {record['tokens_out']} tokens delivered"
                f"{' ' + delivered if delivered else ''}; give --role or --budget")
        assert said in " ".join(captured.err.split()), captured.err


def test_an_ascii_locale_gets_utf8_on_stdout_and_a_utf8_query_from_argv(tmp_path):
    # QA3 finding 3: under LC_ALL=C, `--out -` died with a UnicodeEncodeError on odcf's own " … ", and the
    # UTF-8 query "Renée" was refused as a "lone surrogate" (argv decoded as ASCII with surrogate escapes)
    import os
    import subprocess
    import sys
    from pathlib import Path

    import odcf

    doc = tmp_path / "thread.md"
    doc.write_text("# Thread\n\n" + "".join(
        f"Message {k}: the customer asked about order #W48{k:05d} and a refund of ${k}.00 for the café visit.\n\n"
        for k in range(1, 40)), encoding="utf-8")
    root = str(Path(odcf.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHON"))}
    env |= {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "PYTHONPATH": root}
    argv = [sys.executable, "-m", "odcf", "compress", str(doc), "-q", "what did Renée say about the café refund",
            "-b", "120", "--no-timings", "--json", "--out", "-"]
    run = subprocess.run(argv, env=env, capture_output=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    payload = json.loads(run.stdout.decode("utf-8"))
    assert payload["record"]["query"] == "what did Renée say about the café refund"
    assert "café" in payload["text"]  # not ASCII: written as UTF-8
    plain = subprocess.run(argv[:-3] + ["--out", "-"], env=env, capture_output=True, timeout=300, check=False)
    assert plain.returncode == 0 and plain.stdout.decode("utf-8").startswith(payload["text"])
    # bytes that are no UTF-8 are one clear line, naming the option
    bad = subprocess.run([os.fsencode(a) for a in argv[:6]] + [b"q\xff"], env=env, capture_output=True, timeout=300, check=False)
    assert bad.returncode == 2 and b"argument --query/-q: b'q\\xff' is not UTF-8 text (byte 0xff at byte 1)" in bad.stderr


def test_model_flag_and_an_ontology_model_path_relative_to_its_file(contract, tmp_path, capsys, monkeypatch):
    # QA: the CLI had no way to name your own model, and an ontology's relative model_path was read
    # against the current folder, so the same file worked or failed depending on where it ran
    import shutil
    from pathlib import Path

    import odcf

    tiny = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_token_classifier"
    shutil.copytree(tiny, tmp_path / "proj" / "models" / "mine")
    general = Path(odcf.__file__).parent / "data" / "ontologies" / "general.yaml"
    ont = tmp_path / "proj" / "ont.yaml"
    ont.write_text(general.read_text(encoding="utf-8")
                   + "\npipeline:\n  compress:\n    model_path: models/mine\n    threads: 1\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for argv, path in ((["-O", str(ont)], str(tmp_path / "proj" / "models/mine")),
                       (["--model", "../proj/models/mine"], "../proj/models/mine")):
        assert main(["compress", str(contract), "--budget", "40", "--json", "--no-timings", *argv]) == 0
        record = json.loads(capsys.readouterr().out)["record"]
        ev = next(e for e in record["stages"] if e["stage"] == "compress")["data"]
        assert ev["model_path"] == path and len(ev["model_sha256"]) == 64
    assert main(["compress", str(contract), "--model", "x", "--disable", "compress"]) != 0
    assert "--model sets the compress stage's model, and --disable compress switches it off" in capsys.readouterr().err
