"""`odcf ontology check|list` and `odcf plan`: output and exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from odcf.cli.main import main
from odcf.plan.compiler import compile_file

FIXTURES = Path(__file__).resolve().parents[1] / "ontology" / "fixtures"
GOOD = FIXTURES / "documented_example.yaml"
BAD = FIXTURES / "bad_many.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_valid_files_exit_0(capsys):
    code, out, err = run(capsys, "ontology", "check", str(GOOD), "medical_records")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        f"ok {GOOD} (legal_contract_review, 2 concepts, 2 anchors)",
        "ok medical_records (medical_records, 6 concepts, 8 anchors)",
    ]


def test_check_bad_file_exit_2_with_every_problem(capsys):
    code, out, err = run(capsys, "ontology", "check", str(BAD))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 12
    assert lines[0] == f"{BAD}:3: domain: 'Legal-Review' is not a valid domain: use lowercase letters, digits and _ ([a-z0-9_]+)"
    assert lines[-1] == f"{BAD}:33: roles.writer.budget: budget must be a positive integer, got boolean true"
    assert all(line.startswith(f"{BAD}:") for line in lines)


def test_check_goes_on_after_a_bad_file(capsys, tmp_path):
    missing = tmp_path / "missing.yaml"
    code, out, err = run(capsys, "ontology", "check", str(BAD), str(missing), str(GOOD))
    assert code == 2
    assert out.startswith(f"ok {GOOD}")
    assert f"{missing}: no such ontology file" in err


def test_check_reports_compile_time_problems(capsys, tmp_path):
    f = tmp_path / "roles.yaml"
    f.write_text("odcf: 1\ndomain: d\nconcepts: [{name: a}]\nroles:\n  auditor: {required: [instruction]}\n",
                 encoding="utf-8")
    code, _, err = run(capsys, "ontology", "check", str(f))
    assert code == 2
    assert err.startswith(f"{f}:5: roles.auditor.budget: required key 'budget' is missing")


def test_list_shows_bundled_names_and_descriptions(capsys):
    code, out, _ = run(capsys, "ontology", "list")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()}
    for name in ("general", "legal_contract", "tender_rfp", "customer_service", "financial_risk",
                 "medical_records", "zh_regulation", "agent_ops"):
        assert name in rows and len(rows[name].split()) > 1


def test_ontology_without_action_is_a_usage_error(capsys):
    code, _, err = run(capsys, "ontology")
    assert code == 2 and "check" in err


def test_plan_prints_json_with_hash_and_version(capsys):
    code, out, _ = run(capsys, "plan", str(GOOD))
    assert code == 0
    doc = json.loads(out)
    plan = compile_file(GOOD)
    assert doc["hash"] == plan.hash and doc["version"] == plan.version
    assert {k: v for k, v in doc.items() if k not in ("hash", "version", "role_origin")} == json.loads(plan.to_json())


def test_plan_prints_yaml(capsys):
    code, out, _ = run(capsys, "plan", "zh_regulation", "--format", "yaml")
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["domain"] == "zh_regulation" and doc["language"] == "zh"
    assert "适用范围" in out


@pytest.mark.parametrize("name", ["agent_ops", "customer_service", "financial_risk", "general", "legal_contract",
                                  "medical_records", "tender_rfp", "zh_regulation"])
def test_every_bundled_plan_prints_as_yaml_and_as_json_alike(capsys, name):
    # QA: anchors with a `flags:` key (legal_contract, medical_records) crashed the YAML dump with
    # "cannot represent an object: re.IGNORECASE"
    code, out, err = run(capsys, "plan", name, "--format", "yaml")
    assert code == 0, err
    as_yaml = yaml.safe_load(out)
    code, out, _ = run(capsys, "plan", name)
    assert code == 0 and as_yaml == json.loads(out)


def test_plan_of_a_bad_file_exits_2(capsys):
    code, out, err = run(capsys, "plan", str(BAD))
    assert code == 2 and out == "" and len(err.splitlines()) == 12


def test_plan_of_an_unknown_name_is_one_error_line(capsys):
    code, out, err = run(capsys, "plan", "no_such_thing")
    assert code == 2 and out == ""  # as for any ontology that does not load
    assert err.startswith("odcf plan: error: no_such_thing: no such ontology file")


def test_check_names_every_stage_option_no_stage_takes_with_its_line(capsys, tmp_path):
    bad = tmp_path / "pipe.yaml"
    bad.write_text(
        "odcf: 1\ndomain: pipe\nconcepts:\n  - name: a\npipeline:\n"
        "  compress: {cost_exponent: high, bogus_option: 1}\n"
        "  rerank:\n    enabled: false\n    modle: x\n",
        encoding="utf-8")
    assert main(["ontology", "check", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert f"{bad}:6: pipeline.compress.cost_exponent: expected a number, got str 'high'" in err
    assert any(line.startswith(f"{bad}:6: pipeline.compress.bogus_option: unknown option 'bogus_option'") for line in err)
    assert any(line.startswith(f"{bad}:9: pipeline.rerank.modle: unknown option 'modle'") for line in err)
    # and a run refuses the plan with all of them in one error
    doc = tmp_path / "d.txt"
    doc.write_text("Liability is capped at 5%.\n", encoding="utf-8")
    assert main(["compress", str(doc), "-O", str(bad)]) != 0
    msg = capsys.readouterr().err
    assert "cost_exponent" in msg and "bogus_option" in msg and "modle" in msg


def test_a_missing_role_budget_is_reported_with_the_other_problems_at_once(capsys, tmp_path):
    f = tmp_path / "both.yaml"
    f.write_text("odcf: 1\ndomain: d\nlanguage: fr\nconcepts: [{name: a}]\nroles:\n"
                 "  custom: {required: [instruction, fact]}\n  writer: {budget: 0}\n", encoding="utf-8")
    code, _, err = run(capsys, "ontology", "check", str(f))
    assert code == 2
    assert err.splitlines() == [
        f"{f}:3: language: unknown language 'fr'; use one of en, zh, auto",
        f"{f}:6: roles.custom.budget: required key 'budget' is missing: 'custom' is not a preset role "
        "(presets: researcher, planner, writer, reviewer, executor, fixer)",
        f"{f}:7: roles.writer.budget: budget must be a positive integer, got 0",
    ]


def test_the_loaders_preset_role_names_are_the_presets():
    from odcf.ontology.schema import PRESET_ROLES
    from odcf.plan.presets import ROLE_PRESETS

    assert set(PRESET_ROLES) == set(ROLE_PRESETS) | {"default"}


def test_a_state_ref_that_does_not_resolve_stops_check_compress_and_handoff_without_a_traceback(capsys, tmp_path):
    # QA: the check passed, then compress and handoff printed a jsonschema traceback (PointerToNowhere)
    ont = tmp_path / "ref.yaml"
    ont.write_text("odcf: 1\ndomain: t\nconcepts: [{name: a}]\nstate:\n  decision: {$ref: '#/nowhere'}\n",
                   encoding="utf-8")
    expected = f"{ont}:5: state.decision.$ref: $ref '#/nowhere' does not resolve"
    code, _, err = run(capsys, "ontology", "check", str(ont))
    assert code == 2 and err.startswith(expected)
    state = tmp_path / "st.json"
    state.write_text('{"decision": "x"}', encoding="utf-8")
    code, _, err = run(capsys, "compress", str(state), "--layer", "state", "-O", str(ont))
    assert code != 0 and expected in err and "Traceback" not in err
    items = tmp_path / "ho.json"
    items.write_text('{"instruction": "x", "state": {"decision": "x"}, "items": [], "messages": []}', encoding="utf-8")
    code, _, err = run(capsys, "handoff", str(items), "--role", "executor", "-O", str(ont))
    assert code != 0 and expected in err and "Traceback" not in err


def test_stage_options_are_problems_of_the_file_for_check_plan_and_compress_alike(capsys, tmp_path):
    # QA: they were reported only by `ontology check`, only once the other problems were fixed;
    # `odcf plan` exited 0 and compress said "bad stage option(s): …" without FILE:LINE
    f = tmp_path / "pipe_both.yaml"
    f.write_text("odcf: 1\ndomain: t\nconcepts: [{name: deductible}]\nroles:\n  writer: {budget: 0}\n"
                 "pipeline:\n  compress: {rate: high, tresh: 1}\n", encoding="utf-8")
    expected = [
        f"{f}:5: roles.writer.budget: budget must be a positive integer, got 0",
        f"{f}:7: pipeline.compress.rate: expected a number or null, got str 'high'",
        f"{f}:7: pipeline.compress.tresh: unknown option 'tresh' (did you mean 'threshold'?); TokenCompressor takes: ",
    ]
    for argv in (("ontology", "check", str(f)), ("plan", str(f))):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "", argv
        lines = err.splitlines()
        assert lines[:2] == expected[:2] and lines[2].startswith(expected[2]) and len(lines) == 3, argv
    doc = tmp_path / "d.txt"
    doc.write_text("The deductible is $500.\n", encoding="utf-8")
    code, _, err = run(capsys, "compress", str(doc), "-O", str(f))
    assert code != 0 and all(e in err for e in expected) and "bad stage option" not in err


def test_plan_and_errors_tell_declared_roles_from_shipped_presets(capsys, tmp_path):
    # QA s28/qa1 #5: an insurance ontology declaring triage, adjuster, reviewer silently got researcher,
    # planner, writer, executor and fixer too; `-r fixer` ran on a 6000-token budget without a word
    ont = tmp_path / "claims.yaml"
    ont.write_text("odcf: 1\ndomain: claims\ndescription: Insurance claims.\n"
                   "concepts:\n  - {name: payment, keywords: [payable, deductible]}\nroles:\n"
                   "  triage: {budget: 300}\n  adjuster: {budget: 1200}\n  reviewer: {budget: 3000}\n",
                   encoding="utf-8")
    doc = tmp_path / "claim.txt"
    doc.write_text("Claim CLM-1 is payable: $1,000 after the $500 deductible.\n", encoding="utf-8")
    code, out, _ = run(capsys, "plan", str(ont))
    assert code == 0
    assert json.loads(out)["role_origin"] == {
        "triage": "ontology", "adjuster": "ontology", "reviewer": "ontology", "researcher": "preset",
        "planner": "preset", "writer": "preset", "executor": "preset", "fixer": "preset"}
    code, _, err = run(capsys, "compress", str(doc), "-O", str(ont), "-r", "triag")
    assert code != 0
    assert ("unknown role 'triag' for domain 'claims' (did you mean 'triage'? declared: triage, adjuster, reviewer; "
            "shipped presets: researcher, planner, writer, executor, fixer)") in err
    code, _, err = run(capsys, "compress", str(doc), "-O", str(ont), "-r", "fixer", "--no-timings")
    assert code == 0
    assert ("odcf compress: note: role 'fixer' is not declared by ontology 'claims' (declared: triage, adjuster, "
            "reviewer): it is odcf's shipped preset, budget 6000 tokens (o200k_base)") in err
    # QA s28/qa3 #13: with --budget the note stated the preset's 6000 tokens while the run used 40
    code, _, err = run(capsys, "compress", str(doc), "-O", str(ont), "-r", "fixer", "--budget", "40", "--no-timings")
    assert code == 0
    assert ("odcf compress: note: role 'fixer' is not declared by ontology 'claims' (declared: triage, adjuster, "
            "reviewer): it is odcf's shipped preset, this run's budget 40 from --budget, not the preset's 6000") in err
    code, _, err = run(capsys, "compress", str(doc), "-O", str(ont), "-r", "reviewer", "--no-timings")
    assert code == 0 and "note:" not in err


def test_check_warns_of_a_role_budget_no_model_could_take_and_still_passes(tmp_path, capsys):
    # QA1 finding 8: a 50,000,000-token role budget was taken without a word
    text = GOOD.read_text(encoding="utf-8")
    huge = tmp_path / "huge.yaml"
    huge.write_text(text.replace("budget: 4000 ", "budget: 50000000 "), encoding="utf-8")
    line = next(i for i, ln in enumerate(huge.read_text(encoding="utf-8").splitlines(), 1) if "50000000" in ln)
    code, out, err = run(capsys, "ontology", "check", str(huge))
    assert code == 0 and out.startswith(f"ok {huge} (")
    assert err.splitlines() == [(f"{huge}:{line}: roles.planner.budget: warning: 50000000 tokens is more than any "
                                 "model's context window (odcf warns above 2000000 tokens); a slip of a few zeros?")]
    huge.write_text(text.replace("budget: 4000 ", "budget: 2000000 "), encoding="utf-8")
    assert run(capsys, "ontology", "check", str(huge))[::2] == (0, "")  # at the limit: no warning
