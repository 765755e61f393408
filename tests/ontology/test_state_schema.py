"""The ``state:`` JSON Schemas: what `odcf ontology check` refuses that the meta-schema lets
through, and what the compiled plan does with a ``$ref``."""
from __future__ import annotations

import pytest

from odcf.errors import OntologyError, PlanError
from odcf.ontology.loader import loads_ontology
from odcf.plan.compiler import compile_plan
from odcf.plan.model import schema_problems

MINIMAL = "odcf: 1\ndomain: demo\nconcepts:\n  - name: refund\n"


def problems_of(text: str) -> list[str]:
    with pytest.raises(OntologyError) as info:
        compile_plan(loads_ontology(MINIMAL + text, source="t.yaml"))
    return [str(p) for p in info.value.problems]


# -- $ref -----------------------------------------------------------------------------------------
def test_a_ref_within_the_property_schema_resolves_in_the_plan():
    # QA: '#/$defs/dec' passed the check, then every compress/handoff of a state failed with a
    # traceback (PointerToNowhere): the property was embedded under the generated state schema
    plan = compile_plan(loads_ontology(MINIMAL + (
        "state:\n"
        "  decision:\n    $ref: '#/$defs/dec'\n    $defs:\n      dec: {type: string, enum: [accept, decline]}\n"
        "  tree: {type: object, properties: {kids: {type: array, items: {$ref: '#'}}}}\n"
        "  plain: {type: integer}\n")))
    good = {"decision": "accept", "tree": {"kids": [{"kids": []}]}, "plain": 1}
    assert schema_problems(good, plan.state_schema) == []
    assert schema_problems({"decision": "maybe", "tree": {"kids": [{"kids": 5}]}}, plan.state_schema) == [
        "/decision: 'maybe' is not one of ['accept', 'decline']",
        "/tree/kids/0/kids: 5 is not of type 'array'",
    ]
    # only a schema holding a $ref gets an $id: other plans (and their hashes) stay as they were
    assert plan.state_schema["properties"]["plain"] == {"type": "integer"}
    assert plan.state_schema["properties"]["decision"]["$id"] == "urn:odcf:state:decision"


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param("  decision: {$ref: '#/nowhere'}\n",
                     "t.yaml:6: state.decision.$ref: $ref '#/nowhere' does not resolve (nothing at '/nowhere'); "
                     "a $ref resolves within this property's own schema, e.g. '#/$defs/NAME'", id="pointer-to-nowhere"),
        pytest.param("  decision: {$ref: 'https://example.com/s.json'}\n",
                     "t.yaml:6: state.decision.$ref: $ref 'https://example.com/s.json' points outside this schema: "
                     "a state schema fetches no documents", id="external"),
        pytest.param("  decision: {$ref: '#/properties/decision'}\n",
                     "t.yaml:6: state.decision.$ref: $ref '#/properties/decision' does not resolve", id="self-by-name"),
        pytest.param("  decision: {type: string}\n  other: {$ref: '#/properties/decision'}\n",
                     "t.yaml:7: state.other.$ref: $ref '#/properties/decision' does not resolve (nothing at "
                     "'/properties/decision'); a $ref resolves within this property's own schema, not the whole "
                     "state object: put the shared schema under '$defs'", id="sibling"),
        pytest.param("  decision: {$ref: '#'}\n",
                     "t.yaml:6: state.decision.$ref: $ref '#' leads back to itself without going into the value",
                     id="self-loop"),
        pytest.param("  d:\n    $ref: '#/$defs/a'\n    $defs:\n      a: {$ref: '#/$defs/b'}\n"
                     "      b:\n        allOf: [{$ref: '#/$defs/a'}]\n",
                     "t.yaml:11: state.d.$defs.b.allOf[0].$ref: $ref '#/$defs/a' leads back to itself", id="loop"),
        pytest.param("  d: {$ref: '#nope'}\n",
                     "t.yaml:6: state.d.$ref: $ref '#nope' does not resolve (no '$anchor' named 'nope')", id="anchor"),
    ],
)
def test_a_ref_that_does_not_resolve_or_loops_is_refused(state: str, expected: str):
    got = problems_of("state:\n" + state)
    assert len(got) == 1 and got[0].startswith(expected), got


def test_a_plan_whose_state_schema_ref_does_not_resolve_raises_a_plan_error():
    # a plan read from JSON is not checked as an ontology is: no traceback from jsonschema either
    with pytest.raises(PlanError, match=r"state schema cannot be used: \$ref '/nowhere' does not resolve"):
        schema_problems({"d": 1}, {"properties": {"d": {"$ref": "#/nowhere"}}})
    with pytest.raises(PlanError, match="state schema cannot be used: a \\$ref leads back to itself"):
        schema_problems({"d": 1}, {"properties": {"d": {"$ref": "#/properties/d"}}})


