"""Compiling an ontology into a plan: queries, protection, state schema, roles, determinism."""
from __future__ import annotations

import shutil
from pathlib import Path

import jsonschema
import pytest

from odcf.errors import PlanError
from odcf.ontology.loader import loads_ontology
from odcf.plan.compiler import compile_file, compile_plan
from odcf.plan.model import Plan
from odcf.plan.presets import ROLE_PRESETS
from odcf.plan.protection import DEFAULT_CONNECTIVES, EN_CONNECTIVES, ZH_CONNECTIVES, default_entity_labels

FIXTURES = Path(__file__).resolve().parents[1] / "ontology" / "fixtures"
DOC_EXAMPLE = FIXTURES / "documented_example.yaml"


def plan_of(text: str) -> Plan:
    return compile_plan(loads_ontology(text, source="t.yaml"))


BASE = "odcf: 1\ndomain: demo\nconcepts:\n  - name: refund\n"


# -- queries --------------------------------------------------------------------------------------
def test_one_query_per_concept_and_one_for_the_task():
    plan = compile_file(DOC_EXAMPLE)
    assert [q.name for q in plan.queries] == ["liability", "termination", "task"]
    liability = plan.queries[0]
    assert liability.text == (
        "liability: Limits and caps on liability; indemnities. "
        "Keywords: liability, indemnify, indemnification, cap, damages. "
        "Attributes: amount, cap, exclusions."
    )
    assert liability.terms == ("liability", "indemnify", "indemnification", "cap", "damages", "amount", "exclusions")
    termination = plan.queries[1]
    assert "notice period" in termination.terms and "effective date" in termination.terms
    task = plan.queries[2]
    assert task.text == "Find liability, termination and payment obligations and their exact terms."
    assert task.terms == ("liability", "termination", "payment", "obligations", "exact", "terms")


def test_no_task_query_without_a_goal():
    plan = plan_of(BASE)
    assert [q.name for q in plan.queries] == ["refund"] and plan.task_goal is None
    assert plan.queries[0].text == "refund." and plan.queries[0].terms == ("refund",)


# -- protection -----------------------------------------------------------------------------------
def test_protection_rules_from_the_documented_example():
    plan = compile_file(DOC_EXAMPLE)
    p = plan.protection
    assert p.terms == ("force majeure", "gross negligence")
    assert p.entities == ("DATE", "LAW", "MONEY", "ORG", "PERCENT", "PERSON")   # written PERSON, ORG, DATE, …
    assert p.connectives == DEFAULT_CONNECTIVES
    assert p.anchors[1].regex.search("a fee of $ 2,000,000 million").group() == "$ 2,000,000 million"


def test_anchor_flags_are_compiled():
    plan = plan_of(BASE + "protect:\n  anchors:\n    - {name: sec, pattern: 'section \\d+', flags: [IGNORECASE]}\n")
    anchor = plan.protection.anchors[0]
    assert anchor.regex.search("see SECTION 4").group() == "SECTION 4"
    assert anchor.flags != 0


def test_default_connectives_hold_english_and_chinese():
    assert DEFAULT_CONNECTIVES[: len(EN_CONNECTIVES)] == EN_CONNECTIVES
    for word in ("not", "unless", "except", "no later than", "at most", "不", "除非", "不得", "不超过", "至少"):
        assert word in DEFAULT_CONNECTIVES
    assert len(set(DEFAULT_CONNECTIVES)) == len(DEFAULT_CONNECTIVES)
    assert set(ZH_CONNECTIVES) <= set(DEFAULT_CONNECTIVES)


def test_explicit_connectives_replace_or_extend_the_default():
    only = plan_of(BASE + "protect:\n  connectives: [only if, ' save   as ']\n")
    assert only.protection.connectives == ("only if", "save as")
    extended = plan_of(BASE + "protect:\n  connectives: [default, save as]\n")
    assert extended.protection.connectives == DEFAULT_CONNECTIVES + ("save as",)


def test_entity_labels_default_when_absent_and_empty_when_empty():
    assert plan_of(BASE).protection.entities == default_entity_labels
    assert plan_of(BASE + "protect:\n  entities: []\n").protection.entities == ()


def test_entity_labels_are_a_set_their_order_and_repeats_do_not_change_the_plan():
    # QA: the same labels in another order (uw_eorder.yaml) gave another plan hash
    a = plan_of(BASE + "protect:\n  entities: [ORG, DATE, MONEY, PERCENT]\n")
    b = plan_of(BASE + "protect:\n  entities: [PERCENT, ORG, DATE, MONEY, ORG]\n")
    assert a.protection.entities == b.protection.entities == ("DATE", "MONEY", "ORG", "PERCENT")
    assert a.hash == b.hash
    written = plan_of(BASE + "protect:\n  entities: [" + ", ".join(reversed(default_entity_labels)) + "]\n")
    assert written.hash == plan_of(BASE).hash   # the default labels written out are the default


# -- state and abbreviations -----------------------------------------------------------------------------
def test_state_schema_is_a_closed_draft_2020_12_object():
    plan = compile_file(DOC_EXAMPLE)
    schema = dict(Plan.from_dict(plan.to_dict()).to_dict()["state_schema"])
    assert schema == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "task_progress": {"type": "string", "pattern": r"^step_\d+_of_\d+$"},
            "user_preferences": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    }
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"task_progress": "step_2_of_5", "user_preferences": ["short"]})
    assert not validator.is_valid({"task_progress": "halfway"})
    assert not validator.is_valid({"extra": 1})


def test_no_state_declared_means_no_schema():
    assert dict(plan_of(BASE).state_schema) == {}


def test_abbreviations_are_carried_over():
    assert dict(compile_file(DOC_EXAMPLE).abbreviations) == {"MOD": "moderate", "5Y": "5 years"}


