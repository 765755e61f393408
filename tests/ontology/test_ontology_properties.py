"""Property tests: any YAML either loads or fails with located problems (never a crash), and
valid ontologies compile to the same plan however they are written."""
from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odcf.errors import OntologyError
from odcf.ontology.loader import loads_ontology
from odcf.ontology.schema import LAYERS
from odcf.plan.compiler import compile_plan

KEYS = ["odcf", "domain", "concepts", "name", "keywords", "protect", "anchors", "pattern", "roles",
        "budget", "required", "abbreviations", "state", "type", "relations", "from", "to", "pipeline",
        "connectives", "flags", "writer", "rerank", "x"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10_000), st.floats(allow_nan=False, width=32),
                    st.sampled_from(["", "default", "fact", "reasoning", "(", "[a-z]+", "IGNORECASE", "1"]),
                    st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=25)
documents = st.fixed_dictionaries(
    {"odcf": st.sampled_from([1, 1, 2, True, "1"]), "domain": st.sampled_from(["demo", "Bad Domain", 5])},
    optional={k: values for k in ("concepts", "protect", "roles", "abbreviations", "state", "relations", "pipeline",
                                  "task", "tokenizer", "x")},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_any_yaml_loads_or_fails_with_located_problems(doc):
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    try:
        plan = compile_plan(loads_ontology(text, source="p.yaml"))
    except OntologyError as exc:
        assert exc.problems
        n_lines = text.count("\n") + 1
        for problem in exc.problems:
            assert problem.file == "p.yaml"
            assert problem.line is not None and 1 <= problem.line <= n_lines, str(problem)
            assert problem.message
    else:
        assert plan.domain == "demo" and plan.concepts


names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8).filter(lambda s: s.strip("_"))
words = st.lists(st.text(alphabet="abcdefghijklmnop -", min_size=1, max_size=10).filter(lambda s: s.strip()),
                 max_size=4)
valid = st.fixed_dictionaries({
    "odcf": st.just(1),
    "domain": st.just("demo"),
    "concepts": st.lists(st.fixed_dictionaries({"name": names, "keywords": words}), min_size=1, max_size=4,
                         unique_by=lambda c: c["name"].casefold()),
    "roles": st.dictionaries(st.sampled_from(["writer", "planner", "auditor"]),
                             st.fixed_dictionaries({"budget": st.integers(1, 10_000),
                                                    "optional": st.lists(st.sampled_from(LAYERS), unique=True)}),
                             max_size=2),
})


@settings(max_examples=60, deadline=None)
@given(valid)
def test_layout_does_not_change_the_plan(doc):
    block = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
    flow = yaml.safe_dump(doc, sort_keys=True, default_flow_style=True)
    a = compile_plan(loads_ontology(block))
    b = compile_plan(loads_ontology(flow))
    assert a.hash == b.hash
    assert a.to_json() == b.to_json()