# -- keywords ---------------------------------------------------------------------------------------
def test_a_typo_in_a_state_schema_is_an_unknown_keyword_with_a_suggestion():
    # QA: patern, enun, minimun and item passed the check (the meta-schema takes any key) and were
    # ignored: every value validated
    got = problems_of(
        "state:\n"
        "  task_progress: {type: string, patern: '^step_\\d+_of_\\d+$'}\n"
        "  decision: {type: string, enun: [accept, decline]}\n"
        "  premium: {type: number, minimun: 0}\n"
        "  tags: {type: array, item: {type: string}}\n"
        "  nested: {type: object, properties: {pattern: {type: string, maxlength: 3}}, $defs: {x: {Type: string}}}\n")
    assert got == [
        "t.yaml:6: state.task_progress.patern: unknown JSON Schema keyword 'patern' (did you mean 'pattern'?): "
        "it would be ignored; a custom annotation starts with 'x-'",
        "t.yaml:7: state.decision.enun: unknown JSON Schema keyword 'enun' (did you mean 'enum'?): "
        "it would be ignored; a custom annotation starts with 'x-'",
        "t.yaml:8: state.premium.minimun: unknown JSON Schema keyword 'minimun' (did you mean 'minimum'?): "
        "it would be ignored; a custom annotation starts with 'x-'",
        "t.yaml:9: state.tags.item: unknown JSON Schema keyword 'item' (did you mean 'items'?): "
        "it would be ignored; a custom annotation starts with 'x-'",
        "t.yaml:10: state.nested.$defs.x.Type: unknown JSON Schema keyword 'Type' (did you mean 'type'?): "
        "it would be ignored; a custom annotation starts with 'x-'",
        "t.yaml:10: state.nested.properties.pattern.maxlength: unknown JSON Schema keyword 'maxlength' "
        "(did you mean 'maxLength'?): it would be ignored; a custom annotation starts with 'x-'",
    ]


def test_annotations_custom_x_keys_and_data_pass():
    plan = compile_plan(loads_ontology(MINIMAL + (
        "state:\n"
        "  decision:\n"
        "    title: Decision\n    description: what was decided\n    $comment: codes of the desk\n"
        "    x-owner: underwriting\n    deprecated: false\n    examples: [{patern: not a keyword here}]\n"
        "    default: accept\n    enum: [accept, decline, {enun: 1}]\n"
        "    $schema: 'https://json-schema.org/draft/2020-12/schema'\n"
        "  when: {type: string, format: date, contentMediaType: text/plain, readOnly: true}\n")))
    assert plan.state_schema["properties"]["decision"]["x-owner"] == "underwriting"


def test_keywords_of_older_drafts_and_unsupported_core_keywords_are_refused():
    got = problems_of("state:\n  d: {definitions: {}, dependencies: {}, $id: x, $dynamicRef: '#a', "
                      "$schema: 'http://json-schema.org/draft-07/schema#'}\n")
    assert got == [
        "t.yaml:6: state.d.$dynamicRef: '$dynamicRef' is not supported in a state schema: use '$ref'",
        "t.yaml:6: state.d.$id: '$id' is not supported in a state schema: each state property's schema is a "
        "document of its own, identified by odcf; refer to its parts with '#/$defs/NAME'",
        "t.yaml:6: state.d.$schema: the state schema is JSON Schema draft 2020-12 "
        "('https://json-schema.org/draft/2020-12/schema'); remove '$schema'",
        "t.yaml:6: state.d.definitions: 'definitions' is a keyword of an older draft, which draft 2020-12 "
        "ignores: use '$defs'",
        "t.yaml:6: state.d.dependencies: 'dependencies' is a keyword of an older draft, which draft 2020-12 "
        "ignores: use 'dependentRequired' (lists of names) or 'dependentSchemas' (schemas)",
    ]