# -- roles ------------------------------------------------------------------------------------------
def test_presets_are_present_with_their_budgets():
    plan = plan_of(BASE)
    budgets = {name: plan.role(name).budget for name in ROLE_PRESETS}
    assert budgets == {"researcher": 6000, "planner": 4000, "writer": 8000, "reviewer": 4000,
                       "executor": 4000, "fixer": 6000}
    assert all("reasoning" in plan.role(name).forbidden for name in ROLE_PRESETS)
    with pytest.raises(PlanError, match="unknown role 'nobody'"):
        plan.role("nobody")


def test_ontology_roles_override_presets_field_by_field():
    plan = plan_of(BASE + "roles:\n  writer:\n    budget: 1200\n")
    writer = plan.role("writer")
    assert writer.budget == 1200
    assert (writer.required, writer.optional, writer.forbidden) == (
        ROLE_PRESETS["writer"].required, ROLE_PRESETS["writer"].optional, ("reasoning",))


def test_allowing_a_forbidden_layer_takes_it_out_of_forbidden():
    plan = plan_of(BASE + "roles:\n  reviewer:\n    optional: [reasoning, state]\n")
    reviewer = plan.role("reviewer")
    assert reviewer.optional == ("reasoning", "state")
    assert reviewer.forbidden == ()
    assert reviewer.required == ("instruction", "fact")
    assert reviewer.budget == ROLE_PRESETS["reviewer"].budget


def test_new_roles_extend_the_presets_with_unit_and_categories():
    plan = plan_of(BASE + "roles:\n  summarizer:\n    budget: 700\n    unit: bytes\n    categories: [decisions]\n"
                          "    required: [instruction, history]\n")
    role = plan.role("summarizer")
    assert (role.budget, role.unit, role.categories, role.required) == (700, "bytes", ("decisions",),
                                                                         ("instruction", "history"))
    assert "reasoning" in role.forbidden and "history" not in role.optional
    assert set(ROLE_PRESETS) < set(plan.roles)


def test_documented_roles_are_exactly_as_written():
    plan = compile_file(DOC_EXAMPLE)
    planner = plan.role("planner")
    assert (planner.budget, planner.required, planner.optional, planner.forbidden) == (
        4000, ("instruction", "state"), ("fact", "history"), ("reasoning",))


def test_pipeline_and_tokenizer_pass_through():
    plan = plan_of(BASE + "tokenizer: bytes\npipeline:\n  rerank: {enabled: true, threads: 2}\n  fold: false\n")
    assert plan.tokenizer == "bytes"
    assert plan.stage_option("rerank", "threads") == 2
    assert plan.stage_option("fold", "enabled") is False
    assert plan_of(BASE).tokenizer == "o200k_base"


# -- determinism and serialization -------------------------------------------------------------------------
def test_same_yaml_same_hash_wherever_the_file_lives(tmp_path: Path):
    copy = tmp_path / "elsewhere.yaml"
    shutil.copy(DOC_EXAMPLE, copy)
    a, b = compile_file(DOC_EXAMPLE), compile_file(copy)
    assert a.hash == b.hash and a.to_json() == b.to_json()
    assert a.source_file == str(DOC_EXAMPLE) and b.source_file == str(copy)


def test_comments_and_layout_do_not_change_the_hash():
    flow = BASE + "roles: {writer: {budget: 100}}\n"
    block = "# a comment\n" + BASE + "roles:\n  writer:\n    budget: 100   # tokens\n"
    assert plan_of(flow).hash == plan_of(block).hash


def test_any_change_in_meaning_changes_the_hash():
    base = plan_of(BASE + "protect:\n  terms: [force majeure]\n")
    assert base.hash != plan_of(BASE + "protect:\n  terms: [force majeure, gross negligence]\n").hash
    assert base.hash != plan_of(BASE.replace("refund", "refunds") + "protect:\n  terms: [force majeure]\n").hash


def test_plan_round_trips_through_its_dict():
    plan = compile_file("tender_rfp")
    again = Plan.from_dict(plan.to_dict())
    assert again.hash == plan.hash and again == plan


def test_compile_plan_is_pure_and_repeatable():
    from odcf.ontology.loader import load_ontology

    ont = load_ontology("financial_risk")
    assert compile_plan(ont).hash == compile_plan(ont).hash
    assert compile_plan(ont).source_file is None


def test_documented_example_runs_through_the_pipeline_unchanged():
    from odcf.compressor import Compressor

    text = ("Under Section 4.2 liability is capped at $2,000,000, except for gross negligence. "
            "Either party may terminate with 30 days notice. The weather was nice that day.")
    # the model-free stages: this checks the ontology contract, not the models
    light = {"entities": False, "rerank": False, "dedup": False, "compress": False, "verify": False}
    result = Compressor.from_ontology(str(DOC_EXAMPLE), stages=light).compress(text, role="writer")
    for kept in ("Section 4.2", "$2,000,000", "gross negligence"):
        assert kept in result.text
    assert result.record["domain"] == "legal_contract_review"
    assert result.record["plan_hash"] == compile_file(DOC_EXAMPLE).hash


def test_role_categories_inherit_from_the_preset_unless_set():
    presets = plan_of(BASE)
    inherited = plan_of(BASE + "roles:\n  executor: {budget: 100}\n").role("executor")
    assert inherited.categories == presets.role("executor").categories
    cleared = plan_of(BASE + "roles:\n  executor: {categories: []}\n").role("executor")
    assert cleared.categories == () and cleared.budget == presets.role("executor").budget
    own = plan_of(BASE + "roles:\n  executor: {categories: [refund_policy]}\n").role("executor")
    assert own.categories == ("refund_policy",)