# -- patterns ---------------------------------------------------------------------------------------
def test_an_ecma_pattern_is_refused_saying_python_re_syntax_is_expected():
    # QA: "'^(?<year>\\d{4})-\\d{2}$' is not a 'regex'" did not say which syntax was expected
    got = problems_of(
        "state:\n"
        "  d1: {type: string, pattern: '^(?<year>\\d{4})-\\d{2}$'}\n"
        "  d2: {type: string, pattern: '^\\p{Lu}+$'}\n"
        "  d3: {type: object, patternProperties: {'^(?<k>x)$': {type: string}, '^ok$': {}}}\n"
        "  d4: {type: string, pattern: '(ab'}\n"
        "protect:\n  anchors:\n    - {name: y, pattern: '(?<year>\\d{4})'}\n")
    assert got == [
        "t.yaml:6: state.d1.pattern: not a Python `re` regular expression (unknown extension ?<y at position 2); "
        "patterns use Python `re` syntax, not ECMA-262 (JavaScript): write a named group as (?P<year>…), not "
        "(?<year>…)",
        "t.yaml:7: state.d2.pattern: not a Python `re` regular expression (bad escape \\p at position 1); patterns "
        "use Python `re` syntax, not ECMA-262 (JavaScript): Python's re has no \\p{…} classes: list the characters, "
        "e.g. [A-Z] for \\p{Lu}",
        "t.yaml:8: state.d3.patternProperties['^(?<k>x)$']: not a Python `re` regular expression (unknown extension "
        "?<k at position 2); patterns use Python `re` syntax, not ECMA-262 (JavaScript): write a named group as "
        "(?P<k>…), not (?<k>…)",
        "t.yaml:9: state.d4.pattern: not a Python `re` regular expression (missing ), unterminated subpattern at "
        "position 0); state schema patterns use Python `re` syntax",
        "t.yaml:12: protect.anchors[0].pattern: invalid regex: unknown extension ?<y at position 1; patterns use "
        "Python `re` syntax, not ECMA-262 (JavaScript): write a named group as (?P<year>…), not (?<year>…)",
    ]
    # a lookbehind is Python syntax too
    compile_plan(loads_ontology(MINIMAL + "state:\n  d: {type: string, pattern: '(?<=a)b(?<!c)'}\n"))


# -- QA of stop 21 ----------------------------------------------------------------------------------
def test_a_whole_json_schema_under_state_is_one_clear_problem():
    # QA: "state: {type: object, properties: …, required: […]}" got three messages that contradicted
    # each other ("'object' is not of type 'object', 'boolean'"), and additionalProperties passed as a property
    got = problems_of("state:\n  type: object\n  properties:\n    po_number: {type: string}\n"
                      "  required: [po_number]\n  additionalProperties: false\n")
    assert len(got) == 1 and got[0].startswith("t.yaml:5: state: takes the properties of the task state directly"), got
    # a property that happens to be called "type" is still a property
    plan = compile_plan(loads_ontology(MINIMAL + "state:\n  type: {type: string}\n  id: {type: string}\n", source="t.yaml"))
    assert schema_problems({"type": "x", "id": "y"}, plan.state_schema) == []


def test_a_pattern_s_dollar_is_the_end_of_the_value_as_in_json_schema():
    # QA: '^INC-\d{4,6}$' accepted "INC-20417\n" (Python's $ matches before a final line break)
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": r"^INC-\d{4,6}$"}}}
    assert schema_problems({"id": "INC-20417"}, schema) == []
    assert schema_problems({"id": "INC-20417\n"}, schema) == ["/id: 'INC-20417\\n' does not match '^INC-\\d{4,6}$'"]
    # an escaped dollar, one in a class, and multi-line mode keep their meaning
    money = {"properties": {"m": {"type": "string", "pattern": r"^[$]\d+ \$$"}}}
    assert schema_problems({"m": "$5 $"}, money) == [] and schema_problems({"m": "$5 $\n"}, money) != []
    assert schema_problems({"m": "a\nb"}, {"properties": {"m": {"pattern": "(?m)^a$"}}}) == []


# -- QA s32 -------------------------------------------------------------------------------------------
def test_a_state_warning_quotes_the_pattern_as_written_in_single_quotes():
    # QA s32: `pattern: '^CLM-\d{4}-\d{6}$'` was quoted as '^CLM-\\d{4}-\\d{6}$' in the warnings of compress and
    # handoff, which copied back into single-quoted YAML matches a backslash and a d
    claim = {"properties": {"claim_number": {"type": "string", "pattern": r"^CLM-\d{4}-\d{6}$"}}}
    assert schema_problems({"claim_number": "CLM-24-4417"}, claim) == [
        r"/claim_number: 'CLM-24-4417' does not match '^CLM-\d{4}-\d{6}$'"]
    # jsonschema's own message for a key no patternProperties regex matches lists them as written too
    tags = {"properties": {"tags": {"type": "object", "patternProperties": {r"^X-\d+$": {}, "^it's$": {}},
                                    "additionalProperties": False}}}
    assert schema_problems({"tags": {"X-1": 1, "Y": 2}}, tags) == [
        r"/tags: 'Y' does not match any of the regexes: '^X-\d+$', '^it''s$'"]
